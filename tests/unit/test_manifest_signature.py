"""The SIGNATURE section (issue 37): signing, verification, old readers, and hostile sections.

A signed manifest is the unsigned one plus an optional SIGNATURE section whose Ed25519
signature covers the content root (the root without the section), the label, the vendor
name and the signing time. Every defect of the section refuses the file, like the rest of
the reader; a section of a version this reader does not know is kept and reads "unsigned".
"""

from __future__ import annotations

import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import FLAG_CRITICAL
from overlap_desktop.core.manifest.inspect import inspect_manifest
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.signature import (
    MAX_BODY,
    SEC_SIGNATURE,
    fingerprint,
    key_id,
    sign_section,
)
from overlap_desktop.errors import ManifestError
from tests.fixtures_manifest import ALGO, PREP, layout, reroot, synthetic_files

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
WHEN = "2026-12-05T09:00:00Z"


def signer(key: Ed25519PrivateKey = KEY, vendor: str = "Acme Robotics"):  # type: ignore[no-untyped-def]
    return lambda root, label: sign_section(key, vendor, label, root, WHEN)


def signed(seed: int = 0, label: str = "Q3 kitchen teleop", **kw: object) -> tuple[bytes, bytes]:
    """``(signed manifest, the same manifest unsigned)``."""
    files = synthetic_files(2, 12, seed=seed)
    plain, _ = encode_manifest(files, algo_id=ALGO, prep_id=PREP, label=label)
    data, _ = encode_manifest(files, algo_id=ALGO, prep_id=PREP, label=label, signer=signer(**kw))  # type: ignore[arg-type]
    return data, plain


def section(data: bytes) -> tuple[int, int, int]:
    """``(table index, body offset, body length)`` of the SIGNATURE section."""
    for i, (t, off, ln) in enumerate(layout(data)["table"]):  # type: ignore[arg-type]
        if t == SEC_SIGNATURE:
            return i, off, ln
    raise AssertionError("no SIGNATURE section")


def replace_body(data: bytes, body: bytes) -> bytes:
    """The manifest with the SIGNATURE body replaced (table length fixed, root recomputed)."""
    i, off, ln = section(data)
    out = bytearray(data[:off] + body + data[off + ln:])
    struct.pack_into("<Q", out, 16 + 16 * i + 8, len(body))
    return reroot(bytes(out))


def refused(data: bytes) -> str:
    with pytest.raises(ManifestError) as exc:
        parse_manifest(data)
    return str(exc.value)


def test_a_signed_manifest_names_its_signer_and_signs_the_unsigned_root() -> None:
    data, plain = signed()
    m = parse_manifest(data)
    assert m.signature is not None
    assert m.signature.vendor == "Acme Robotics" and m.signature.created == WHEN
    pub = m.signature.public_key
    assert m.signature.fingerprint == fingerprint(pub) and len(m.signature.fingerprint) == 19
    # The signed root is the root of the same manifest without the section: an unsigned export.
    assert m.signature.root.hex() == parse_manifest(plain).root
    assert m.root != parse_manifest(plain).root  # the stored root also covers the signature
    assert not m.optional_sections
    assert parse_manifest(plain).signature is None


def test_signing_is_deterministic_and_keys_differ() -> None:
    assert signed()[0] == signed()[0]
    a = parse_manifest(signed()[0]).signature
    b = parse_manifest(signed(key=OTHER)[0]).signature
    assert a is not None and b is not None and a.fingerprint != b.fingerprint


def test_one_flipped_signature_byte_is_refused_as_a_bad_signature() -> None:
    data, _ = signed()
    _i, off, ln = section(data)
    sig_at = off + ln - 64
    for pos in (sig_at, sig_at + 31, off + ln - 1):
        bad = bytearray(data)
        bad[pos] ^= 0x01
        # Re-rooted, as anyone handling the file could: the signature still refuses it.
        assert "manifest refused: its signature does not match" in refused(reroot(bytes(bad)))
        # Not re-rooted: refused too (for the signature, checked first).
        assert "signature does not match" in refused(bytes(bad))


def test_content_changed_after_signing_is_refused() -> None:
    data, _ = signed(label="Q3")
    lay = layout(data)
    meta_end = lay["meta_end"]
    assert data[meta_end - 2:meta_end] == b"Q3"
    bad = reroot(data[:meta_end - 1] + b"4" + data[meta_end:])  # label "Q4", a valid manifest otherwise
    assert "signature does not match" in refused(bad)


