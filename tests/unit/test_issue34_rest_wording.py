"""Issue 34, the last of its results half: the demo's report names the demo's sample library
(item 12), and a duration reads the same in the app, the HTML report and the CLI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from overlap_desktop.core.report.formats import format_amount, format_duration
from overlap_desktop.core.report.html import write_report_html
from overlap_desktop.core.report.json_io import load_report_json, write_report_json
from overlap_desktop.core.report.model import DEMO_LIBRARY, OWNED_LIBRARY_SETTING, FileResult, Report
from overlap_desktop.core.report.wording import headline, headline_details


def _report(*, demo: bool, offered: float = 60.0) -> Report:
    settings = {OWNED_LIBRARY_SETTING: DEMO_LIBRARY} if demo else {}
    f = FileResult("offer/a.mp4", offered, offered / 2, offered / 2)
    return Report("compare", offered_seconds=offered, matched_seconds=offered / 2,
                  real_footage_seconds=offered / 2, files=[f], settings=settings)


def test_the_demo_headline_names_the_demo_library_not_yours() -> None:
    demo = _report(demo=True)
    assert demo.demo_library
    assert headline(demo) == ("50% of this footage (30 of 60 s) matches footage in the demo's sample library "
                              "(not yours).")
    assert any("matched nothing in the demo's sample library" in d for d in headline_details(demo))
    assert "you already own" not in headline(dataclasses.replace(demo, offered_seconds=7200.0,
                                                                 matched_seconds=3600.0))
    # The user's own comparison keeps its words.
    mine = _report(demo=False)
    assert not mine.demo_library
    assert headline(mine) == "50% of this footage (30 of 60 s) matches footage you already own."
    assert any("matched nothing in your library" in d for d in headline_details(mine))


def test_the_demo_mark_survives_json_and_reaches_the_html(tmp_path: Path) -> None:
    demo = _report(demo=True)
    write_report_json(demo, tmp_path / "r.json")
    again = load_report_json(tmp_path / "r.json")
    assert again.demo_library and headline(again) == headline(demo)
    write_report_html(demo, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "matches the demo&#39;s sample library" in html
    assert "footage you own" not in html and "you already own" not in html


def test_one_rounding_rule_for_a_duration() -> None:
    # The app said "45 min" where the HTML report and the CLI said "45.0 min".
    assert format_duration(45 * 60) == "45 min" and format_amount(45 * 60) == "45 min"
    assert format_duration(12.5 * 60) == "12 min" and format_duration(599.97) == "10 min"
    # One decimal below 10 of a unit, where it matters; the unit chosen after rounding.
    assert format_duration(90) == "1.5 min" and format_duration(4.24) == "4.2 s"
    assert format_duration(3593) == "1.0 h" and format_duration(3599.96) == "1.0 h"
    assert format_duration(2.5 * 3600) == "2.5 h"
    # Nothing is "0 s" (an empty library's status bar read "0.0 s of footage").
    assert format_duration(0) == "0 s" and format_duration(0.04) == "0 s" and format_duration(0.06) == "0.1 s"
