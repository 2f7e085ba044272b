"""The optional SIGNATURE section: a vendor's Ed25519 signature over a manifest.

Layout and rules are docs/manifest-spec.md, "SIGNATURE". The section is non-critical
(a reader that predates it skips it and still verifies the root over it), so signing
needs no new format version. What is signed is the *content root*: the Merkle root of
the same manifest without this section, i.e. exactly what ``overlap export --no-sign``
writes for the same content. The stored ROOT of a signed manifest then also covers the
signature, so the two never depend on each other circularly.

The cryptography is the ``cryptography`` package's Ed25519 (RFC 8032); nothing here
implements a primitive. This module knows bytes only: where keys are kept and which
vendor a buyer trusts is :mod:`~overlap_desktop.core.manifest.keys`.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from overlap_desktop.core.manifest.edpoints import key_problem, signature_problem
from overlap_desktop.core.manifest.merkle import leaf_hash, root_from_leaf_hashes
from overlap_desktop.errors import ManifestError

__all__ = [
    "ALGORITHM",
    "MAX_VENDOR_BYTES",
    "SEC_SIGNATURE",
    "SIGNATURE_SVERSION",
    "Signature",
    "content_root",
    "fingerprint",
    "key_id",
    "parse_signature",
    "sign_section",
    "verify_signature",
]

SEC_SIGNATURE = 0x0005
SIGNATURE_SVERSION = 1
#: The only algorithm of SIGNATURE v1 (a str8 in the section, so a mismatch names itself).
ALGORITHM = "ed25519"
#: Longest vendor name, UTF-8 bytes.
MAX_VENDOR_BYTES = 256
#: Domain separation: a signature made here can never be replayed as one over other data.
_CONTEXT = b"overlap-manifest-signature/v1\x00"
_KEY_ID_BYTES = 8
_CREATED_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Smallest and largest possible bodies (empty vendor is refused, so >= 1 byte of it).
_FIXED = 1 + len(ALGORITHM) + _KEY_ID_BYTES + 32 + 32 + 1 + 20 + 2 + 64
MIN_BODY = _FIXED + 1
MAX_BODY = _FIXED + MAX_VENDOR_BYTES


def key_id(public_key: bytes) -> bytes:
    """The 8-byte key id: the first bytes of SHA-256 of the raw 32-byte public key."""
    return hashlib.sha256(public_key).digest()[:_KEY_ID_BYTES]


def fingerprint(public_key: bytes) -> str:
    """The short fingerprint people compare, e.g. ``3F2A-91C0-5B7E-0D14`` (the key id in hex)."""
    h = key_id(public_key).hex().upper()
    return "-".join(h[i:i + 4] for i in range(0, len(h), 4))


@dataclass(frozen=True, slots=True)
class Signature:
    """A parsed SIGNATURE section (verified once it is on a :class:`Manifest`).

    Attributes:
        vendor: The signer's name as the vendor chose it (untrusted text: compare keys, not names).
        public_key: Raw 32-byte Ed25519 public key.
        created: When it was signed, ``YYYY-MM-DDTHH:MM:SSZ``.
        root: The signed content root (the manifest's root without this section), 32 bytes.
        signature: The 64-byte Ed25519 signature.
        algorithm: Always :data:`ALGORITHM`.
    """

    vendor: str
    public_key: bytes
    created: str
    root: bytes
    signature: bytes
    algorithm: str = ALGORITHM

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    def facts(self) -> dict[str, str]:
        """JSON-ready facts (reports, ``inspect``)."""
        import base64

        return {"vendor": self.vendor, "fingerprint": self.fingerprint, "algorithm": self.algorithm,
                "public_key": base64.b64encode(self.public_key).decode("ascii"), "signed_at": self.created,
                "signed_root": self.root.hex()}


def _message(kid: bytes, root: bytes, created: bytes, vendor: bytes, label: bytes) -> bytes:
    """What is signed: every field length-prefixed, so no two field lists give the same bytes."""
    alg = ALGORITHM.encode("ascii")
    return b"".join([_CONTEXT, struct.pack("<B", len(alg)), alg, kid, root, struct.pack("<B", len(created)),
                     created, struct.pack("<H", len(vendor)), vendor, struct.pack("<H", len(label)), label])


def _vendor_bytes(vendor: str) -> bytes:
    raw = vendor.encode("utf-8", "strict")
    if not 1 <= len(raw) <= MAX_VENDOR_BYTES or _CONTROL_RE.search(vendor) or vendor.strip() != vendor:
        raise ManifestError(f"cannot sign: the vendor name must be 1-{MAX_VENDOR_BYTES} bytes of one line "
                            "without leading or trailing spaces")
    return raw


def sign_section(private_key: Ed25519PrivateKey, vendor: str, label: str, root: bytes, created: str) -> bytes:
    """The SIGNATURE (sversion 1) body signing ``root`` (the content root) for ``vendor``.

    Raises:
        ManifestError: the vendor name or time cannot be written.
    """
    if not _CREATED_RE.fullmatch(created) or len(root) != 32:
        raise ManifestError(f"cannot sign: signing time {created!r} is not YYYY-MM-DDTHH:MM:SSZ")
    vb = _vendor_bytes(vendor)
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    pk = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    kid = key_id(pk)
    cb = created.encode("ascii")
    sig = private_key.sign(_message(kid, root, cb, vb, label.encode("utf-8")))
    alg = ALGORITHM.encode("ascii")
    return b"".join([struct.pack("<B", len(alg)), alg, kid, pk, root, struct.pack("<B", len(cb)), cb,
                     struct.pack("<H", len(vb)), vb, sig])


def parse_signature(body: bytes, offset: int, source: str | None) -> Signature:
    """Parse a SIGNATURE (sversion 1) body strictly (it is not verified here).

    Args:
        body: The section's bytes.
        offset: Where the body starts in the file (for messages).
        source: The file, named in messages.

    Raises:
        ManifestError: wrong size, algorithm, key id, time or name, or bytes left over.
    """
    pos = 0

    def fail(msg: str) -> ManifestError:
        return ManifestError(f"SIGNATURE: {msg} (offset {offset + pos})", path=source)

    def take(n: int, what: str) -> bytes:
        nonlocal pos
        if n > len(body) - pos:
            raise fail(f"{what} needs {n} bytes but {len(body) - pos} remain")
        pos += n
        return body[pos - n:pos]

    if not MIN_BODY <= len(body) <= MAX_BODY:
        raise fail(f"section is {len(body)} bytes; a version 1 signature is {MIN_BODY}..{MAX_BODY}")
    alg = take(take(1, "algorithm length")[0], "algorithm").decode("ascii", "replace")
    if alg != ALGORITHM:
        raise fail(f"signature algorithm {alg!r} is not supported (this reader knows {ALGORITHM!r})")
    kid = take(_KEY_ID_BYTES, "key id")
    pk = take(32, "public key")
    if kid != key_id(pk):
        raise fail("the key id does not belong to the public key")
    root = take(32, "signed root")
    created = take(take(1, "time length")[0], "signing time").decode("ascii", "replace")
    if not _CREATED_RE.fullmatch(created):
        raise fail(f"signing time {created!r} is not YYYY-MM-DDTHH:MM:SSZ")
    n = struct.unpack("<H", take(2, "vendor length"))[0]
    if not 1 <= n <= MAX_VENDOR_BYTES:
        raise fail(f"vendor name length {n} outside 1..{MAX_VENDOR_BYTES}")
    try:
        vendor = take(n, "vendor name").decode("utf-8", "strict")
    except UnicodeDecodeError:
        raise fail("vendor name is not valid UTF-8") from None
    if _CONTROL_RE.search(vendor) or vendor.strip() != vendor:
        raise fail("vendor name contains control characters or leading/trailing spaces")
    sig = take(64, "signature")
    if pos != len(body):
        raise fail(f"{len(body) - pos} unexplained bytes at the end of the section")
    # A weak key or a malleable signature is refused before anything trusts it (edpoints.py).
    weak = key_problem(pk)
    if weak:
        raise ManifestError(f"manifest refused: {weak}; no honest signing key looks like this, so the signature "
                            "cannot say who made this manifest; ask the vendor for a properly signed file",
                            path=source)
    bad = signature_problem(sig)
    if bad:
        raise ManifestError(f"manifest refused: its signature does not match: {bad} (altered after signing, or "
                            "not made by an Ed25519 signer); ask the vendor for the original file", path=source)
    return Signature(vendor=vendor, public_key=pk, created=created, root=root, signature=sig)


def content_root(buf: bytes | memoryview, nsect: int, index: int, meta_end: int, leaves: Sequence[bytes],
                 leaf: int) -> bytes:
    """The root of the manifest without section ``index`` (the signature) of its ``nsect``.

    Args:
        buf: The whole manifest.
        nsect: Sections in its table.
        index: Position of the SIGNATURE record in the table.
        meta_end: Offset where the META body ends (the header leaf is ``buf[:meta_end]``).
        leaves: Every leaf hash of the manifest, in order.
        leaf: Position of the SIGNATURE body's leaf in ``leaves``.
    """
    table = 16 + 16 * nsect
    head = bytes(buf[:12]) + struct.pack("<I", nsect - 1)
    records = bytes(buf[16:table])
    records = records[:16 * index] + records[16 * (index + 1):]
    header = head + records + bytes(buf[table:meta_end])
    rest = [h for i, h in enumerate(leaves) if i not in (0, leaf)]
    return root_from_leaf_hashes([leaf_hash(header), *rest])


def verify_signature(sig: Signature, label: str, root: bytes, source: str | None) -> None:
    """Check ``sig`` signs ``root`` (the content root) and ``label`` with its key.

    Raises:
        ManifestError: "manifest refused: its signature does not match", saying why.
    """
    if sig.root != root:
        raise ManifestError(
            "manifest refused: its signature does not match: it signs content root "
            f"{sig.root.hex()[:16]}… but this manifest's content is {root.hex()[:16]}… (a signature "
            "copied from another manifest, or content changed after signing)", path=source)
    msg = _message(key_id(sig.public_key), sig.root, sig.created.encode("ascii"), sig.vendor.encode("utf-8"),
                   label.encode("utf-8"))
    try:
        Ed25519PublicKey.from_public_bytes(sig.public_key).verify(sig.signature, msg)
    except (InvalidSignature, ValueError):
        raise ManifestError(
            f"manifest refused: its signature does not match (key {sig.fingerprint}): the manifest or its "
            "signature was altered after signing, or it was not signed with the key it names; ask the "
            "vendor for the original file", path=source) from None
