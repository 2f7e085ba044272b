"""Weak Ed25519 keys and malleable signatures are refused wherever a key enters.

OpenSSL's verifier (and so ``cryptography``'s) accepts a small-order public key, for which
one signature verifies over any content; these tests show that first, then that every
place a key enters refuses it: SIGNATURE sections, public key files (``vendors trust``),
the known-vendors store and the signing key file. The edge cases are the published ones
(tests/data/ed25519, see SOURCES.md); RFC 8032's own vectors must keep passing.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from overlap_desktop.core.manifest.edpoints import SMALL_ORDER_ENCODINGS, key_problem, signature_problem
from overlap_desktop.core.manifest.keys import (
    create_signing_key,
    parse_public_key_text,
    signing_key_file,
    signing_key_info,
)
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.signature import key_id
from overlap_desktop.core.manifest.vendors import known_vendors, known_vendors_file, trust_key_file
from overlap_desktop.errors import InputError
from tests.unit.test_manifest_signature import _body, refused, replace_body, signed

DATA = Path(__file__).resolve().parents[1] / "data" / "ed25519"
P = 2**255 - 19
IDENTITY = bytes([1]) + bytes(31)

#: RFC 8032, section 7.1, TESTs 1-3: (secret, public, message, signature).
RFC8032 = [
    ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd2"
     "5bf5f0595bbe24655141438e7a100b"),
    ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c38"
     "7b2eaeb4302aeeb00d291612bb0c00"),
    ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a"
     "7c15e9716ed28dc027beceea1ec40a"),
]


def speccheck_cases() -> list[tuple[bytes, bytes, bytes]]:
    vals = [ln.split("=", 1)[1] for ln in (DATA / "speccheck_cases.txt").read_text().split()]
    return [tuple(bytes.fromhex(v) for v in vals[i:i + 3]) for i in range(0, len(vals), 3)]  # type: ignore[misc]


def raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


@pytest.mark.parametrize(("secret", "public", "msg", "sig"), RFC8032)
def test_rfc8032_vectors_still_pass(secret: str, public: str, msg: str, sig: str) -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(secret))
    assert raw(key).hex() == public and key.sign(bytes.fromhex(msg)).hex() == sig
    assert key_problem(bytes.fromhex(public)) is None
    assert signature_problem(bytes.fromhex(sig)) is None


def test_freshly_made_keys_and_signatures_pass() -> None:
    for i in range(20):
        key = Ed25519PrivateKey.from_private_bytes(bytes([i]) * 32)
        assert key_problem(raw(key)) is None
        assert signature_problem(key.sign(bytes([i]) * i)) is None


def test_every_published_edge_case_is_refused_including_those_openssl_accepts() -> None:
    accepted = []
    for n, (msg, pub, sig) in enumerate(speccheck_cases()):
        try:
            Ed25519PublicKey.from_public_bytes(pub).verify(sig, msg)
            accepted.append(n)
        except InvalidSignature:
            pass
        assert key_problem(pub) or signature_problem(sig), f"case {n} passed the strict checks"
    # The threat is real with the library as installed: it verifies at least the small-order case.
    assert 0 in accepted, accepted


def test_small_order_points_are_refused_in_every_spelling() -> None:
    spellings = set(SMALL_ORDER_ENCODINGS)
    for enc in SMALL_ORDER_ENCODINGS:
        y = int.from_bytes(enc, "little") & ((1 << 255) - 1)
        for alt in (y, y + P):  # the canonical y, and y + p where that still fits in 255 bits
            if alt < 2**255:
                for sign in (0, 1):
                    spellings.add((alt | (sign << 255)).to_bytes(32, "little"))
    assert len(spellings) > len(SMALL_ORDER_ENCODINGS)
    for enc in spellings:
        assert key_problem(enc), enc.hex()
        assert signature_problem(enc + bytes(32)), enc.hex()
    assert "not canonically encoded" in str(key_problem((P + 5).to_bytes(32, "little")))


def test_s_at_or_above_the_group_order_is_refused() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(32))
    sig = key.sign(b"offer")
    order = 2**252 + 27742317777372353535851937790883648493
    s = int.from_bytes(sig[32:], "little")
    assert "scalar S" in str(signature_problem(sig[:32] + (s + order).to_bytes(32, "little")))


def _forged_identity(data: bytes) -> bytes:
    """The signed manifest with its key and signature swapped for the identity point's."""
    body = _body(data)
    forged = body[:8] + key_id(IDENTITY) + IDENTITY + body[48:-64] + IDENTITY + bytes(32)
    return replace_body(data, forged)


def test_an_identity_key_signature_verifies_anything_in_openssl_but_the_manifest_is_refused() -> None:
    pub = Ed25519PublicKey.from_public_bytes(IDENTITY)
    for msg in (b"one quote", b"quite another"):
        pub.verify(IDENTITY + bytes(32), msg)  # the library alone: "valid" for any content
    data, _ = signed()
    parse_manifest(data)  # the honest one reads
    msg = refused(_forged_identity(data))
    assert "manifest refused" in msg and "small order" in msg, msg


def test_a_torsion_key_signature_that_openssl_accepts_is_refused_in_a_manifest() -> None:
    data, _ = signed()
    _msg, pub, sig = speccheck_cases()[3]  # mixed-order key and R, valid for OpenSSL
    body = _body(data)
    msg = refused(replace_body(data, body[:8] + key_id(pub) + pub + body[48:-64] + sig))
    assert "prime-order group" in msg, msg


def _key_file(pub: bytes, name: str = "Weak Key Vendor") -> str:
    return f"overlap vendor public key v1\nname: {name}\ned25519: {base64.b64encode(pub).decode()}\n"


def test_public_key_files_and_vendors_trust_refuse_weak_keys(tmp_path: Path) -> None:
    for enc in SMALL_ORDER_ENCODINGS:
        with pytest.raises(InputError, match="small order"):
            parse_public_key_text(_key_file(enc))
    path = tmp_path / "weak.pub"
    path.write_text(_key_file(IDENTITY))
    with pytest.raises(InputError, match="small order") as exc:
        trust_key_file(path)
    assert exc.value.path is not None and "weak.pub" in str(exc.value.path)
    assert known_vendors() == []
    good = tmp_path / "good.pub"
    good.write_text(_key_file(raw(Ed25519PrivateKey.from_private_bytes(bytes(32))), "Acme Robotics"))
    assert trust_key_file(good)[0].name == "Acme Robotics"


def test_a_known_vendors_entry_with_a_weak_key_is_damage_named_not_trusted() -> None:
    target = known_vendors_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    entry = {"name": "Weak Key Vendor", "public_key": base64.b64encode(IDENTITY).decode(), "source": "pinned",
             "since": "2026-12-05T09:00:00Z"}
    target.write_text(json.dumps({"format": "overlap-known-vendors/1", "vendors": [entry]}))
    with pytest.raises(InputError, match="known-vendors file is damaged") as exc:
        known_vendors()
    assert exc.value.path == str(target)


def test_a_signing_key_file_with_a_weak_public_key_is_refused() -> None:
    create_signing_key("Acme Robotics")
    path = signing_key_file()
    doc = json.loads(path.read_text())
    doc["public_key"] = base64.b64encode(IDENTITY).decode()
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="public key is damaged"):
        signing_key_info()
