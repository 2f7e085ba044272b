"""The report commands end to end on generated footage, in-process through ``main``:
index -> export -> compare / self-dedupe / compare-offers / audit, with exit codes
0 / 3 / 4 and the report files."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.errors import ExitCode
from tests.footage import make_clip

pytestmark = pytest.mark.slow

SIZE = (160, 120)
FPS = 12.0


def run(argv: list[str]) -> int:
    return main([*argv, "-q"])


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Owned footage (lab index), an offer (vendor index + manifest) and a sample.

    owned/a.mp4   scene 11, 30 s
    owned/b.mp4   scene 12, 20 s
    offer/slow.mp4  scene 11 from 4 s, slowed to 0.5x, 24 s long (12 s of a.mp4)
    offer/new.mp4   scene 13, 20 s, never owned
    """
    root = tmp_path_factory.mktemp("cli-compare")
    owned, offer, sample = root / "owned", root / "offer", root / "sample"
    make_clip(owned / "a.mp4", 11, duration=30, fps=FPS, size=SIZE)
    make_clip(owned / "b.mp4", 12, duration=20, fps=FPS, size=SIZE)
    make_clip(offer / "slow.mp4", 11, duration=24, fps=FPS, size=SIZE, t0=4.0, speed=0.5)
    make_clip(offer / "new.mp4", 13, duration=20, fps=FPS, size=SIZE)
    sample.mkdir()
    shutil.copy(offer / "new.mp4", sample / "shown.mp4")
    lab, vendor = root / "lab-index", root / "vendor-index"
    assert run(["index", str(owned), "--index", str(lab)]) == 0
    assert run(["index", str(offer), "--index", str(vendor)]) == 0
    manifest = root / "offer.ovlm"
    assert run(["export", "-o", str(manifest), "--label", "Q3 <b>teleop</b>", "--index", str(vendor)]) == 0
    owned_manifest = root / "owned.ovlm"
    assert run(["export", "-o", str(owned_manifest), "--index", str(lab)]) == 0
    return {"root": root, "owned": owned, "offer": offer, "sample": sample, "lab": lab, "vendor": vendor,
            "manifest": manifest, "owned_manifest": owned_manifest}


def _file(report: dict[str, Any], name: str) -> dict[str, Any]:
    for f in report["files"]:
        if Path(f["query_file"]).name == name:
            return f
    raise AssertionError(f"{name} not in {[f['query_file'] for f in report['files']]}")


