"""The vendor's signing key on disk and the buyer's known vendors (issue 37).

Every test runs with the user data folder in a temporary folder (tests/conftest.py sets
``XDG_DATA_HOME`` per test), so nothing here touches the real one.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from overlap_desktop.core.manifest import keys as keys_mod
from overlap_desktop.core.manifest.keys import (
    PASSPHRASE_ENV,
    create_signing_key,
    load_signing_key,
    parse_public_key_text,
    public_key_text,
    signing_key_file,
    signing_key_info,
)
from overlap_desktop.core.manifest.signature import Signature
from overlap_desktop.core.manifest.vendors import (
    forget_vendor,
    known_vendors,
    known_vendors_file,
    trust_key_file,
    vendor_trust,
)
from overlap_desktop.errors import ConfigError, InputError
from overlap_desktop.paths import user_data_folder

POSIX = sys.platform != "win32"


def test_the_key_lives_in_the_test_data_folder_not_the_real_one() -> None:
    assert str(user_data_folder()).startswith(os.environ["XDG_DATA_HOME"])
    assert signing_key_file().parent == user_data_folder()


@pytest.mark.skipif(not POSIX, reason="mode bits are POSIX; Windows uses icacls (tested below)")
def test_created_key_is_readable_by_the_user_only_and_never_overwritten() -> None:
    key = create_signing_key("Acme Robotics")
    path = signing_key_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert key.fingerprint == signing_key_info()[0].fingerprint  # type: ignore[index]
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="already exists"):
        create_signing_key("Someone Else")
    assert path.read_bytes() == before
    doc = json.loads(before)
    assert doc["name"] == "Acme Robotics" and not doc["encrypted"]
    assert "BEGIN PRIVATE KEY" in doc["private_key"]


def test_a_passphrase_encrypts_the_private_key(monkeypatch: pytest.MonkeyPatch) -> None:
    create_signing_key("Acme Robotics", passphrase="correct horse")
    doc = json.loads(signing_key_file().read_text())
    assert doc["encrypted"] and "BEGIN ENCRYPTED PRIVATE KEY" in doc["private_key"]
    assert signing_key_info()[1] is True  # type: ignore[index]
    with pytest.raises(ConfigError, match="passphrase"):
        load_signing_key()
    with pytest.raises(ConfigError, match="wrong passphrase"):
        load_signing_key("battery staple")
    assert load_signing_key("correct horse").name == "Acme Robotics"
    monkeypatch.setenv(PASSPHRASE_ENV, "correct horse")  # how a pipeline unlocks it
    assert load_signing_key().public.fingerprint == signing_key_info()[0].fingerprint  # type: ignore[index]


@pytest.mark.skipif(not POSIX, reason="POSIX permission check")
def test_a_key_file_others_can_read_is_refused() -> None:
    create_signing_key("Acme Robotics")
    os.chmod(signing_key_file(), 0o644)
    with pytest.raises(ConfigError, match="other users"):
        load_signing_key()


def test_damaged_key_files_are_named_and_refused() -> None:
    path = signing_key_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    os.chmod(path, 0o600)
    with pytest.raises(InputError, match="not an overlap signing key") as exc:
        load_signing_key()
    assert str(path) in str(exc.value)
    path.unlink()
    create_signing_key("Acme Robotics")
    doc = json.loads(path.read_text())
    other = Ed25519PrivateKey.generate()
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    doc["private_key"] = other.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="do not belong together"):
        load_signing_key()


def test_windows_restricts_the_access_list_with_icacls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What runs on Windows (the mode bits do not apply there): inheritance removed, the user alone granted."""
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "processed 1 files", "")

    monkeypatch.setattr(keys_mod.sys, "platform", "win32")
    monkeypatch.setattr(keys_mod.subprocess, "run", fake_run)
    monkeypatch.setenv("USERNAME", "buyer")
    target = tmp_path / "k.json"
    target.write_text("x")
    keys_mod.restrict_to_owner(target)
    assert calls == [["icacls", str(target), "/inheritance:r", "/grant:r", "buyer:F"]]

    def failing(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 5, "", "Access is denied.")

    monkeypatch.setattr(keys_mod.subprocess, "run", failing)
    with pytest.raises(InputError, match="Access is denied"):
        keys_mod.restrict_to_owner(target)


