"""``overlap demo``: the README's first command runs end to end and its report finds what
was planted (a 0.5x slowed copy, a mirrored copy, a zoom-cropped copy) and nothing in the
new footage."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.errors import Cancelled, ExitCode

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run ``overlap demo --out DIR`` once per session, in-process."""
    out = tmp_path_factory.mktemp("demo") / "overlap-demo"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["demo", "--out", str(out)])
    report_json = out / "report.json"
    data = json.loads(report_json.read_text(encoding="utf-8")) if report_json.is_file() else {}
    return {"code": code, "out": out, "stdout": stdout.getvalue(), "stderr": stderr.getvalue(),
            "report": data}


def _file(report: dict[str, Any], name: str) -> dict[str, Any]:
    for f in report["files"]:
        if Path(f["query_file"]).name == name:
            return f
    raise AssertionError(f"{name} not in the report: {[f['query_file'] for f in report['files']]}")


def _main_segment(f: dict[str, Any]) -> dict[str, Any]:
    assert f["segments"], f"no matched segment in {f['query_file']}: {f}"
    return max(f["segments"], key=lambda s: s["query_end"] - s["query_start"])


def test_demo_exits_0_and_prints_where_the_report_is(demo_run: dict[str, Any]) -> None:
    assert demo_run["code"] == 0, demo_run["stderr"]
    out: Path = demo_run["out"]
    for name in ("report.html", "report.json", "demo-offer.ovlm"):
        assert (out / name).is_file(), name
        assert str(out / name) in demo_run["stdout"]
    assert demo_run["report"]["schema"].startswith("overlap.report/")
    # Each step is announced on stderr (progress), the results go to stdout.
    assert "[1/6] Generating demo footage" in demo_run["stderr"]
    assert "[6/6] Writing the report" in demo_run["stderr"]
    assert demo_run["report"]["headline"] in demo_run["stdout"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "vendor-0001.mp4" in html


def test_demo_report_finds_the_slowed_copy(demo_run: dict[str, Any]) -> None:
    f = _file(demo_run["report"], "vendor-0001.mp4")
    seg = _main_segment(f)
    assert Path(seg["corpus_file"]).name == "bench-pick-001.mp4"
    assert 0.4 <= seg["speed"] <= 0.6
    assert "slowdown" in f["flags"]
    # 12 s of owned footage (3..15 s) was slowed to fill 24 s of the offer.
    assert f["matched_seconds"] >= 15.0
    assert f["real_footage_seconds"] < 0.75 * f["matched_seconds"]
    lo, hi = sorted((seg["corpus_start"], seg["corpus_end"]))
    assert 1.0 <= lo <= 6.0 and 12.0 <= hi <= 16.0


def test_demo_report_finds_the_mirrored_copy(demo_run: dict[str, Any]) -> None:
    f = _file(demo_run["report"], "vendor-0002.mp4")
    seg = _main_segment(f)
    assert Path(seg["corpus_file"]).name == "bench-pick-002.mp4"
    assert seg["variant"]["mirrored"] is True
    assert 0.9 <= seg["speed"] <= 1.1
    assert "mirror" in f["flags"]
    assert f["matched_seconds"] >= 10.0


def test_demo_report_finds_the_cropped_copy(demo_run: dict[str, Any]) -> None:
    from overlap_desktop.services.demo import DEMO_CROP

    f = _file(demo_run["report"], "vendor-0003.mp4")
    seg = _main_segment(f)
    assert Path(seg["corpus_file"]).name == "shelf-sort-001.mp4"
    assert seg["variant"]["mirrored"] is False
    assert seg["variant"]["crop"] is not None
    assert abs(seg["variant"]["crop"] - DEMO_CROP) <= 0.02
    assert "crop" in f["flags"]
    assert f["matched_seconds"] >= 10.0


def test_demo_report_does_not_match_the_new_footage(demo_run: dict[str, Any]) -> None:
    report = demo_run["report"]
    f = _file(report, "vendor-0004.mp4")
    assert f["segments"] == []
    assert f["matched_seconds"] == 0.0
    assert report["counts"]["files"] == 4
    assert report["counts"]["matched_files"] == 3
    # Planted truth: 55 of 75 offered seconds are owned footage (73%).
    assert 55.0 <= report["overlap_percent"] <= 80.0


def test_demo_crop_is_caught_by_the_default_settings() -> None:
    from overlap_desktop.config import SETTINGS
    from overlap_desktop.core.ingest.fingerprint import PRESET_LADDERS
    from overlap_desktop.services.demo import DEMO_CROP

    # The demo promises that the defaults catch its zoom-crop: keep it on a default rung.
    assert DEMO_CROP in PRESET_LADDERS[SETTINGS["index.preset"].default()]


def test_demo_refuses_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("not a demo", encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["demo", "--out", str(tmp_path), "-q"])
    assert code == ExitCode.USAGE
    assert "not made by `overlap demo`" in err.getvalue()
    assert (tmp_path / "precious.txt").read_text(encoding="utf-8") == "not a demo"


def test_demo_rerun_clears_only_its_own_folder(tmp_path: Path) -> None:
    from overlap_desktop.services.demo import MARKER, _prepare

    out = tmp_path / "demo"
    _prepare(out)
    (out / "lab-index").mkdir()
    (out / "lab-index" / "old.db").write_bytes(b"x")
    (out / "report.json").write_text("{}", encoding="utf-8")
    _prepare(out)  # a previous demo: cleared, marker kept
    assert sorted(p.name for p in out.iterdir()) == [MARKER]


def test_demo_cancel_stops_before_work(tmp_path: Path) -> None:
    from overlap_desktop.api import run_demo

    with pytest.raises(Cancelled):
        run_demo(tmp_path / "demo", cancel=lambda: True)
    assert not (tmp_path / "demo" / "report.json").exists()


def test_demo_report_names_the_demo_library_not_yours(demo_run: dict[str, Any]) -> None:
    """Issue 34 item 12: the demo compares with its own sample library (an empty profile has no
    footage of its own), so neither the headline nor the HTML may say "you already own"."""
    report = demo_run["report"]
    assert report["settings"]["owned_library"] == "demo"
    assert "demo's sample library (not yours)" in report["headline"]
    assert "you already own" not in report["headline"]
    assert "you already own" not in demo_run["stdout"]
    html = (demo_run["out"] / "report.html").read_text(encoding="utf-8")
    assert "of offered time matches the demo&#39;s sample library" in html
    assert "matches footage you own" not in html and "you already own" not in html
