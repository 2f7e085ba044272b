"""The results view shows annotation overlap (the lab's own examples) and episode matches."""

from __future__ import annotations

from typing import Any

from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.core.types import Segment, Variant


def _report() -> Report:
    seg = Segment(query_file="ds", query_stream="cam", query_start=0.0, query_end=20.0, corpus_file="/own/ds",
                  corpus_stream="cam", corpus_start=3.0, corpus_end=23.0, speed=1.0, variant=Variant(),
                  frames=80, mean_distance=4.0, score=0.9)
    label = "offered episode 41, 00:12–00:31 matches your episode 7, 00:02–00:21"
    f = FileResult(query_file="ds", duration_s=30.0, matched_seconds=20.0, real_footage_seconds=20.0,
                   segments=[seg], episodes=[{"segment": 0, "below_floor": False, "label": label}])
    block = {"schema": "overlap.text-overlap/1", "status": "checked", "tokenizer": "alnum-lower-v1", "n": 8,
             "examples": 5, "matched": 1, "too_short": 0,
             "matched_examples": [{"example": 2, "source": "eval.txt", "locator": "line 3",
                                   "text": "<b>pick up</b> the red cup\u202e and place it", "ngrams": []}]}
    return Report(kind="compare", offered_seconds=30.0, matched_seconds=20.0, real_footage_seconds=20.0,
                  files=[f], text_overlap=block)


def test_results_view_lists_eval_examples_and_episodes(qtbot: Any) -> None:
    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.show()
    assert view.extras.isHidden()
    report = _report()
    view.set_report(report)
    assert "1 of 5 of your evaluation examples share an n-gram with the vendor's annotations" \
        in view.details.text()
    text = view.extras.text()
    assert view.extras.isVisible()
    assert "line 3: <b>pick up</b> the red cup[U+202E] and place it" in text  # plain text, neutralised
    assert "offered episode 41, 00:12–00:31 matches your episode 7, 00:02–00:21" in text
    # A report without either hides the label again.
    view.set_report(Report(kind="compare", offered_seconds=1.0, matched_seconds=0.0, real_footage_seconds=0.0,
                           files=[FileResult(query_file="x", duration_s=1.0)]))
    assert view.extras.isHidden() and view.extras.text() == ""