def test_public_key_file_round_trip_and_a_wrong_fingerprint() -> None:
    key = create_signing_key("Acme Robotics")
    text = public_key_text(key)
    assert text.splitlines()[0] == "overlap vendor public key v1" and key.fingerprint in text
    back = parse_public_key_text(text)
    assert back == key
    forged = text.replace(key.fingerprint, "0000-0000-0000-0000")
    with pytest.raises(InputError, match="fingerprint"):
        parse_public_key_text(forged)
    with pytest.raises(InputError, match="not an overlap public key"):
        parse_public_key_text("-----BEGIN PUBLIC KEY-----\n")


def _sig(vendor: str, key: Ed25519PrivateKey) -> Signature:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    pub = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return Signature(vendor=vendor, public_key=pub, created="2026-12-05T09:00:00Z", root=bytes(32),
                     signature=bytes(64))


def test_trust_on_first_use_then_known_then_changed() -> None:
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    assert vendor_trust(_sig("Acme Robotics", a))["trust"] == "first-use"
    assert vendor_trust(_sig("Acme Robotics", a))["trust"] == "known"
    # Another key under the same name, spelt differently: flagged, and nothing is overwritten.
    changed = vendor_trust(_sig("ACME  robotics", b))
    assert changed["trust"] == "changed" and changed["known_fingerprint"] == _sig("x", a).fingerprint
    assert [v.public_key for v in known_vendors()] == [_sig("x", a).public_key]
    # Look-alike spellings meet the recorded key too: full-width letters, a zero-width space, a bidi mark.
    for look_alike in ("Ａｃｍｅ Robotics", "Acme \u200bRobotics", "\u200eAcme Robotics"):
        assert vendor_trust(_sig(look_alike, b))["trust"] == "changed", look_alike
    # The same key under a new name: recorded for that name, and the other name is mentioned.
    other = vendor_trust(_sig("Acme Robots Ltd", a))
    assert other["trust"] == "first-use" and other["also_known_as"] == ["Acme Robotics"]
    assert stat.S_IMODE(known_vendors_file().stat().st_mode) == 0o600 or not POSIX


def test_looking_does_not_record() -> None:
    a = Ed25519PrivateKey.generate()
    assert vendor_trust(_sig("Acme", a), record=False)["trust"] == "first-use"
    assert known_vendors() == []


def test_pin_a_key_from_a_file_then_forget_it(tmp_path: Path) -> None:
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    vendor_trust(_sig("Acme Robotics", a))
    from overlap_desktop.core.manifest.keys import VendorKey

    keyfile = tmp_path / "acme.pub"
    keyfile.write_text(public_key_text(VendorKey("Acme Robotics", _sig("x", b).public_key)))
    pinned, replaced = trust_key_file(keyfile)
    assert pinned.source == "pinned" and replaced is not None and replaced.public_key == _sig("x", a).public_key
    assert vendor_trust(_sig("Acme Robotics", b))["trust"] == "pinned"
    assert vendor_trust(_sig("Acme Robotics", a))["trust"] == "changed"
    assert forget_vendor("acme robotics") is not None
    assert forget_vendor("Acme Robotics") is None
    assert vendor_trust(_sig("Acme Robotics", a))["trust"] == "first-use"


def test_a_damaged_known_vendors_file_is_named_not_replaced() -> None:
    path = known_vendors_file()
    path.parent.mkdir(parents=True)
    path.write_text('{"format": "overlap-known-vendors/1", "vendors": [{"name": 3}]}')
    with pytest.raises(InputError, match="known-vendors file is damaged") as exc:
        vendor_trust(_sig("Acme", Ed25519PrivateKey.generate()))
    assert str(path) in str(exc.value)
    assert "name" in path.read_text()  # left as it was, for the user to look at
