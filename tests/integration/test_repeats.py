"""Screening compares an offer with itself: a file that is another offered file slowed
down is a repeat (listed once, not new footage); an offer of distinct footage has none.

Generated footage (tests/footage.py), small and short; each world is built once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.config import load_config
from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.core.report.segment_words import describe_flags
from overlap_desktop.core.report.wording import new_footage_sentence
from tests.footage import Scene, render_frames, write_video

FPS = 12
SIZE = (192, 144)


def _clip(path: Path, scene: Scene, seconds: float, *, t0: float = 0.0, speed: float = 1.0) -> None:
    write_video(path, render_frames(scene, duration=seconds, fps=FPS, size=SIZE, t0=t0, speed=speed), fps=FPS)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("library")
    _clip(root / "own" / "owned.mp4", Scene(21), 20.0)  # the lab owns something unrelated
    api.index_paths([root / "own"], index=root / "idx_own", config=load_config())
    return root / "idx_own"


def _screen(root: Path, offer: Path, library: Path) -> Report:
    config = load_config()
    api.index_paths([offer], index=root / "idx_offer", config=config)
    api.export_manifest(root / "idx_offer", root / "offer.ovlm", config=config)
    return api.compare(root / "offer.ovlm", library, config=config)


def _file(report: Report, name: str) -> FileResult:
    (f,) = [f for f in report.files if Path(f.query_file).name == name]
    return f


@pytest.fixture(scope="module")
def padded(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Report:
    root = tmp_path_factory.mktemp("repeats")
    offer = root / "offer"
    a = Scene(11)
    _clip(offer / "a.mp4", a, 15.0)
    _clip(offer / "b.mp4", a, 30.0, speed=0.5)  # a slowed to half speed: 30 s of a's 15 s
    _clip(offer / "c.mp4", Scene(12), 20.0)  # genuinely new
    return _screen(root, offer, library)


@pytest.fixture(scope="module")
def distinct(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Report:
    root = tmp_path_factory.mktemp("distinct")
    offer = root / "offer"
    for i, seed in enumerate((31, 32, 33)):
        _clip(offer / f"d{i}.mp4", Scene(seed), 15.0)
    return _screen(root, offer, library)


def test_a_slowed_copy_inside_the_offer_is_a_repeat_not_new(padded: Report) -> None:
    a, b, c = (_file(padded, n) for n in ("a.mp4", "b.mp4", "c.mp4"))
    assert padded.matched_seconds == 0  # nothing is owned
    # The slowed copy bills 30 s for a's 15 s: it is the repeat, listed once, on b.
    assert not a.repeats and not c.repeats
    assert b.repeats and all(Path(s.corpus_file).name == "a.mp4" for s in b.repeats)
    assert b.repeated_seconds == pytest.approx(30.0, abs=2.0)
    assert any(abs(s.speed - 0.5) < 0.05 for s in b.repeats)
    assert b.new_seconds == pytest.approx(0.0, abs=2.0)
    assert a.new_seconds == pytest.approx(15.0 - a.indeterminate_seconds, abs=0.5)
    assert padded.repeated_seconds == pytest.approx(b.repeated_seconds, abs=0.01)
    assert padded.new_seconds == pytest.approx(a.new_seconds + b.new_seconds + c.new_seconds, abs=0.01)
    assert padded.new_seconds < padded.offered_seconds - 25
    assert any(w.startswith("repeats another offered file") for w in describe_flags(b))
    assert new_footage_sentence(padded).startswith("New footage you would actually get:")


def test_repeats_survive_json_html_and_csv(padded: Report, tmp_path: Path) -> None:
    back = api.load_report_json(api.write_report_json(padded, tmp_path / "r.json"))
    assert back.new_seconds == pytest.approx(padded.new_seconds, abs=0.01)
    assert len(_file(back, "b.mp4").repeats) == len(_file(padded, "b.mp4").repeats)
    html = api.write_report_html(padded, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Repeats inside the offer" in html and "New footage you would actually get" in html
    csv_text = api.write_report_csv(padded, tmp_path / "r.csv").read_text(encoding="utf-8-sig")
    assert "\nrepeat," in csv_text and "New footage you would actually get" in csv_text


def test_an_offer_of_distinct_footage_has_no_repeats(distinct: Report) -> None:
    assert all(not f.repeats and f.repeated_seconds == 0 for f in distinct.files)
    assert distinct.repeated_seconds == 0
    judged = distinct.offered_seconds - distinct.indeterminate_seconds
    assert distinct.new_seconds == pytest.approx(judged, abs=0.5)
    assert "not repeated inside the offer" in new_footage_sentence(distinct)
