"""Signed quotes end to end through the CLI (issue 37), in-process through ``main``.

A vendor makes a key, exports (signed by default); the buyer inspects, compares (exit 0/3),
refuses a tampered signature (exit 4), gates on ``--require-signed``, sees a changed key
flagged, pins and forgets keys, and files a verification that names the signer.
The user data folder is a per-test temporary folder (tests/conftest.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.errors import ExitCode
from tests.fixtures_manifest import reroot
from tests.footage import make_clip

SIZE = (160, 120)
FPS = 12.0


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The lab owns clip 11; the offer is the same clip plus one the lab has never seen."""
    root = tmp_path_factory.mktemp("signed")
    make_clip(root / "owned" / "a.mp4", 11, duration=16, fps=FPS, size=SIZE)
    make_clip(root / "offer" / "a.mp4", 11, duration=16, fps=FPS, size=SIZE)
    make_clip(root / "offer" / "new.mp4", 13, duration=16, fps=FPS, size=SIZE)
    assert main(["index", str(root / "owned"), "--index", str(root / "lab"), "-q"]) == 0
    assert main(["index", str(root / "offer"), "--index", str(root / "vendor"), "-q"]) == 0
    return {"root": root, "lab": root / "lab", "vendor": root / "vendor", "offer": root / "offer"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "-q"])
    out, err = capsys.readouterr()
    return code, out, err


def export(capsys: pytest.CaptureFixture[str], ix: dict[str, Path], out: Path, *extra: str) -> str:
    code, text, err = run(capsys, "export", "-o", str(out), "--index", str(ix["vendor"]), "--label", "Q3", *extra)
    assert code == 0, err
    return text


def fingerprint(capsys: pytest.CaptureFixture[str]) -> str:
    code, out, _ = run(capsys, "key", "show")
    assert code == 0
    return next(ln.split(": ")[1] for ln in out.splitlines() if ln.startswith("fingerprint: "))