@pytest.fixture(scope="session")
def compared(world: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("compare-out")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = run(["compare", str(world["manifest"]), "--index", str(world["lab"]),
                    "-o", str(out / "r.json"), "--html", str(out / "r.html"), "--csv", str(out / "r.csv")])
    return {"code": code, "out": out, "stdout": buf.getvalue(),
            "report": json.loads((out / "r.json").read_text(encoding="utf-8"))}


def test_compare_finds_the_slowed_copy_and_not_the_new_footage(compared: dict[str, Any]) -> None:
    assert compared["code"] == 0
    r = compared["report"]
    assert r["schema"] == "overlap.report/5" and r["kind"] == "compare"
    slow, new = _file(r, "slow.mp4"), _file(r, "new.mp4")
    assert slow["matched_percent"] > 70
    seg = max(slow["segments"], key=lambda s: s["query_end"] - s["query_start"])
    assert seg["speed"] == pytest.approx(0.5, abs=0.05)
    assert Path(seg["corpus_file"]).name == "a.mp4"
    assert "slowed to 0.5x" in slow["flags_text"]
    assert slow["real_footage_seconds"] == pytest.approx(slow["matched_seconds"] / 2, rel=0.15)
    assert new["matched_percent"] == 0 and new["segments"] == []
    # 24 s of the 44 s offered are a copy.
    assert r["overlap_percent"] == pytest.approx(100 * 24 / 44, abs=12)
    assert r["settings"]  # algo, prep, floor, index identity...


def test_compare_prints_headline_and_file_lines(compared: dict[str, Any]) -> None:
    lines = compared["stdout"].splitlines()
    assert lines[0] == compared["report"]["headline"]
    assert lines[0].endswith("matches footage you already own.")  # a 44 s offer: "of this footage"
    assert any("slow.mp4" in ln and "slowed to 0.5x" in ln for ln in lines)


def test_compare_html_and_csv(compared: dict[str, Any]) -> None:
    html = (compared["out"] / "r.html").read_text(encoding="utf-8")
    assert compared["report"]["headline"] in html and "<svg" in html and "<script" not in html
    assert "<b>teleop</b>" not in html  # the label from the manifest is escaped
    with open(compared["out"] / "r.csv", newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    assert any(row["kind"] == "segment" and row["query_file"].endswith("slow.mp4") for row in rows)


def test_fail_over_exit_codes(world: dict[str, Path], compared: dict[str, Any]) -> None:
    pct = compared["report"]["overlap_percent"]
    base = ["compare", str(world["manifest"]), "--index", str(world["lab"])]
    assert run([*base, "--fail-over", f"{max(0.0, pct - 5):.2f}"]) == ExitCode.CHECK_FAILED
    assert run([*base, "--fail-over", f"{min(100.0, pct + 5):.2f}"]) == ExitCode.OK


def test_refused_manifests_exit_4(world: dict[str, Path], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.ovlm"
    garbage.write_bytes(b"this is not a manifest at all" * 10)
    truncated = tmp_path / "truncated.ovlm"
    data = world["manifest"].read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    flipped = tmp_path / "flipped.ovlm"
    mutable = bytearray(data)
    mutable[len(mutable) // 2] ^= 0x40
    flipped.write_bytes(bytes(mutable))
    for bad in (garbage, truncated, flipped):
        assert run(["compare", str(bad), "--index", str(world["lab"]), "--fail-over", "50",
                    "-o", str(tmp_path / "r.json")]) == ExitCode.INPUT_REFUSED, bad
        err = capsys.readouterr().err
        assert str(bad) in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_self_dedupe(world: dict[str, Path], tmp_path: Path) -> None:
    dup = tmp_path / "dup-index"
    assert run(["index", str(world["owned"]), str(world["offer"] / "slow.mp4"), "--index", str(dup)]) == 0
    out = tmp_path / "d.json"
    assert run(["self-dedupe", "--index", str(dup), "-o", str(out), "--html", str(tmp_path / "d.html")]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["kind"] == "self-dedupe"
    assert _file(r, "slow.mp4")["matched_percent"] > 70
    assert _file(r, "b.mp4")["matched_percent"] == 0  # no file matches itself
    assert run(["self-dedupe", "--index", str(dup), "--fail-over", "1"]) == ExitCode.CHECK_FAILED


def test_compare_offers(world: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    assert run(["compare-offers", str(world["manifest"]), str(world["owned_manifest"]), "-o", str(out)]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["kind"] == "compare-offers"
    assert sorted(Path(f["query_file"]).name for f in r["files"]) == ["new.mp4", "slow.mp4"]
    assert _file(r, "new.mp4")["matched_percent"] == 0
    assert _file(r, "slow.mp4")["matched_percent"] > 50
    garbage = tmp_path / "g.ovlm"
    garbage.write_bytes(b"\0" * 64)
    assert run(["compare-offers", str(world["manifest"]), str(garbage)]) == ExitCode.INPUT_REFUSED


def test_audit(world: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "audit.json"
    # The sample shown (a copy of offer/new.mp4) is in the offer's manifest.
    assert run(["audit", str(world["manifest"]), "--sample", str(world["sample"]), "-o", str(out)]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["kind"] == "audit" and _file(r, "shown.mp4")["matched_percent"] > 80
    # Owned footage b.mp4 shown as a "sample" is not in the offer: exit 3.
    other = tmp_path / "other-sample"
    other.mkdir()
    shutil.copy(world["owned"] / "b.mp4", other / "b.mp4")
    assert run(["audit", str(world["manifest"]), "--sample", str(other)]) == ExitCode.CHECK_FAILED


def test_merged_index_compares_like_the_original(world: dict[str, Path], compared: dict[str, Any],
                                                 tmp_path: Path) -> None:
    merged = tmp_path / "merged"
    assert run(["merge", str(world["lab"]), "--index", str(merged)]) == 0
    out = tmp_path / "m.json"
    assert run(["compare", str(world["manifest"]), "--index", str(merged), "-o", str(out)]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["overlap_percent"] == pytest.approx(compared["report"]["overlap_percent"], abs=0.5)


def test_hostile_file_names_survive_the_whole_pipeline(world: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A vendor controls file names and the label: through index, export and compare they must
    reach the HTML escaped and the terminal neutralised."""
    offer = tmp_path / "offer"
    offer.mkdir()
    hostile = "clip\u202e4pm.exe<script>alert(1)<script>.mp4"  # no "/": it is a file name
    shutil.copy(world["offer"] / "slow.mp4", offer / hostile)
    vendor, manifest = tmp_path / "vendor", tmp_path / "hostile.ovlm"
    assert run(["index", str(offer), "--index", str(vendor)]) == 0
    assert run(["export", "-o", str(manifest), "--label", "<img src=x onerror=alert(1)>\u202e",
                "--index", str(vendor)]) == 0
    capsys.readouterr()
    html = tmp_path / "r.html"
    assert run(["compare", str(manifest), "--index", str(world["lab"]), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    text = html.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\u202e" not in out
    assert "<script" not in text and "<img" not in text
    assert "clip[U+202E]4pm.exe&lt;script&gt;" in text
    assert "clip[U+202E]4pm.exe<script>" in out


def test_audit_coverage_rule_is_the_apis() -> None:
    """``overlap audit``'s verdict comes from ``api.uncovered_files`` (judgeable time only)."""
    from types import SimpleNamespace

    from overlap_desktop import api
    from overlap_desktop.cli.commands import audit

    def f(name: str, duration: float, matched: float, indeterminate: float = 0.0) -> SimpleNamespace:
        return SimpleNamespace(query_file=name, duration_s=duration, matched_seconds=matched,
                               indeterminate_seconds=indeterminate)

    files = [f("exact", 10.0, 8.0), f("short", 10.0, 7.9), f("static-half", 10.0, 4.0, 5.0), f("static", 6.0, 0.0, 6.0)]
    short, unjudged = api.uncovered_files(SimpleNamespace(files=files), 80.0)  # type: ignore[arg-type]
    assert [x.query_file for x in short] == ["short"] and [x.query_file for x in unjudged] == ["static"]
    assert api.covered_percent(files[2]) == pytest.approx(80.0) and api.covered_percent(files[3]) is None
    assert audit.uncovered_files is api.uncovered_files and audit.DEFAULT_REQUIRE == api.DEFAULT_REQUIRE == 80.0