def test_a_signature_copied_from_another_manifest_is_refused() -> None:
    a, _ = signed(seed=1)
    b, _ = signed(seed=2)
    _i, off, ln = section(a)
    msg = refused(replace_body(b, a[off:off + ln]))
    assert "signature does not match" in msg and "copied from another manifest" in msg


def test_the_same_content_signed_under_another_name_is_a_different_valid_signature() -> None:
    m = parse_manifest(signed(vendor="Other Vendor")[0])
    assert m.signature is not None and m.signature.vendor == "Other Vendor"


def _body(data: bytes) -> bytes:
    _i, off, ln = section(data)
    return data[off:off + ln]


@pytest.mark.parametrize(("edit", "words"), [
    (lambda b: b[:-1], "needs 64 bytes but 63 remain"),            # truncated signature
    (lambda b: b + b"\x00", "unexplained bytes"),                  # a byte too many
    (lambda b: b + b"\x00" * (MAX_BODY + 1 - len(b)), "section is"),  # oversized
    (lambda b: b"\x07ed448xx" + b[8:], "algorithm 'ed448xx' is not supported"),
    (lambda b: b[:8] + bytes(8) + b[16:], "key id does not belong"),
    (lambda b: b[:80] + b"\x142026-13-05 09:00:00Z" + b[101:], "signing time"),
    (lambda b: b[:101] + b"\x00\x00" + b[103:], "vendor name length 0"),
    (lambda b: b[:103] + b"\x1b" + b[104:], "control characters"),
    (lambda b: b[:103] + b"\xff" + b[104:], "not valid UTF-8"),
])
def test_malformed_signature_sections_are_refused(edit, words: str) -> None:  # type: ignore[no-untyped-def]
    body = _body(signed()[0])
    assert body[:8] == b"\x07ed25519" and body[80:81] == b"\x14" and body[103:104] == b"A"
    msg = refused(replace_body(signed()[0], edit(body)))
    assert "SIGNATURE" in msg or "signature" in msg
    assert words in msg, msg


def test_every_truncation_of_the_section_is_refused() -> None:
    data, _ = signed()
    body = _body(data)
    for cut in range(len(body)):
        refused(replace_body(data, body[:cut]))


def test_a_duplicated_signature_section_is_refused() -> None:
    data, _ = signed()
    i, off, ln = section(data)
    nsect = struct.unpack_from("<I", data, 12)[0]
    record = data[16 + 16 * i:16 + 16 * (i + 1)]
    table_end = 16 + 16 * nsect
    head = data[:12] + struct.pack("<I", nsect + 1) + data[16:16 + 16 * (i + 1)] + record
    out = head + data[16 + 16 * (i + 1):table_end] + data[table_end:off + ln] + data[off:off + ln] + data[off + ln:]
    assert "out of order or repeated" in refused(out)


def test_a_critical_signature_section_is_refused() -> None:
    data, _ = signed()
    i, _off, _ln = section(data)
    out = bytearray(data)
    struct.pack_into("<H", out, 16 + 16 * i + 4, FLAG_CRITICAL)
    assert "critical section type 0x0005" in refused(reroot(bytes(out)))


def test_a_newer_signature_version_is_kept_and_reads_unsigned() -> None:
    """What a reader that does not know the section does: skips it (non-critical), still
    verifies the root over it, and lists it; here simulated with an unknown sversion."""
    data, _ = signed()
    i, _off, ln = section(data)
    out = bytearray(data)
    struct.pack_into("<H", out, 16 + 16 * i + 2, 2)
    m = parse_manifest(reroot(bytes(out)))
    assert m.signature is None
    assert [(s.type, s.sversion, len(s.body)) for s in m.optional_sections] == [(SEC_SIGNATURE, 2, ln)]
    info = inspect_manifest(m)
    assert info["signature"]["status"] == "unsigned" and "newer kind" in info["signature"]["note"]
    assert info["optional_sections"][0]["name"] == "SIGNATURE"


def test_the_signature_cannot_be_written_for_an_unusable_vendor_name() -> None:
    files = synthetic_files(1, 4)
    for bad in ("", " Acme", "Ac\nme", "x" * 257):
        with pytest.raises(ManifestError, match="vendor name"):
            encode_manifest(files, algo_id=ALGO, prep_id=PREP, signer=signer(vendor=bad))


def test_key_id_is_the_first_eight_bytes_of_the_key_hash() -> None:
    import hashlib

    pub = bytes(range(32))
    assert key_id(pub) == hashlib.sha256(pub).digest()[:8]
    fp = fingerprint(pub)
    assert fp == "-".join(hashlib.sha256(pub).hexdigest().upper()[i:i + 4] for i in range(0, 16, 4))
