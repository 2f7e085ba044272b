"""Issue 34: durations that do not round up to "60 s", a headline that fits a 31 s offer, amounts
in seconds where seconds read better, "–" for nothing in the HTML as in the app, one speed
wording for repeats, byte-identical repeats read as certain, and reports without the lab's
folder names."""

from __future__ import annotations

import re

import numpy as np

from overlap_desktop.core.report.formats import format_amount, format_duration
from overlap_desktop.core.report.html import render_report_html
from overlap_desktop.core.report.model import REPEATS_SETTING, FileResult, Report, identical_files
from overlap_desktop.core.report.redact import FOLDERS_HIDDEN_SETTING, hide_folder_names
from overlap_desktop.core.report.segment_words import speed_cell
from overlap_desktop.core.report.wording import headline
from overlap_desktop.core.types import Segment, Variant


def seg(q0: float, q1: float, c0: float, *, speed: float = 1.0, qf: str = "a.mp4",
        cf: str = "/lab/kitchen/owned.mp4", lo: float | None = None, hi: float | None = None) -> Segment:
    c1 = c0 + (q1 - q0) * speed
    pairs = np.array([[q0, c0, 2.0], [q1, c1, 2.0]])
    return Segment(qf, "v:0", q0, q1, cf, "v:0", c0, c1, speed, Variant(), 10, 2.0, 0.9, pairs,
                   chance=1e-12, speed_low=lo, speed_high=hi)


def test_durations_choose_their_unit_after_rounding() -> None:
    assert format_duration(59.96) == "1.0 min"  # not "60 s"
    assert format_duration(3599.96) == "1.0 h"  # not "60.0 min"
    assert format_duration(9.96) == "10 s" and format_duration(9.94) == "9.9 s"
    assert format_duration(59.4) == "59 s" and format_duration(3593) == "1.0 h"  # 59.88 min: "60 min" after rounding


def test_headline_of_a_short_offer_speaks_of_footage_and_seconds() -> None:
    r = Report("compare", offered_seconds=31.0, matched_seconds=12.0, real_footage_seconds=12.0)
    assert headline(r) == "39% of this footage (12 of 31 s) matches footage you already own."
    # Under three minutes, seconds read better than "0.4 of 1.6 min".
    r = Report("compare", offered_seconds=95.0, matched_seconds=24.0, real_footage_seconds=24.0)
    assert "(24 of 95 s)" in headline(r)
    r = Report("compare", offered_seconds=3599.96, matched_seconds=59.96, real_footage_seconds=59.96)
    assert "(<0.1 of 1.0 h)" in headline(r)  # a match never reads as 0.0, a whole never as 60.0 min
    r = Report("compare", offered_seconds=20 * 3600, matched_seconds=12.4 * 3600, real_footage_seconds=0)
    assert headline(r) == "62% of these hours (12.4 of 20.0 h) match footage you already own."


def test_speed_cell_says_normal_with_its_range_as_the_app_does() -> None:
    assert speed_cell(seg(0, 10, 0, speed=0.96, lo=0.9, hi=1.02)) == "normal (0.9–1.02x)"
    assert speed_cell(seg(0, 10, 0, speed=0.5, lo=0.48, hi=0.52)) == "0.5x (0.48–0.52x)"
    assert speed_cell(seg(0, 10, 20, speed=-1.0, lo=-1.02, hi=-0.98)) == "reversed, normal (0.98–1.02x)"
    assert speed_cell(seg(0, 10, 0)) == "normal"  # an older report without a range


def _repeat_report(identical: bool) -> Report:
    rep = seg(0, 10, 0, speed=0.96, qf="b.mp4", cf="a.mp4", lo=0.9, hi=1.02)
    files = [FileResult("a.mp4", 10.0, new_seconds=10.0),
             FileResult("b.mp4", 10.0, repeats=[rep], repeated_seconds=10.0)]
    settings = {REPEATS_SETTING: {"checked": True,
                                  **({"identical_files": [["a.mp4", "b.mp4"]]} if identical else {})}}
    return Report("compare", 20.0, 0.0, 0.0, files=files, settings=settings, repeated_seconds=10.0,
                  new_seconds=10.0)


def test_byte_identical_repeats_read_as_certain_in_the_html() -> None:
    same = _repeat_report(identical=True)
    assert identical_files(same, "b.mp4", "a.mp4") and not identical_files(same, "a.mp4", "a.mp4")
    page = render_report_html(same)
    assert "byte-identical files (same checksum), a certain repeat" in page
    assert "normal (0.9–1.02x)" in page and "0.96x" not in page
    # The look-alike: the same repeat between files that merely look alike is not called certain.
    other = _repeat_report(identical=False)
    assert not identical_files(other, "b.mp4", "a.mp4")
    assert "byte-identical" not in render_report_html(other)


def test_html_file_rows_show_a_dash_for_nothing() -> None:
    assert format_amount(0.0) == format_amount(0.4) == "–" and format_amount(12) == "12 s"
    page = render_report_html(_repeat_report(identical=False))
    assert not re.search(r"<td[^>]*>\s*0\.0 s\s*</td>", page)
    assert re.search(r"<td[^>]*>\s*–\s*</td>", page)


def test_hide_folder_names_keeps_figures_and_file_names() -> None:
    s = seg(0, 10, 5, cf="/home/lab/customer-x/kitchen/owned.mp4")
    win = seg(0, 10, 5, cf="D:\\robots\\customer-x\\owned2.mp4")
    rep = seg(0, 4, 0, qf="a.mp4", cf="vendor/b.mp4")
    f = FileResult("a.mp4", 10.0, matched_seconds=10.0, real_footage_seconds=10.0, segments=[s],
                   below_floor=[win], repeats=[rep])
    r = Report("compare", 10.0, 10.0, 10.0, files=[f],
               manifest={"label": "Offer", "path": "/home/lab/inbox/offer.ovlm"},
               settings={"index": {"path": "/home/lab/customer-x/index", "identity": "abc"},
                         "ratio": "1/2 n/a"},
               text_overlap={"eval_sources": ["/home/lab/eval/set.jsonl"]})
    hidden = hide_folder_names(r)
    assert hidden.files[0].segments[0].corpus_file == "owned.mp4"
    assert hidden.files[0].below_floor[0].corpus_file == "owned2.mp4"
    assert hidden.files[0].repeats[0].corpus_file == "vendor/b.mp4"  # the seller's names stay
    assert hidden.manifest["path"] == "…/offer.ovlm"
    assert hidden.settings["index"]["path"] == "…/index" and hidden.settings["ratio"] == "1/2 n/a"
    assert hidden.text_overlap == {"eval_sources": ["…/set.jsonl"]}
    assert hidden.settings[FOLDERS_HIDDEN_SETTING] is True
    assert hidden.matched_seconds == r.matched_seconds and hidden.files[0].matched_seconds == 10.0
    page = render_report_html(hidden)
    assert "customer-x" not in page and "/home/lab" not in page and "owned.mp4" in page
    # The original is untouched (the window keeps showing full paths).
    assert r.files[0].segments[0].corpus_file.startswith("/home/lab/")
    assert "customer-x" in render_report_html(r)
