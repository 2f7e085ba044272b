"""The report commands' shell logic (outputs, printed lines, exit codes) with the matcher
stubbed by hand-built reports. End-to-end runs on real footage are in
tests/integration/test_cli_compare.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.errors import ExitCode, ManifestError
from tests.unit.test_report import HOSTILE, sample_report, seg


@pytest.fixture()
def manifest(tmp_path: Path) -> Path:
    p = tmp_path / "offer.ovlm"
    p.write_bytes(b"stub")
    return p


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def stub(name: str, kind: str) -> Any:
        def fn(*args: Any, **kw: Any) -> Report:
            seen.append((name, args, kw))
            return sample_report(kind)
        return fn

    monkeypatch.setattr(api, "compare", stub("compare", "compare"), raising=False)
    monkeypatch.setattr(api, "self_dedupe", stub("self_dedupe", "self-dedupe"), raising=False)
    monkeypatch.setattr(api, "compare_offers", stub("compare_offers", "compare-offers"), raising=False)
    monkeypatch.setattr(api, "audit_sample", stub("audit_sample", "audit"), raising=False)
    return seen


def test_compare_writes_all_outputs_and_prints_headline(tmp_path: Path, manifest: Path, calls: list,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    rc = main(["compare", str(manifest), "-o", str(out / "r.json"), "--html", str(out / "r.html"),
               "--csv", str(out / "r.csv"), "--floor", "7.5", "--index", str(tmp_path / "ix"), "-q"])
    assert rc == 0
    (name, args, kw), = calls
    assert name == "compare" and args[0] == manifest and kw["floor_seconds"] == 7.5
    assert Path(args[1]) == tmp_path / "ix"  # --index reaches the core
    text = capsys.readouterr()
    lines = text.out.splitlines()
    assert lines[0] == "31% of this footage (2.5 of 8.0 min) matches footage you already own."
    assert lines[1].startswith("New footage you would get: ")  # the stub report never checked for repeats
    assert any("offer/ep1.mp4" in ln and "slowed to 0.5x" in ln and "spliced from 2 sources" in ln
               for ln in lines)
    assert any("1 match below the evidence floor" in ln for ln in lines)
    assert "\u202e" not in text.out and "\x1b" not in text.out  # hostile names cannot drive the terminal
    assert json.loads((out / "r.json").read_text())["schema"] == "overlap.report/5"
    assert (out / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert (out / "r.csv").stat().st_size > 0
    assert "JSON report written to" in text.err


@pytest.mark.parametrize(("threshold", "code"), [("31.3", 0), ("31.25", 3), ("31", 3), ("0", 3), ("90", 0)])
def test_fail_over_gate(manifest: Path, calls: list, threshold: str, code: int,
                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(manifest), "--fail-over", threshold, "-q"]) == code
    if code == 3:
        assert "at or above --fail-over" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["-5", "101", "lots"])
def test_fail_over_must_be_a_percentage(manifest: Path, calls: list, bad: str) -> None:
    assert main(["compare", str(manifest), "--fail-over", bad, "-q"]) == ExitCode.USAGE
    assert calls == []


def test_refused_manifest_exits_4(manifest: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(*a: Any, **k: Any) -> Report:
        raise ManifestError("bad magic: not an overlap manifest", path=manifest)

    monkeypatch.setattr(api, "compare", refuse, raising=False)
    assert main(["compare", str(manifest), "--fail-over", "10", "-q"]) == ExitCode.INPUT_REFUSED
    err = capsys.readouterr().err
    assert "bad magic" in err and str(manifest) in err


def test_missing_manifest_is_a_usage_error(tmp_path: Path, calls: list) -> None:
    assert main(["compare", str(tmp_path / "nope.ovlm"), "-q"]) == ExitCode.USAGE
    assert calls == []


def test_other_report_commands(tmp_path: Path, manifest: Path, calls: list,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["self-dedupe", "-o", str(tmp_path / "d.json"), "--fail-over", "50", "-q"]) == 0
    assert "duplicate other footage" in capsys.readouterr().out
    assert main(["self-dedupe", "--fail-over", "30", "-q"]) == 3
    other = tmp_path / "b.ovlm"
    other.write_bytes(b"stub")
    assert main(["compare-offers", str(manifest), str(other), "--html", str(tmp_path / "ab.html"), "-q"]) == 0
    assert "also appear in offer B" in capsys.readouterr().out
    assert calls[-1][0] == "compare_offers" and calls[-1][1][:2] == (manifest, other)
    assert main(["compare-offers", str(manifest), str(tmp_path / "missing.ovlm"), "-q"]) == ExitCode.USAGE


def _audit_report(*files: FileResult) -> Report:
    return Report("audit", sum(f.duration_s for f in files), sum(f.matched_seconds for f in files),
                  sum(f.real_footage_seconds for f in files), files=list(files),
                  settings={"floor_seconds": 10.0})


@pytest.mark.parametrize(("files", "require", "code"), [
    # fully covered sample -> 0
    ([FileResult("s1.mp4", 30.0, 30.0, 30.0, segments=[seg(0, 30, 0, qf="s1.mp4")])], None, 0),
    # one sample file not in the manifest -> 3
    ([FileResult("s1.mp4", 30.0, 30.0, 30.0, segments=[seg(0, 30, 0, qf="s1.mp4")]),
      FileResult("s2.mp4", 30.0)], None, 3),
    # 70% covered: fails the default 80, passes --require 60
    ([FileResult("s1.mp4", 30.0, 21.0, 21.0, segments=[seg(0, 21, 0, qf="s1.mp4")])], None, 3),
    ([FileResult("s1.mp4", 30.0, 21.0, 21.0, segments=[seg(0, 21, 0, qf="s1.mp4")])], "60", 0),
    # wholly static file (made indeterminate below): not judged, does not fail
    ([FileResult("idle.mp4", 20.0)], None, 0),
    # nothing readable in the sample -> 3
    ([], None, 3),
])
def test_audit_exit_status(tmp_path: Path, manifest: Path, monkeypatch: pytest.MonkeyPatch,
                           files: list[FileResult], require: str | None, code: int) -> None:
    from overlap_desktop.core.types import Span

    fixed = [FileResult(f.query_file, f.duration_s, indeterminate=[Span(0.0, 20.0, "static")])
             if f.query_file == "idle.mp4" else f for f in files]
    monkeypatch.setattr(api, "audit_sample", lambda *a, **k: _audit_report(*fixed), raising=False)
    sample = tmp_path / "sample"
    sample.mkdir()
    argv = ["audit", str(manifest), "--sample", str(sample), "-q"]
    if require:
        argv += ["--require", require]
    assert main(argv) == code


def test_hostile_names_in_terminal_output(manifest: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = FileResult(HOSTILE, 20.0, 20.0, 20.0, segments=[seg(0, 20, 0, qf=HOSTILE)])
    monkeypatch.setattr(api, "compare", lambda *a, **k: Report("compare", 20.0, 20.0, 20.0, files=[f]),
                        raising=False)
    assert main(["compare", str(manifest), "-q"]) == 0
    out = capsys.readouterr().out
    assert "[U+202E]" in out and "[U+001B]" in out
    assert all(ord(ch) >= 32 or ch == "\n" for ch in out)
