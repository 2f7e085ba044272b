"""The audit with awkward inputs: an anonymised quote (files found by their bytes, streams by
position), a quoted file no reader opens, a truncated video, a missing file, a renamed file, and
the CLI's flag rules. Each ends in a verdict naming the file, never a crash.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.audit.reproduce import NOT_CHECKED, REPRODUCED
from overlap_desktop.core.audit.run import audit_delivery
from overlap_desktop.core.manifest.export import write_manifest
from overlap_desktop.core.manifest.format import ManifestFile
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.errors import ExitCode
from tests.audit_world import build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_world(tmp_path_factory.mktemp("audit-inputs"))


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _cfg() -> object:
    return load_config({}, environ={})


def test_an_anonymised_quote_audits_by_bytes_and_stream_position(world: dict[str, Path], tmp_path: Path) -> None:
    assert main(["export", "-o", str(tmp_path / "anon.ovlm"), "--index", str(world["root"] / "vendor"),
                 "--anonymize-paths", "--no-sign", "-q"]) == 0
    m = read_manifest(tmp_path / "anon.ovlm")
    assert m.anonymized and all(f.name.startswith("file-") for f in m.files)
    r = audit_delivery(m, world["delivery"], config=_cfg(), state_dir=tmp_path / "st")  # type: ignore[arg-type]
    assert r.ok and {f.check.fingerprints for f in r.files} == {REPRODUCED}
    assert {f.delivered for f in r.files} == {"take-07.mp4", "fresh.mp4"}


def test_renamed_delivery_is_decoded_under_its_new_name(world: dict[str, Path], tmp_path: Path) -> None:
    delivery = shutil.copytree(world["delivery"], tmp_path / "d")
    (delivery / "fresh.mp4").rename(delivery / "renamed.mp4")
    r = audit_delivery(world["honest"], delivery, config=_cfg(), state_dir=tmp_path / "st")  # type: ignore[arg-type]
    fresh = next(f for f in r.files if f.name == "fresh.mp4")
    assert fresh.delivered == "renamed.mp4" and fresh.check.fingerprints == REPRODUCED and r.ok


def test_unreadable_and_hostile_items_are_named_not_crashed(world: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    delivery = shutil.copytree(world["delivery"], tmp_path / "d")
    (delivery / "notes.txt").write_text("not footage\n", encoding="utf-8")
    data = (delivery / "fresh.mp4").read_bytes()
    (delivery / "broken.mp4").write_bytes(data[: len(data) // 5])  # a truncated video
    honest = read_manifest(world["honest"])
    fresh = next(f for f in honest.files if f.name == "fresh.mp4")
    files = list(honest.files)
    for name in ("notes.txt", "broken.mp4"):
        p = delivery / name
        files.append(ManifestFile(name, p.stat().st_size, _sha(p), fresh.duration_s, fresh.streams))
    files.append(ManifestFile("sub/gone.mp4", 10, "0" * 64, 1.0, fresh.streams))
    write_manifest(files, tmp_path / "q.ovlm", algo_id=honest.algo_id, prep_id=honest.prep_id)
    r = audit_delivery(tmp_path / "q.ovlm", delivery, config=_cfg(), state_dir=tmp_path / "st")  # type: ignore[arg-type]
    by = {f.name: f for f in r.files}
    assert by["notes.txt"].bytes == "matched" and by["notes.txt"].check.fingerprints == NOT_CHECKED
    assert "notes.txt could not be checked: no reader supports this kind of file" in by["notes.txt"].check.words
    assert by["broken.mp4"].bytes == "matched" and by["broken.mp4"].check.fingerprints != REPRODUCED
    assert by["sub/gone.mp4"].bytes == "missing" and by["sub/gone.mp4"].check.fingerprints == NOT_CHECKED
    assert "it was not delivered" in by["sub/gone.mp4"].check.words
    assert by["take-07.mp4"].check.fingerprints == REPRODUCED and not r.ok
    code = main(["verify", str(tmp_path / "q.ovlm"), "--data", str(delivery), "--audit", "--no-rescreen", "-q"])
    out = capsys.readouterr().out
    assert code == ExitCode.CHECK_FAILED and "notes.txt: bytes exact; fingerprints not checked" in out


def test_flag_rules(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(world["honest"]), "--data", str(world["delivery"]), "--add", "-q"]) == ExitCode.USAGE
    assert "--add works with --audit" in capsys.readouterr().err
    assert main(["verify", str(world["honest"]), "--data", str(world["delivery"]), "--audit", "--add",
                 "--no-rescreen", "-q"]) == ExitCode.USAGE
    # Without a library the fingerprints are still checked, and it says so.
    code = main(["verify", str(world["honest"]), "--data", str(world["delivery"]), "--audit",
                 "--index", str(world["root"] / "no-library-here")])
    cap = capsys.readouterr()
    assert code == ExitCode.OK and "no library at" in cap.err and "fingerprints reproduced" in cap.out
