"""``overlap index / files / config / doctor`` in-process through ``main([...])``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.index import lock as lock_mod
from overlap_desktop.core.index.store import open_index
from tests.fixtures_index import rewrite_shards_as_format_3


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_index_then_files_then_reindex(clip_folder: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    ix = str(tmp_path / "ix")
    code, out, err = run(capsys, "index", str(clip_folder), "--index", ix)
    assert code == 0, err
    assert "Indexed 3 file(s), 0 unchanged, 0 failed" in out
    assert "hours indexed:" in out and "hours indeterminate:" in out
    assert err.count(": indexed ") == 3  # one status line per file

    code, out, _ = run(capsys, "files", "--index", ix)
    assert code == 0
    assert out.count("\nok ") + out.startswith("ok ") == 3
    assert "3 file(s): 3 ok" in out
    code, out, _ = run(capsys, "files", "--index", ix, "--json", str(clip_folder / "sub"))
    data = json.loads(out)
    assert len(data["files"]) == 2 and all(f["status"] == "ok" and len(f["sha256"]) == 64 for f in data["files"])

    code, out, _ = run(capsys, "index", str(clip_folder), "--index", ix, "--json")
    summary = json.loads(out)
    assert code == 0 and summary["skipped"] == 3 and summary["indexed"] == 0 and summary["failed"] == []


def test_bad_files_exit_4_with_reasons(bad_folder: tuple[Path, dict[str, Path]], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root, bad = bad_folder
    ix = str(tmp_path / "ix")
    code, out, err = run(capsys, "index", str(root), "--index", ix, "-q")
    assert code == 4
    assert "1 file(s), 0 unchanged, 5 failed" in out
    for p in bad.values():
        assert str(p) in out
    assert "Traceback" not in out + err
    code, out, _ = run(capsys, "files", "--index", ix, "--errors")
    assert code == 0 and out.count("error ") >= 5 and "good.mp4" not in out


def test_flags_reach_the_fingerprints(clip_folder: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    code, out, err = run(capsys, "index", str(clip_folder / "a.mp4"), "--index", str(ix), "--fps", "2",
                         "--crop-ladder", "", "--crop-edges", "top", "-q")
    assert code == 0
    assert "below 4" in err and "warning" in out
    with open_index(ix, readonly=True) as idx:
        ((f, _, fp),) = list(idx.streams())
        assert f.fps == 2.0 and fp.fps == 2.0
        assert not any(v.crop < 1.0 for v in fp.variants)
        assert any(v.edge == "top" for v in fp.variants)


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "index", str(tmp_path / "missing"), "--index", str(tmp_path / "ix"))
    assert code == 2 and "no such file or folder" in err
    code, _, err = run(capsys, "index", str(tmp_path), "--index", str(tmp_path / "ix"), "--fps", "0")
    assert code == 2 and "index.fps" in err
    code, _, err = run(capsys, "index", str(tmp_path), "--index", str(tmp_path / "ix"), "--crop-edges", "middle")
    assert code == 2 and "middle" in err


def test_ctrl_c_keeps_finished_files(clip_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from overlap_desktop.cli.commands import index as index_cmd

    original = index_cmd._Display.__call__

    def interrupt_after_first(self, p):  # type: ignore[no-untyped-def]
        original(self, p)
        if p.message:
            raise KeyboardInterrupt

    monkeypatch.setattr(index_cmd._Display, "__call__", interrupt_after_first)
    ix = tmp_path / "ix"
    code, out, _ = run(capsys, "index", str(clip_folder), "--index", str(ix))
    assert code == 130
    assert "Interrupted: kept 1 file(s)" in out and "run the same command again" in out
    monkeypatch.undo()
    code, out, _ = run(capsys, "index", str(clip_folder), "--index", str(ix))
    assert code == 0 and "Indexed 2 file(s), 1 unchanged" in out


def test_files_without_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "files", "--index", str(tmp_path / "none"))
    assert code == 0 and "No index" in err
    code, out, _ = run(capsys, "files", "--index", str(tmp_path / "none"), "--json")
    assert json.loads(out)["files"] == []


def test_doctor(clip_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    assert run(capsys, "index", str(clip_folder / "a.mp4"), "--index", str(ix), "-q")[0] == 0
    code, out, _ = run(capsys, "doctor", "--index", str(ix))
    assert code == 0, out
    for needle in ("Python", "PyAV", "FFmpeg", "pdqhash", "SQLite", "numpy", "Qt (PySide6)", "readers",
                   "index location", "free disk", "WAL support", "1 files"):
        assert needle in out
    code, out, _ = run(capsys, "doctor", "--index", str(ix), "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["WAL support"]["ok"] and "video" in checks["readers"]["value"]
    assert checks["pdqhash"]["detail"] == "hashes in batches, checked bit for bit against it"
    # An index on a network share is a needed thing missing: exit 3 with the reason.
    monkeypatch.setattr(lock_mod, "network_filesystem", lambda p: f"{p} is on a network filesystem (nfs)")
    code, out, _ = run(capsys, "doctor", "--index", str(ix))
    assert code == 3 and "Problems:" in out and "network" in out


def test_config_shows_index_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "--index", str(tmp_path / "ix"))
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("index.path"))
    assert str(tmp_path / "ix") in line and "command line" in line


def test_older_shard_layout_is_pointed_out_with_the_fix(clip_folder: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Shards in an earlier, slower layout still answer; `overlap index` and `overlap doctor` say
    how to rewrite them, and stop saying it once `--rebuild-shards` has."""
    ix = tmp_path / "ix"
    assert run(capsys, "index", str(clip_folder / "a.mp4"), "--index", str(ix), "-q")[0] == 0
    # Negative control: a freshly built index is in the current layout and gets no advice.
    code, out, _ = run(capsys, "doctor", "--index", str(ix), "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert code == 0 and checks["search shards"]["ok"] and checks["search shards"]["detail"] == "current layout"
    code, out, _ = run(capsys, "index", str(clip_folder / "a.mp4"), "--index", str(ix))
    assert code == 0 and "rebuild-shards" not in out

    assert rewrite_shards_as_format_3(ix) == 1
    with open_index(ix, readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 1
    code, out, _ = run(capsys, "index", str(clip_folder / "a.mp4"), "--index", str(ix))
    assert code == 0 and "1 of 1 search shards were written by an earlier version" in out
    assert "`overlap index --rebuild-shards`" in out
    assert "under a minute for this library" in out  # a few seconds of footage
    code, out, _ = run(capsys, "doctor", "--index", str(ix))
    # A warning, not a failure: the shards still answer.
    assert code == 0 and "[warn] search shards" in out and "1 of 1 written by an earlier version" in out
    assert "can miss short copies of fast-moving footage" in out
    assert "--rebuild-shards" in out and "under a minute for this library" in out

    code, out, err = run(capsys, "index", "--rebuild-shards", "--index", str(ix))
    assert code == 0 and "Rebuilt the search shards" in out
    assert "Search shards: building search shard 1 (" in err and "% of the fingerprints read)" in err
    with open_index(ix, readonly=True) as idx:
        assert idx.stats()["shards_older_layout"] == 0
    code, out, _ = run(capsys, "doctor", "--index", str(ix))
    assert code == 0 and "[ok  ] search shards" in out and "earlier version" not in out
