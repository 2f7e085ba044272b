"""RFC 6962 Merkle tree: reference vectors, shapes, no odd-node duplication, audit paths."""

from __future__ import annotations

import hashlib

import pytest

from overlap_desktop.core.manifest.merkle import (
    EMPTY_ROOT,
    inclusion_proof,
    leaf_hash,
    merkle_root,
    node_hash,
    root_from_leaf_hashes,
    verify_inclusion,
)

# The Certificate Transparency reference inputs and tree heads for sizes 1..8 (RFC 6962
# test data, reproduced by every CT implementation).
CT_LEAVES = [bytes.fromhex(h) for h in (
    "", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f")]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = {
    (0, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (5, 8): ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
}


def reference_mth(data: list[bytes]) -> bytes:
    """RFC 6962 section 2.1, written as literally as possible."""
    n = len(data)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + data[0]).digest()
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + reference_mth(data[:k]) + reference_mth(data[k:])).digest()


def test_reference_roots() -> None:
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert merkle_root([]) == EMPTY_ROOT
    for n in range(1, 9):
        assert merkle_root(CT_LEAVES[:n]).hex() == CT_ROOTS[n - 1], n


def test_reference_inclusion_proofs() -> None:
    hashes = [leaf_hash(d) for d in CT_LEAVES]
    for (index, size), want in CT_INCLUSION.items():
        proof = inclusion_proof(index, hashes[:size])
        assert [p.hex() for p in proof] == want
        assert verify_inclusion(hashes[index], index, size, proof, bytes.fromhex(CT_ROOTS[size - 1]))


def test_prefixes_and_small_shapes() -> None:
    a, b, c, d, e = (bytes([i]) * 3 for i in range(5))
    la, lb, lc, ld, le = map(leaf_hash, (a, b, c, d, e))
    assert la == hashlib.sha256(b"\x00" + a).digest()
    assert node_hash(la, lb) == hashlib.sha256(b"\x01" + la + lb).digest()
    assert merkle_root([a]) == la  # a single leaf is its own root (still prefixed)
    assert merkle_root([a, b]) == node_hash(la, lb)
    assert merkle_root([a, b, c]) == node_hash(node_hash(la, lb), lc)  # c promoted, not paired with itself
    assert merkle_root([a, b, c, d, e]) == node_hash(node_hash(node_hash(la, lb), node_hash(lc, ld)), le)


def test_iterative_root_equals_recursive_definition() -> None:
    for n in range(0, 70):
        data = [bytes([i % 256, i // 256, 7]) for i in range(n)]
        assert merkle_root(data) == reference_mth(data), n


def test_odd_node_is_never_duplicated() -> None:
    # CVE-2012-2459: duplicating the odd node makes (a,b,c) and (a,b,c,c) collide.
    for base in ([b"a", b"b", b"c"], [b"a", b"b", b"c", b"d", b"e"], [bytes([i]) for i in range(7)]):
        assert merkle_root(base) != merkle_root(base + base[-1:])


def test_leaf_and_node_domains_are_separated() -> None:
    # A 64-byte leaf equal to two child hashes must not hash like the interior node.
    la, lb = leaf_hash(b"a"), leaf_hash(b"b")
    assert merkle_root([la + lb]) != merkle_root([b"a", b"b"])


def test_every_inclusion_proof_verifies_and_tampering_fails() -> None:
    for n in range(1, 34):
        hashes = [leaf_hash(bytes([i, n])) for i in range(n)]
        root = root_from_leaf_hashes(hashes)
        for i in range(n):
            proof = inclusion_proof(i, hashes)
            assert verify_inclusion(hashes[i], i, n, proof, root)
            assert not verify_inclusion(leaf_hash(b"other"), i, n, proof, root)
            if n > 1:
                assert not verify_inclusion(hashes[i], (i + 1) % n, n, proof, root)
    with pytest.raises(ValueError):
        inclusion_proof(3, [leaf_hash(b"x")] * 3)
