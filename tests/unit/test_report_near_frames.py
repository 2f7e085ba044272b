"""Near-identical frames behind "can't tell" time: kept in the report (JSON version 5), thinned to a
bound, read back, missing from older reports, and drawn in the HTML report's charts."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from overlap_desktop.core.report.html import render_report_html
from overlap_desktop.core.report.json_io import load_report_json, report_from_dict, report_to_dict
from overlap_desktop.core.report.model import NEAR_FRAMES_CAP, FileResult, NearFrame, Report, thin_near_frames
from overlap_desktop.core.report.redact import hide_folder_names
from overlap_desktop.core.report.svgplot import NEAR_COLOUR, NEAR_WORDS
from overlap_desktop.core.types import Span

OWNED = "/lab/library/room-owned.mp4"
REASON = "near-identical to owned footage, too still or too short to place in time"


def _report() -> Report:
    """A reversed piece with 4.75 s of can't-tell time (offered t near owned 35.5 - t), and a look-alike
    file with nothing at all."""
    cant = FileResult("offer/reversed.mp4", 15.0, cant_tell=[Span(10.25, 15.0, REASON)], new_seconds=1.25)
    cant.near_frames = [NearFrame(12.0, OWNED, "v:0", 23.5, 6), NearFrame(13.0, OWNED, "v:0", 22.5, 4),
                        NearFrame(14.0, OWNED, "v:0", 21.0, 2)]
    other = FileResult("offer/later.mp4", 15.0, new_seconds=15.0)
    return Report("compare", 30.0, 0.0, 0.0, files=[cant, other], cant_tell_seconds=4.75, new_seconds=16.25)


def test_near_frames_round_trip_through_the_json(tmp_path: Path) -> None:
    d = report_to_dict(_report())
    assert d["schema"] == "overlap.report/5"
    assert d["files"][0]["near_frames"][0] == {"query_s": 12.0, "corpus_file": OWNED, "corpus_stream": "v:0",
                                               "corpus_s": 23.5, "distance": 6}
    assert d["files"][1]["near_frames"] == []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    back = load_report_json(path)
    assert back.files[0].near_frames == _report().files[0].near_frames
    assert back.files[1].near_frames == []
    assert report_to_dict(back)["files"] == d["files"]


def test_an_overlap_report_4_file_still_reads_without_near_frames() -> None:
    d = report_to_dict(_report())
    d["schema"] = "overlap.report/4"
    for f in d["files"]:
        del f["near_frames"]
    old = report_from_dict(d)
    assert [f.near_frames for f in old.files] == [[], []]
    assert old.files[0].cant_tell == _report().files[0].cant_tell and old.cant_tell_seconds == 4.75
    assert report_to_dict(old)["schema"] == "overlap.report/5"


@pytest.mark.parametrize(("entry", "message"), [
    ({"query_s": 1.0, "corpus_s": 2.0, "distance": 3}, "near_frames[0]: missing 'corpus_file'"),
    ({"query_s": "x", "corpus_file": OWNED, "corpus_s": 2.0, "distance": 3}, "'query_s' has the wrong type"),
    ([1, 2], "near_frames[0] is not an object"),
])
def test_a_broken_near_frame_is_refused_naming_it(entry: object, message: str) -> None:
    d = report_to_dict(_report())
    d["files"][0]["near_frames"] = [entry]
    with pytest.raises(Exception, match=re.escape(message)):
        report_from_dict(d)


def test_near_frames_are_capped_evenly_and_kept_to_cant_tell_time() -> None:
    frames = [NearFrame(i * 0.01, OWNED, "v:0", 100.0 - i * 0.01, i % 17) for i in range(2000)]
    kept = thin_near_frames(frames, [(0.0, 20.0)])
    assert len(kept) == NEAR_FRAMES_CAP == 300
    xs = [n.query_s for n in kept]
    assert xs == sorted(xs) and xs[0] == 0.0 and xs[-1] > 19.0  # spread over the whole span
    gaps = [b - a for a, b in zip(xs, xs[1:], strict=False)]
    assert max(gaps) < 2 * min(gaps) + 0.011
    # Outside can't-tell time (owned, new or not judged), none is kept; duplicates keep the closest.
    assert thin_near_frames(frames, [(5.0, 6.0)]) == [n for n in frames if 5.0 - 1e-6 <= n.query_s <= 6.0 + 1e-6]
    twice = [NearFrame(1.0, OWNED, "v:0", 2.0, 9), NearFrame(1.0, OWNED, "v:0", 2.0, 3)]
    assert thin_near_frames(twice, [(0.0, 2.0)]) == [twice[1]]


def test_hidden_folder_names_hide_them_in_near_frames_too() -> None:
    hidden = hide_folder_names(_report())
    assert {n.corpus_file for n in hidden.files[0].near_frames} == {"room-owned.mp4"}
    assert "/lab/library" not in json.dumps(report_to_dict(hidden))


def _near_circles(page: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'<circle class="near" cx="([\d.]+)" cy="([\d.]+)"', page)]


def test_the_html_report_draws_the_near_identical_frames() -> None:
    page = render_report_html(_report())
    dots = _near_circles(page)
    assert len(dots) == 3
    # Offered time grows to the right, owned time falls (SVG y grows downwards): a reversed piece.
    assert [x for x, _ in dots] == sorted(x for x, _ in dots)
    assert [y for _, y in dots] == sorted(y for _, y in dots)
    assert NEAR_COLOUR in page and NEAR_WORDS.replace("'", "&#39;") in page
    assert "owned 23.50 s" in page
    # The look-alike has no chart and no dots; a report without near frames has neither.
    assert "offer/later.mp4</b> against" not in page
    bare = copy.deepcopy(_report())
    bare.files[0].near_frames = []
    page = render_report_html(bare)
    assert _near_circles(page) == [] and NEAR_WORDS.replace("'", "&#39;") not in page


def test_a_report_of_many_cant_tell_files_keeps_its_near_frames_bounded() -> None:
    """Over a whole report at most MAX_NEAR_FRAMES_PER_REPORT are written (each file keeps some, evenly)."""
    from overlap_desktop.core.report.json_io import MAX_NEAR_FRAMES_PER_REPORT, MIN_NEAR_FRAMES_PER_FILE

    files = []
    for k in range(400):
        f = FileResult(f"offer/{k}.mp4", 30.0, cant_tell=[Span(0.0, 30.0, REASON)], new_seconds=0.0)
        f.near_frames = [NearFrame(i * 0.1, OWNED, "v:0", 50.0 - i * 0.1, 5) for i in range(NEAR_FRAMES_CAP)]
        files.append(f)
    d = report_to_dict(Report("compare", 12_000.0, 0.0, 0.0, files=files, cant_tell_seconds=12_000.0))
    kept = [len(f["near_frames"]) for f in d["files"]]
    assert sum(kept) <= MAX_NEAR_FRAMES_PER_REPORT and min(kept) >= MIN_NEAR_FRAMES_PER_FILE
    xs = [n["query_s"] for n in d["files"][0]["near_frames"]]
    assert xs[0] == 0.0 and xs[-1] > 27.0  # spread over the file, not its first seconds
    # One file alone keeps all it has.
    one = report_to_dict(Report("compare", 30.0, 0.0, 0.0, files=files[:1], cant_tell_seconds=30.0))
    assert len(one["files"][0]["near_frames"]) == NEAR_FRAMES_CAP
