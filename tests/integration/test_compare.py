"""End to end through the public API: index owned footage, index and export an offer,
compare. Generated footage (tests/footage.py), small and short; built once per module.

Offered files are re-rendered from the owned scene with the manipulation applied, then
encoded on their own (so every offered file is also a re-encode).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop import api
from overlap_desktop.config import load_config
from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.errors import ManifestError
from tests.footage import Scene, render_frames, write_video

FPS = 12
SIZE = (192, 144)


def _clip(path: Path, scene: Scene, seconds: float, *, t0: float = 0.0, speed: float = 1.0,
          transform: Any = None, options: dict[str, str] | None = None) -> None:
    write_video(path, render_frames(scene, duration=seconds, fps=FPS, size=SIZE, t0=t0, speed=speed,
                                    transform=transform), fps=FPS, options=options)


def _concat(path: Path, parts: list[tuple[Scene, float, float]]) -> None:
    frames: list[np.ndarray] = []
    for scene, t0, secs in parts:
        frames.extend(render_frames(scene, duration=secs, fps=FPS, size=SIZE, t0=t0))
    write_video(path, frames, fps=FPS)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("compare")
    own, offer = root / "own", root / "offer"
    a, b, new = Scene(1), Scene(2), Scene(9)
    _clip(own / "A.mp4", a, 40.0)
    _clip(own / "B.mp4", b, 20.0)
    _clip(offer / "trim.mp4", a, 15.0, t0=10.0)
    _concat(offer / "splice.mp4", [(a, 0.0, 12.0), (a, 25.0, 12.0)])
    _concat(offer / "two_masters.mp4", [(a, 3.0, 12.0), (b, 4.0, 12.0)])
    _concat(offer / "owned_new.mp4", [(a, 10.0, 15.0), (new, 3.0, 15.0)])
    _clip(offer / "slow.mp4", a, 24.0, t0=5.0, speed=0.5)
    _clip(offer / "fast.mp4", a, 15.0, t0=2.0, speed=2.0)
    _clip(offer / "reversed.mp4", a, 20.0, t0=35.0, speed=-1.0)
    _clip(offer / "mirror.mp4", a, 20.0, t0=5.0, transform=lambda x: np.ascontiguousarray(x[:, ::-1]))
    _clip(offer / "reencode.mp4", a, 20.0, t0=8.0, options={"preset": "ultrafast", "crf": "40"})
    _clip(offer / "unrelated.mp4", new, 20.0)
    _clip(offer / "short.mp4", a, 6.0, t0=20.0)
    config = load_config()
    api.index_paths([own], index=root / "idx_own", config=config)
    api.index_paths([offer], index=root / "idx_offer", config=config)
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    report = api.compare(root / "offer.ovlm", root / "idx_own", config=config)
    return {"root": root, "config": config, "report": report, "own": own, "offer": offer}


def _file(report: Report, name: str) -> FileResult:
    for f in report.files:
        if Path(f.query_file).name == name:
            return f
    raise AssertionError(f"{name} not in report: {[f.query_file for f in report.files]}")


def _one(report: Report, name: str, corpus: str = "A.mp4") -> Any:
    f = _file(report, name)
    assert len(f.segments) == 1, f.segments
    s = f.segments[0]
    assert Path(s.corpus_file).name == corpus
    return s


def test_trim(world: dict[str, Any]) -> None:
    s = _one(world["report"], "trim.mp4")
    assert (s.query_start, s.query_end) == (pytest.approx(0, abs=1), pytest.approx(15, abs=1))
    assert (s.corpus_start, s.corpus_end) == (pytest.approx(10, abs=1), pytest.approx(25, abs=1))
    assert s.speed == pytest.approx(1.0, rel=0.03)
    assert s.variant.is_identity
    assert _file(world["report"], "trim.mp4").flags == []
    assert s.pairs is not None and s.pairs.shape[1] == 3 and len(s.pairs) >= 10


def test_splice_two_cuts_of_one_master(world: dict[str, Any]) -> None:
    f = _file(world["report"], "splice.mp4")
    assert [Path(s.corpus_file).name for s in f.segments] == ["A.mp4", "A.mp4"]
    assert [s.corpus_start for s in f.segments] == [pytest.approx(0, abs=1), pytest.approx(25, abs=1)]
    assert [s.query_start for s in f.segments] == [pytest.approx(0, abs=1), pytest.approx(12, abs=1)]
    assert "splice" in f.flags
    assert f.matched_percent == pytest.approx(100, abs=5)


def test_two_masters(world: dict[str, Any]) -> None:
    f = _file(world["report"], "two_masters.mp4")
    got = [(Path(s.corpus_file).name, round(s.corpus_start)) for s in f.segments]
    assert [g[0] for g in got] == ["A.mp4", "B.mp4"]
    assert [s.corpus_start for s in f.segments] == [pytest.approx(3, abs=1), pytest.approx(4, abs=1)]


def test_owned_plus_new_counts_only_the_owned_share(world: dict[str, Any]) -> None:
    f = _file(world["report"], "owned_new.mp4")
    assert len(f.segments) == 1
    assert f.matched_seconds == pytest.approx(15, abs=1)
    assert f.duration_s == pytest.approx(30, abs=0.2)
    assert f.matched_percent == pytest.approx(50, abs=4)


@pytest.mark.parametrize(("name", "speed", "c0", "c1", "flag"), [
    ("slow.mp4", 0.5, 5.0, 17.0, "slowdown"),
    ("fast.mp4", 2.0, 2.0, 32.0, "speedup"),
    ("reversed.mp4", -1.0, 35.0, 15.0, "reversed"),
])
def test_speed_changes(world: dict[str, Any], name: str, speed: float, c0: float, c1: float, flag: str) -> None:
    s = _one(world["report"], name)
    assert s.speed == pytest.approx(speed, rel=0.03)
    assert s.corpus_start == pytest.approx(c0, abs=1)
    assert s.corpus_end == pytest.approx(c1, abs=1)
    f = _file(world["report"], name)
    assert flag in f.flags
    # Real footage behind a speed-changed copy: owned seconds, not offered seconds.
    assert f.real_footage_seconds == pytest.approx(abs(c1 - c0), abs=1.5)


def test_mirror_reports_the_variant(world: dict[str, Any]) -> None:
    s = _one(world["report"], "mirror.mp4")
    assert s.variant.mirrored
    assert s.corpus_start == pytest.approx(5, abs=1)
    assert "mirror" in _file(world["report"], "mirror.mp4").flags


def test_heavy_reencode(world: dict[str, Any]) -> None:
    s = _one(world["report"], "reencode.mp4")
    assert s.corpus_start == pytest.approx(8, abs=1)
    assert s.query_duration == pytest.approx(20, abs=1)


def test_unrelated_is_not_matched(world: dict[str, Any]) -> None:
    f = _file(world["report"], "unrelated.mp4")
    assert f.segments == [] and f.below_floor == [] and f.matched_seconds == 0


def test_clip_below_floor_is_listed_not_counted(world: dict[str, Any]) -> None:
    f = _file(world["report"], "short.mp4")
    assert f.segments == [] and f.matched_seconds == 0
    assert len(f.below_floor) == 1
    assert f.below_floor[0].corpus_start == pytest.approx(20, abs=1)


def test_report_totals_and_settings(world: dict[str, Any]) -> None:
    r = world["report"]
    assert r.kind == "compare"
    assert r.offered_seconds == pytest.approx(sum(f.duration_s for f in r.files))
    assert r.matched_seconds == pytest.approx(sum(f.matched_seconds for f in r.files))
    assert 0 < r.overlap_percent < 100
    s = r.settings
    assert s["floor_seconds"] == 10.0 and s["algo"] and s["prep"] and s["index"]["identity"]
    assert r.manifest["files"] == 11
    # The report says which orientations of the offer were searched, and in the JSON a buyer keeps.
    turned = s["search"]["orientations"]["turned_at_compare_time"]
    assert len(turned) == s["search"]["orientations"]["turned_search_space_factor"] == 3
    assert api.report_to_dict(r)["settings"]["search"]["orientations"]["turned_at_compare_time"] == turned


def test_floor_can_be_lowered(world: dict[str, Any]) -> None:
    r = api.compare(world["root"] / "offer.ovlm", world["root"] / "idx_own", config=world["config"],
                    floor_seconds=5.0)
    assert len(_file(r, "short.mp4").segments) == 1


def test_algo_or_prep_mismatch_is_refused(world: dict[str, Any]) -> None:
    m = api.read_manifest(world["root"] / "offer.ovlm")
    bad = dataclasses.replace(m, prep_id="other-prep-v9")
    with pytest.raises(ManifestError) as exc:
        api.compare(bad, world["root"] / "idx_own", config=world["config"])
    assert "other-prep-v9" in str(exc.value) and m.prep_id in str(exc.value)


def test_compare_offers(world: dict[str, Any]) -> None:
    root = world["root"]
    api.export_manifest(root / "idx_own", root / "own.ovlm", config=world["config"])
    r = api.compare_offers(root / "offer.ovlm", root / "own.ovlm", config=world["config"])
    assert r.kind == "compare-offers"
    s = _one(r, "trim.mp4")
    assert s.corpus_start == pytest.approx(10, abs=1)
    assert _one(r, "slow.mp4").speed == pytest.approx(0.5, rel=0.03)
    assert _file(r, "unrelated.mp4").segments == []
    assert r.settings["other_manifest"]["files"] == 2


def test_self_dedupe(world: dict[str, Any]) -> None:
    root = world["root"]
    d = root / "dedupe"
    d.mkdir()
    shutil.copy(world["own"] / "A.mp4", d / "a_master.mp4")
    shutil.copy(world["offer"] / "trim.mp4", d / "b_trim.mp4")
    shutil.copy(world["offer"] / "unrelated.mp4", d / "c_other.mp4")
    api.index_paths([d], index=root / "idx_dedupe", config=world["config"])
    r = api.self_dedupe(root / "idx_dedupe", config=world["config"])
    assert r.kind == "self-dedupe"
    # The trim is reported once, on the later copy; nothing matches itself trivially.
    assert _file(r, "a_master.mp4").segments == []
    s = _one(r, "b_trim.mp4", corpus="a_master.mp4")
    assert s.corpus_start == pytest.approx(10, abs=1)
    assert _file(r, "c_other.mp4").segments == []
    assert r.matched_seconds == pytest.approx(15, abs=1)


def test_audit_sample(world: dict[str, Any]) -> None:
    root = world["root"]
    sample = root / "sample"
    sample.mkdir()
    shutil.copy(world["offer"] / "trim.mp4", sample / "shown.mp4")
    _clip(sample / "never_offered.mp4", Scene(12), 12.0)
    r = api.audit_sample(root / "offer.ovlm", sample, config=world["config"])
    assert r.kind == "audit"
    assert _file(r, "shown.mp4").matched_percent == pytest.approx(100, abs=7)
    assert _file(r, "never_offered.mp4").matched_seconds == 0


def test_progress_and_cancel(world: dict[str, Any]) -> None:
    from overlap_desktop.errors import Cancelled

    seen: list[str] = []
    api.compare(world["root"] / "offer.ovlm", world["root"] / "idx_own", config=world["config"],
                progress=lambda p: seen.append(p.stage))
    assert "search" in seen and "match" in seen
    with pytest.raises(Cancelled):
        api.compare(world["root"] / "offer.ovlm", world["root"] / "idx_own", config=world["config"],
                    cancel=lambda: True)
