"""Reports with annotation overlap and episode matches: JSON round trip, strict loading,
HTML/CSV rendering of untrusted text, and the episode mapping of segments."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop.core.match.annotations import fill_episodes
from overlap_desktop.core.report.csv_io import write_report_csv
from overlap_desktop.core.report.html import render_report_html
from overlap_desktop.core.report.json_io import load_report_json, report_from_dict, report_to_dict, write_report_json
from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.core.report.wording import headline_details
from overlap_desktop.core.types import Segment, Variant
from overlap_desktop.errors import InputError


def seg(qs: float, qe: float, cs: float, ce: float, *, corpus: str = "/own/a") -> Segment:
    return Segment(query_file="offer/a", query_stream="cam", query_start=qs, query_end=qe, corpus_file=corpus,
                   corpus_stream="cam", corpus_start=cs, corpus_end=ce, speed=(ce - cs) / (qe - qs),
                   variant=Variant(), frames=40, mean_distance=3.0, score=0.9)


def block(**kw: Any) -> dict[str, Any]:
    b = {"schema": "overlap.text-overlap/1", "status": "checked", "tokenizer": "alnum-lower-v1", "n": 8,
         "manifest_ns": [8, 9], "eval_sources": ["eval.jsonl"], "examples": 5, "too_short": 1, "matched": 2,
         "matched_percent": 40.0,
         "matched_examples": [
             {"example": 0, "source": "eval.jsonl", "locator": "line 1 field task",
              "text": "<script>alert(1)</script> pick up the cup",
              "ngrams": [{"position": 1, "ngram": "a b"}]},
             {"example": 3, "source": "eval.jsonl", "locator": "line 4", "text": "=HYPERLINK(\"x\")",
              "ngrams": [{"position": 0, "ngram": "hyperlink x"}]}]}
    b.update(kw)
    return b


def report(text: dict[str, Any] | None = None) -> Report:
    f = FileResult(query_file="offer/a", duration_s=60.0, matched_seconds=20.0, real_footage_seconds=20.0,
                   segments=[seg(0, 20, 100, 120)])
    return Report(kind="compare", offered_seconds=60.0, matched_seconds=20.0, real_footage_seconds=20.0,
                  files=[f], text_overlap=text, created="2026-12-02T16:00:00Z")


def test_text_overlap_round_trips_and_reads_in_plain_words(tmp_path: Path) -> None:
    r = report(block())
    assert "2 of 5 of your evaluation examples share an n-gram with the vendor's annotations (n = 8, " \
           "alnum-lower-v1)." in headline_details(r)
    p = write_report_json(r, tmp_path / "r.json")
    back = load_report_json(p)
    assert back.text_overlap == json.loads(p.read_text(encoding="utf-8"))["text_overlap"] == block()
    assert "text_overlap" not in report_to_dict(report(None))  # absent unless checked
    assert load_report_json(write_report_json(report(None), tmp_path / "n.json")).text_overlap is None


@pytest.mark.parametrize("bad", [[1, 2], {"status": 3}, {"status": "checked", "examples": -1, "matched": 0},
                                 {"status": "checked", "examples": 1, "matched": 0,
                                  "matched_examples": ["not an object"]}])
def test_malformed_text_overlap_is_refused(bad: Any) -> None:
    d = report_to_dict(report(None))
    d["text_overlap"] = bad
    with pytest.raises(InputError, match="text_overlap"):
        report_from_dict(d)


def test_html_and_csv_show_the_labs_examples_safely(tmp_path: Path) -> None:
    html = render_report_html(report(block()))
    assert "Annotation overlap" in html and "2 of 5 of your evaluation examples" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; pick up the cup" in html
    nohash = render_report_html(report({"status": "no-annotations", "message": "x"}))
    assert "could not be checked: the manifest carries no annotation n-gram hashes" in nohash
    p = write_report_csv(report(block()), tmp_path / "r.csv")
    with open(p, encoding="utf-8-sig", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "text-overlap"]
    assert [r["query_stream"] for r in rows] == ["line 1 field task", "line 4"]
    desc = rows[1]["description"]
    assert desc.startswith("evaluation example 3 shares") and "hyperlink x" in desc


def test_episode_mapping_across_boundaries_and_one_sided() -> None:
    offered = {("offer/a", "cam"): [(40, 0.0, 12.0), (41, 12.0, 40.0)]}
    owned = {("/own/a", "cam"): [(7, 90.0, 105.0), (8, 105.0, 130.0)]}
    # Offered 2..22 s = owned 100..120 s (same speed): the segment crosses an episode boundary
    # on each side, at different places, so it splits into three pieces.
    f = FileResult(query_file="offer/a", duration_s=60.0, segments=[seg(2, 22, 100, 120)])
    fill_episodes([f], lambda n, k: offered.get((n, k), []), lambda n, k: owned.get((n, k), []))
    assert [e["label"] for e in f.episodes] == [
        "offered episode 40, 00:02–00:07 matches your episode 7, 00:10–00:15",
        "offered episode 40, 00:07–00:12 matches your episode 8, 00:00–00:05",
        "offered episode 41, 00:00–00:10 matches your episode 8, 00:05–00:15",
    ]
    mid = f.episodes[1]
    got = (mid["query_start"], mid["query_end"], mid["corpus_start"], mid["corpus_end"])
    assert got == (7.0, 12.0, 105.0, 110.0)
    assert mid["segment"] == 0 and mid["below_floor"] is False and mid["owned"]["file_start_s"] == 105.0
    # Episodes on the offered side only: the owned side is named by file time.
    g = FileResult(query_file="offer/a", duration_s=60.0, segments=[seg(14, 30, 100, 116)])
    fill_episodes([g], lambda n, k: offered.get((n, k), []), None)
    assert [e["label"] for e in g.episodes] == ["offered episode 41, 00:02–00:18 matches owned /own/a "
                                                "1:40.0–1:56.0"]
    # Neither side: nothing.
    h = FileResult(query_file="x", duration_s=5.0, segments=[seg(0, 5, 0, 5, corpus="/own/b")])
    fill_episodes([h], lambda n, k: [], lambda n, k: [])
    assert h.episodes == []
