"""Output flags never destroy data (issue 21, item 3; long names from item 10).

Before: ``export -o INDEX/index.sqlite3`` replaced the index database with a manifest
(exit 0), ``compare --html OFFER.ovlm`` overwrote its own input and ``export -o`` over a
footage file overwrote it. Now each is refused before any work, the file is unchanged,
and overlap's own earlier outputs are still replaced without ceremony.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.reliability.lab21 import Lab, copy_lab, run_cli


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_export_never_replaces_the_index_database(lab21: Lab, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    db = lab.index / "index.sqlite3"
    before = _digest(db)
    for force in ([], ["--force"]):
        code, _, err = run_cli(["export", "-q", "--index", lab.index, "-o", db, *force], capsys)
        assert code == 2 and "inside the index folder" in err, err
    assert _digest(db) == before
    code, out, _ = run_cli(["files", "--index", lab.index], capsys)
    assert code == 0 and "1 ok" in out


@pytest.mark.parametrize("flag", ["--html", "--json", "--csv"])
def test_compare_never_overwrites_its_own_input(lab21: Lab, tmp_path: Path, flag: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    before = _digest(lab.manifest)
    link = tmp_path / "link.html"
    link.symlink_to(lab.manifest)
    for target in (lab.manifest, link):
        code, _, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest, flag, target, "--force"],
                               capsys)
        assert code == 2 and "an input of this command" in err, err
    code, _, err = run_cli(["compare-offers", "-q", lab.manifest, lab21.manifest, flag, lab.manifest], capsys)
    assert code == 2 and "an input of this command" in err, err
    assert _digest(lab.manifest) == before


def test_footage_and_foreign_files_need_force(lab21: Lab, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    footage = tmp_path / "precious.mp4"
    footage.write_bytes(lab.clip.read_bytes())
    notes = tmp_path / "notes.html"
    notes.write_text("<!DOCTYPE html><p>my own notes</p>", encoding="utf-8")
    before = _digest(footage)
    code, _, err = run_cli(["export", "-q", "--index", lab.index, "-o", footage], capsys)
    assert code == 2 and "not an overlap manifest" in err and "--force" in err, err
    code, _, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest, "--html", notes], capsys)
    assert code == 2 and "not an HTML report written by overlap" in err, err
    assert _digest(footage) == before and "my own notes" in notes.read_text(encoding="utf-8")
    # With --force the user's explicit choice is honoured.
    code, _, err = run_cli(["export", "-q", "--index", lab.index, "-o", footage, "--force"], capsys)
    assert code == 0, err
    assert footage.read_bytes().startswith(b"\x89OVLM")


def test_our_own_outputs_are_replaced_without_force(lab21: Lab, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lab = copy_lab(lab21, tmp_path)
    outs = [tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.csv"]
    argv = ["compare", "-q", "--index", lab.index, lab.manifest, "--json", outs[0], "--html", outs[1],
            "--csv", outs[2]]
    for _ in range(2):
        code, _, err = run_cli(argv, capsys)
        assert code == 0, err
    (tmp_path / "empty.ovlm").write_bytes(b"")
    for target in (tmp_path / "again.ovlm", tmp_path / "again.ovlm", tmp_path / "empty.ovlm"):
        code, _, err = run_cli(["export", "-q", "--index", lab.index, "-o", target], capsys)
        assert code == 0, err
    # Two outputs naming one file are refused rather than one silently winning.
    code, _, err = run_cli(["compare", "-q", "--index", lab.index, lab.manifest, "--json", outs[0],
                            "--csv", outs[0]], capsys)
    assert code == 2 and "name the same file" in err, err


def test_verify_does_not_write_into_the_delivery(lab21: Lab, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    delivery = tmp_path / "delivery"
    delivery.mkdir()
    (delivery / "clip.mp4").write_bytes(lab21.clip.read_bytes())
    code, _, err = run_cli(["verify", "-q", lab21.manifest, "--data", delivery, "-o", delivery / "result.json"],
                           capsys)
    assert code == 2 and "the folder being checked" in err, err
    assert sorted(p.name for p in delivery.iterdir()) == ["clip.mp4"]
    code, _, err = run_cli(["verify", "-q", lab21.manifest, "--data", delivery, "-o", lab21.manifest], capsys)
    assert code == 2 and "an input of this command" in err, err


@pytest.mark.parametrize("length", [237, 241, 245, 250, 255])
def test_long_output_names_are_written(lab21: Lab, tmp_path: Path, length: int,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Names of 238-255 bytes once failed with "File name too long": the temporary name
    adds 18 bytes. Multi-byte names are cut on a character boundary."""
    for stem_char, width in (("r", 1), ("é", 2)):
        name = stem_char * ((length - 5) // width) + ".ovlm"
        name = name if len(name.encode()) <= 255 else name[1:]
        out = tmp_path / name
        code, _, err = run_cli(["export", "-q", "--index", lab21.index, "-o", out], capsys)
        assert code == 0, err
        assert out.read_bytes().startswith(b"\x89OVLM")
        assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
        # Written again (the temporary name is stable in form, and the old one is ours).
        code, _, err = run_cli(["export", "-q", "--index", lab21.index, "-o", out], capsys)
        assert code == 0, err
