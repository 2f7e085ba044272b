"""The known-vendors store and key files under concurrency and hostile contents.

Eight processes recording eight new vendors at once keep all eight; a damaged or deeply
nested known-vendors file or key file is a plain error naming the file; a key file that is
a FIFO is refused at once instead of blocking.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from overlap_desktop.core.manifest.keys import create_signing_key, load_signing_key, signing_key_file, signing_key_info
from overlap_desktop.core.manifest.vendors import known_vendors, known_vendors_file, trust_key_file, vendor_trust
from overlap_desktop.errors import ConfigError, InputError
from tests.unit.test_vendor_keys import _sig

POSIX = sys.platform != "win32"
DEEP = "[" * 100_000 + "]" * 100_000


def _first_use(path: str, i: int, barrier) -> None:  # type: ignore[no-untyped-def]
    key = Ed25519PrivateKey.from_private_bytes(bytes([i + 1]) * 32)
    barrier.wait()
    for _ in range(3):  # several rounds widen the window a lost update needs
        vendor_trust(_sig(f"Vendor number {i}", key), path=path)


def test_eight_concurrent_first_uses_keep_every_entry(tmp_path: Path) -> None:
    path = str(tmp_path / "known-vendors.json")
    ctx = multiprocessing.get_context("fork" if POSIX else "spawn")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_first_use, args=(path, i, barrier)) for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    assert sorted(v.name for v in known_vendors(path)) == [f"Vendor number {i}" for i in range(8)]


@pytest.mark.parametrize("body", [DEEP, '{"format": "overlap-known-vendors/1", "vendors": ' + DEEP + "}",
                                  "\x00\xff garbage", '{"format": "overlap-known-vendors/1"'],
                         ids=["nested", "nested-inside", "garbage", "cut-short"])
def test_a_damaged_or_deeply_nested_known_vendors_file_is_named(body: str) -> None:
    path = known_vendors_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8", errors="surrogateescape")
    with pytest.raises(InputError, match="known-vendors file is damaged") as exc:
        vendor_trust(_sig("Acme", Ed25519PrivateKey.generate()))
    assert exc.value.path == str(path)
    assert path.read_text(encoding="utf-8", errors="surrogateescape") == body  # never replaced


def test_a_deeply_nested_signing_key_file_is_named() -> None:
    path = signing_key_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    for call in (signing_key_info, load_signing_key):
        with pytest.raises(InputError, match="not an overlap signing key file") as exc:
            call()
        assert exc.value.path == str(path)


def test_a_deeply_nested_public_key_file_is_refused(tmp_path: Path) -> None:
    keyfile = tmp_path / "acme.pub"
    keyfile.write_text("overlap vendor public key v1\nname: " + "[" * 60_000 + "\n")
    with pytest.raises(InputError) as exc:
        trust_key_file(keyfile)
    assert "acme.pub" in str(exc.value.path)


@pytest.mark.skipif(not POSIX or not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_key_file_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    create_signing_key("Acme Robotics")
    path = signing_key_file()
    path.unlink()
    os.mkfifo(path)
    for call in (signing_key_info, load_signing_key):
        with pytest.raises((InputError, ConfigError), match="FIFO") as exc:
            call()
        assert exc.value.path == str(path)
    fifo = tmp_path / "acme.pub"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="public key file"):
        trust_key_file(fifo)
    kv = known_vendors_file()
    kv.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(kv)
    with pytest.raises(InputError, match="FIFO") as exc2:
        known_vendors()
    assert exc2.value.path == str(kv)


def test_the_store_is_json_a_person_can_read_after_locked_writes() -> None:
    a = Ed25519PrivateKey.generate()
    vendor_trust(_sig("Acme Robotics", a))
    doc = json.loads(known_vendors_file().read_text())
    assert doc["format"] == "overlap-known-vendors/1" and [v["name"] for v in doc["vendors"]] == ["Acme Robotics"]