def test_a_new_key_signs_the_next_export_and_inspect_names_the_signer(
        indexes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unsigned = export(capsys, indexes, tmp_path / "before.ovlm")
    assert "signature    none (unsigned" in unsigned
    code, out, _ = run(capsys, "key", "create", "--name", "Acme Robotics")
    assert code == 0 and "Back this file up" in out
    fp = fingerprint(capsys)
    assert len(fp) == 19 and fp.count("-") == 3
    text = export(capsys, indexes, tmp_path / "offer.ovlm")
    assert f"signed by    Acme Robotics, key {fp}" in text
    code, out, _ = run(capsys, "inspect", str(tmp_path / "offer.ovlm"))
    assert code == 0 and f"signed by Acme Robotics, key {fp}" in out and "first manifest seen" in out
    # The unsigned export of the same content, met after the signed one: the downgrade is named.
    code, out, err = run(capsys, "inspect", str(tmp_path / "before.ovlm"))
    assert code == 0 and "signature    WARNING: unsigned, but this exact content was seen signed by Acme " \
        f"Robotics (key {fp}" in out and "WARNING" in err
    code, out, _ = run(capsys, "inspect", "--json", str(tmp_path / "offer.ovlm"))
    sig = json.loads(out)["signature"]
    assert sig["status"] == "signed" and sig["fingerprint"] == fp and sig["trust"] == "known"
    # --no-sign with a key: unsigned.
    export(capsys, indexes, tmp_path / "plain.ovlm", "--no-sign")
    code, out, _ = run(capsys, "inspect", str(tmp_path / "plain.ovlm"))
    assert "signature    WARNING: unsigned, but this exact content was seen signed" in out
    # Other content, never seen signed: a plain "unsigned", no warning.
    export(capsys, indexes, tmp_path / "other.ovlm", "--no-sign", "--label", "Q4")
    code, out, err = run(capsys, "inspect", str(tmp_path / "other.ovlm"))
    assert "signature    unsigned: nothing in the manifest says who made it" in out and "WARNING" not in err


def test_a_flipped_signature_byte_makes_compare_exit_4(indexes: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "key", "create", "--name", "Acme Robotics")
    good = tmp_path / "offer.ovlm"
    export(capsys, indexes, good)
    data = good.read_bytes()
    for name, fix_root in (("tampered.ovlm", False), ("tampered-rerooted.ovlm", True)):
        bad = bytearray(data)
        bad[-32 - 10] ^= 0x01  # inside the 64 signature bytes, just before the stored root
        (tmp_path / name).write_bytes(reroot(bytes(bad)) if fix_root else bytes(bad))
        code, _out, err = run(capsys, "compare", str(tmp_path / name), "--index", str(indexes["lab"]))
        assert code == ExitCode.INPUT_REFUSED
        assert "manifest refused: its signature does not match" in err and name in err
    code, _out, _err = run(capsys, "compare", str(good), "--index", str(indexes["lab"]))
    assert code == 0


def test_require_signed_refuses_unsigned_offers_and_passes_signed_ones(
        indexes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    lab = str(indexes["lab"])
    export(capsys, indexes, tmp_path / "unsigned.ovlm")  # no key yet
    code, _o, err = run(capsys, "compare", str(tmp_path / "unsigned.ovlm"), "--index", lab, "--require-signed")
    assert code == ExitCode.INPUT_REFUSED and "it is not signed" in err
    assert run(capsys, "compare", str(tmp_path / "unsigned.ovlm"), "--index", lab)[0] == 0
    monkeypatch.setenv("OVERLAP_COMPARE_REQUIRE_SIGNED", "true")  # the config setting, for pipelines
    assert run(capsys, "compare", str(tmp_path / "unsigned.ovlm"), "--index", lab)[0] == ExitCode.INPUT_REFUSED
    monkeypatch.delenv("OVERLAP_COMPARE_REQUIRE_SIGNED")
    run(capsys, "key", "create", "--name", "Acme Robotics")
    export(capsys, indexes, tmp_path / "signed.ovlm")
    code, out, _ = run(capsys, "compare", str(tmp_path / "signed.ovlm"), "--index", lab, "--require-signed")
    assert code == 0 and "Signed by Acme Robotics" in out
    # Half the offer is owned: the --fail-over gate still answers 3 for a signed offer.
    code, _o, _e = run(capsys, "compare", str(tmp_path / "signed.ovlm"), "--index", lab, "--require-signed",
                       "--fail-over", "40")
    assert code == ExitCode.CHECK_FAILED


def test_a_changed_key_under_a_known_name_is_flagged_then_pinned(
        indexes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    lab = str(indexes["lab"])
    run(capsys, "key", "create", "--name", "Acme Robotics")
    export(capsys, indexes, tmp_path / "genuine.ovlm")
    assert run(capsys, "inspect", str(tmp_path / "genuine.ovlm"))[0] == 0  # recorded: first use
    # Someone else makes a key under the same name (their own user data folder).
    buyer_data = Path(os.environ["XDG_DATA_HOME"])
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "impostor-data"))
    run(capsys, "key", "create", "--name", "Acme Robotics")
    impostor_fp = fingerprint(capsys)
    run(capsys, "key", "show", "-o", str(tmp_path / "new-acme.pub"))
    export(capsys, indexes, tmp_path / "impostor.ovlm")
    monkeypatch.setenv("XDG_DATA_HOME", str(buyer_data))
    code, out, err = run(capsys, "inspect", str(tmp_path / "impostor.ovlm"))
    assert code == 0 and "WARNING" in out and "WARNING" in err and impostor_fp in out
    code, out, err = run(capsys, "compare", str(tmp_path / "impostor.ovlm"), "--index", lab)
    assert code == 0 and "WARNING: signed as Acme Robotics" in out and "may not come from" in err
    code, _o, err = run(capsys, "compare", str(tmp_path / "impostor.ovlm"), "--index", lab, "--require-signed")
    assert code == ExitCode.INPUT_REFUSED and "key recorded for that vendor" in err
    # The buyer checks with the vendor and pins the new key from its public key file.
    code, out, _ = run(capsys, "vendors", "trust", str(tmp_path / "new-acme.pub"))
    assert code == 0 and impostor_fp in out and "replaces key" in out
    code, out, _ = run(capsys, "vendors", "list")
    assert f"{impostor_fp}  Acme Robotics  (pinned" in out
    code, out, _ = run(capsys, "compare", str(tmp_path / "impostor.ovlm"), "--index", lab, "--require-signed")
    assert code == 0 and "the key you pinned" in out
    code, out, _ = run(capsys, "compare", str(tmp_path / "genuine.ovlm"), "--index", lab)
    assert "WARNING" in out  # now the other key is the unexpected one
    assert run(capsys, "vendors", "forget", "ACME robotics")[0] == 0
    assert run(capsys, "vendors", "forget", "Acme Robotics")[0] == ExitCode.USAGE
    code, out, _ = run(capsys, "vendors", "list")
    assert "no vendor keys recorded" in out


def test_every_report_names_the_signer(indexes: dict[str, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "key", "create", "--name", "Acme Robotics")
    fp = fingerprint(capsys)
    export(capsys, indexes, tmp_path / "offer.ovlm")
    export(capsys, indexes, tmp_path / "plain.ovlm", "--no-sign")
    j, h, c = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.csv"
    code, _o, _e = run(capsys, "compare", str(tmp_path / "offer.ovlm"), "--index", str(indexes["lab"]),
                       "-o", str(j), "--html", str(h), "--csv", str(c))
    assert code == 0
    report = json.loads(j.read_text())
    assert report["manifest"]["signature"]["vendor"] == "Acme Robotics"
    assert report["signature"][0].startswith(f"Signed by Acme Robotics, key {fp}")
    assert f"Signed by Acme Robotics, key {fp}" in h.read_text()
    rows = list(csv.DictReader(io.StringIO(c.read_text(encoding="utf-8-sig"))))
    assert rows[0]["kind"] == "summary" and rows[0]["signature"].startswith(f"Signed by Acme Robotics, key {fp}")
    assert all(r["signature"] == "" for r in rows[1:])
    # compare-offers names both offers' signers.
    code, out, _ = run(capsys, "compare-offers", str(tmp_path / "offer.ovlm"), str(tmp_path / "plain.ovlm"),
                       "-o", str(tmp_path / "o.json"))
    # Offer B is offer A's content without the signature: named as a downgrade, not a plain "unsigned".
    assert code == 0 and "Offer A: signed by Acme Robotics" in out and "Offer B: WARNING: unsigned, but" in out
    lines = json.loads((tmp_path / "o.json").read_text())["signature"]
    assert lines[0].startswith("Offer A: signed by") and lines[1].startswith("Offer B: WARNING: unsigned")
    code, _o, err = run(capsys, "compare-offers", str(tmp_path / "offer.ovlm"), str(tmp_path / "plain.ovlm"),
                        "--require-signed")
    assert code == ExitCode.INPUT_REFUSED and "plain.ovlm" in err


def test_a_stripped_signature_is_a_warning_in_the_cli_and_every_report(
        indexes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.test_manifest_signature import section

    run(capsys, "key", "create", "--name", "Acme Robotics")
    fp = fingerprint(capsys)
    export(capsys, indexes, tmp_path / "offer.ovlm")
    assert run(capsys, "compare", str(tmp_path / "offer.ovlm"), "--index", str(indexes["lab"]))[0] == 0
    # A middleman cuts the SIGNATURE section out (its table record and its body) and re-roots the file.
    data = (tmp_path / "offer.ovlm").read_bytes()
    i, off, ln = section(data)
    nsect = int.from_bytes(data[12:16], "little")
    cut = (data[:12] + (nsect - 1).to_bytes(4, "little") + data[16:16 + 16 * i] + data[32 + 16 * i:off]
           + data[off + ln:])
    stripped = tmp_path / "stripped.ovlm"
    stripped.write_bytes(reroot(cut))
    code, out, _ = run(capsys, "inspect", str(stripped))
    assert code == 0 and "signature    WARNING: unsigned, but this exact content" in out
    j, h, c = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.csv"
    code, out, err = run(capsys, "compare", str(stripped), "--index", str(indexes["lab"]),
                         "-o", str(j), "--html", str(h), "--csv", str(c))
    assert code == 0
    warning = f"WARNING: unsigned, but this exact content was seen signed by Acme Robotics (key {fp}"
    assert warning in out and "WARNING: unsigned" in err
    assert json.loads(j.read_text())["signature"][0].startswith(warning)
    assert warning in h.read_text()
    assert warning in c.read_text(encoding="utf-8-sig")


def test_verify_states_signer_fingerprint_and_root(indexes: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "key", "create", "--name", "Acme Robotics")
    fp = fingerprint(capsys)
    text = export(capsys, indexes, tmp_path / "offer.ovlm")
    signed_root = text.split("content root ")[1].split(")")[0]
    code, out, _ = run(capsys, "verify", str(tmp_path / "offer.ovlm"), "--data", str(indexes["offer"]),
                       "-o", str(tmp_path / "v.json"), "--html", str(tmp_path / "v.html"))
    assert code == 0
    assert f"Signature: signed by Acme Robotics, key {fp}" in out and f"content root {signed_root}" in out
    v: dict[str, Any] = json.loads((tmp_path / "v.json").read_text())
    assert v["signature"]["fingerprint"] == fp and v["signature"]["signed_root"] == signed_root
    assert v["signature_text"].startswith("signed by Acme Robotics")
    page = (tmp_path / "v.html").read_text()
    assert "signed by Acme Robotics" in page and signed_root in page


def test_a_passphrase_protected_key_signs_from_the_environment(
        indexes: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVERLAP_KEY_PASSPHRASE", "correct horse")
    code, out, _ = run(capsys, "key", "create", "--name", "Acme Robotics", "--passphrase")
    assert code == 0 and "passphrase-protected" in out
    assert "signed by    Acme Robotics" in export(capsys, indexes, tmp_path / "a.ovlm")
    monkeypatch.delenv("OVERLAP_KEY_PASSPHRASE")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a pipeline: no terminal to ask on
    code, _o, err = run(capsys, "export", "-o", str(tmp_path / "b.ovlm"), "--index", str(indexes["vendor"]))
    assert code == ExitCode.USAGE and "OVERLAP_KEY_PASSPHRASE" in err and not (tmp_path / "b.ovlm").exists()
    monkeypatch.setenv("OVERLAP_KEY_PASSPHRASE", "wrong")
    code, _o, err = run(capsys, "export", "-o", str(tmp_path / "b.ovlm"), "--index", str(indexes["vendor"]))
    assert code == ExitCode.USAGE and "wrong passphrase" in err and not (tmp_path / "b.ovlm").exists()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_passphrase_is_asked_for_twice_at_a_terminal(indexes: dict[str, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from overlap_desktop.cli.commands import key as key_cmd

    code, _o, err = run(capsys, "export", "-o", str(tmp_path / "x.ovlm"), "--index", str(indexes["vendor"]), "--sign")
    assert code == ExitCode.USAGE and "--sign needs a signing key" in err
    answers = iter(["correct horse", "correct hose"])
    monkeypatch.setattr("sys.stdin", _Tty())
    monkeypatch.setattr(key_cmd.getpass, "getpass", lambda prompt="": next(answers))
    code, _o, err = run(capsys, "key", "create", "--name", "Acme Robotics", "--passphrase")
    assert code == ExitCode.USAGE and "differ" in err and run(capsys, "key", "show")[0] == ExitCode.USAGE
    answers = iter(["correct horse", "correct horse", "correct horse"])
    assert run(capsys, "key", "create", "--name", "Acme Robotics", "--passphrase")[0] == 0
    assert "signed by    Acme Robotics" in export(capsys, indexes, tmp_path / "a.ovlm")  # asked once more
