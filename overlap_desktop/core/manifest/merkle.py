"""RFC 6962 Merkle tree hashing (SHA-256), used to bind a manifest together.

``leaf = SHA-256(0x00 || data)``, ``node = SHA-256(0x01 || left || right)``; a tree of
``n`` leaves splits at the largest power of two below ``n``. An odd node is never
duplicated (duplication lets ``a,b,c`` and ``a,b,c,c`` share a root, CVE-2012-2459).
Roots match the Certificate Transparency reference vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

__all__ = [
    "EMPTY_ROOT",
    "inclusion_proof",
    "leaf_hash",
    "merkle_root",
    "node_hash",
    "root_from_leaf_hashes",
    "verify_inclusion",
]

#: MTH of the empty tree: SHA-256 of nothing.
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes | bytearray | memoryview) -> bytes:
    """Return the RFC 6962 leaf hash ``SHA-256(0x00 || data)``."""
    h = hashlib.sha256(b"\x00")
    h.update(data)
    return h.digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Return the RFC 6962 interior node hash ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """Largest power of two strictly below ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def root_from_leaf_hashes(hashes: Sequence[bytes]) -> bytes:
    """Return the Merkle Tree Hash of already-hashed leaves.

    Iterative bottom-up form: pairing adjacent nodes level by level and carrying an odd
    last node up unchanged gives the same tree as RFC 6962's recursive split (the left
    subtree is always a perfect tree of the largest power of two), without recursion
    depth or slicing costs on millions of leaves.

    Args:
        hashes: Leaf hashes (32 bytes each), in leaf order.

    Returns:
        The 32-byte root (``EMPTY_ROOT`` for no leaves).
    """
    level = list(hashes)
    if not level:
        return EMPTY_ROOT
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])  # promoted, never duplicated
        level = nxt
    return level[0]


def merkle_root(leaves: Iterable[bytes | bytearray | memoryview]) -> bytes:
    """Return the Merkle Tree Hash of raw leaf data (each leaf is hashed with 0x00)."""
    return root_from_leaf_hashes([leaf_hash(d) for d in leaves])


def inclusion_proof(index: int, hashes: Sequence[bytes]) -> list[bytes]:
    """Return the RFC 6962 audit path of leaf ``index`` in the tree over ``hashes``.

    Args:
        index: 0-based leaf position.
        hashes: All leaf hashes of the tree.

    Returns:
        Sibling hashes from the leaf up to the root.

    Raises:
        ValueError: ``index`` is outside the tree.
    """
    n = len(hashes)
    if not 0 <= index < n:
        raise ValueError(f"leaf {index} is outside a tree of {n} leaves")
    path: list[bytes] = []

    def walk(lo: int, hi: int, m: int) -> None:
        if hi - lo == 1:
            return
        k = _split(hi - lo)
        if m < k:
            walk(lo, lo + k, m)
            path.append(root_from_leaf_hashes(hashes[lo + k:hi]))
        else:
            walk(lo + k, hi, m - k)
            path.append(root_from_leaf_hashes(hashes[lo:lo + k]))

    walk(0, n, index)
    return path


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> bool:
    """Check an audit path (RFC 9162 section 2.1.3.2).

    Args:
        leaf: The leaf hash (not the raw data).
        index: 0-based leaf position.
        size: Tree size.
        proof: Sibling hashes as returned by :func:`inclusion_proof`.
        root: The expected root.

    Returns:
        True when the path proves ``leaf`` is at ``index`` in the tree of ``size`` with ``root``.
    """
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root
