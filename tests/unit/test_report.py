"""Report serialisation, plain-word wording, HTML safety and CSV, on hand-built reports
(no matcher involved)."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.report.csv_io import write_report_csv
from overlap_desktop.core.report.formats import (
    format_clock,
    format_date,
    format_duration,
    format_estimate,
    format_percent,
    safe_text,
    stream_words,
)
from overlap_desktop.core.report.glossary import GLOSSARY, glossary_tip
from overlap_desktop.core.report.html import render_report_html, write_report_html
from overlap_desktop.core.report.json_io import (
    REPORT_SCHEMA,
    load_report_json,
    report_from_dict,
    report_to_dict,
    write_report_json,
)
from overlap_desktop.core.report.model import FileResult, Report, judged_unmatched_seconds, offered_pieces
from overlap_desktop.core.report.scale import DISTANCE_SCALE, distance_colour, distance_words
from overlap_desktop.core.report.segment_words import (
    chance_words,
    describe_flags,
    describe_segment,
    speed_text,
    speed_words,
)
from overlap_desktop.core.report.wording import headline, headline_details, new_footage_sentence
from overlap_desktop.core.types import Segment, Span, Variant
from overlap_desktop.errors import ExitCode, InputError

HOSTILE = "evil\u202egpj.exe<script>alert(1)</script>\x07\x1b[31m\u200b\ud800\n\"'&=cmd"


def seg(q0: float, q1: float, c0: float, speed: float = 1.0, *, qf: str = "offer/ep1.mp4",
        cf: str = "owned/a.mp4", variant: Variant | None = None, pairs: bool = True) -> Segment:
    c1 = c0 + (q1 - q0) * speed
    qs = np.arange(q0, q1, 0.25)
    cs = c0 + (qs - q0) * speed
    d = (np.arange(len(qs)) * 7) % 40
    return Segment(qf, "v:0", q0, q1, cf, "v:0", c0, c1, speed, variant or Variant(), len(qs),
                   float(d.mean()) if len(d) else 0.0, 0.875,
                   np.c_[qs, cs, d].astype(np.float64) if pairs else None)


def sample_report(kind: str = "compare") -> Report:
    f1 = FileResult("offer/ep1.mp4", 120.0, 90.0, 45.0,
                    segments=[seg(0, 60, 10, 0.5),
                              seg(70, 100, 200, 0.5, cf="owned/b.mp4",
                                  variant=Variant(mirrored=True, edge="bottom", edge_depth=0.18))],
                    below_floor=[seg(110, 116, 50, cf="owned/c.mp4")],
                    indeterminate=[Span(100.0, 110.0, "static")],
                    flags=["slowdown", "splice", "mirror", "edge-crop"],
                    episodes=[{"episode": 3, "start": 0.0, "end": 60.0}])
    f2 = FileResult(HOSTILE, 300.0,
                    below_floor=[seg(5, 12, 3, qf=HOSTILE, cf="<img src=x onerror=alert(2)>")])
    f3 = FileResult("offer/ep3.mp4", 60.0, 60.0, 60.0, segments=[seg(0, 60, 100, -1.0, qf="offer/ep3.mp4")],
                    flags=["reversed"])
    return Report(kind, 480.0, 150.0, 105.0, 10.0, [f1, f2, f3],
                  manifest={"label": "Q3 teleop " + HOSTILE, "root": "ab" * 32, "files": 3},
                  settings={"algo": "pdq256-v1", "prep": "prep-v1", "floor_seconds": 10.0,
                            "max_distance": 31, "index_identity": "0e3c", "index_path": Path("/x/idx")},
                  created="2026-12-02T15:00:00+00:00")


# --------------------------------------------------------------------------- wording


def test_headline_matches_the_documented_sentence() -> None:
    r = Report("compare", offered_seconds=20 * 3600, matched_seconds=12.4 * 3600,
               real_footage_seconds=12.4 * 3600)
    assert headline(r) == "62% of these hours (12.4 of 20.0 h) match footage you already own."


@pytest.mark.parametrize(("kind", "needle"), [
    ("self-dedupe", "duplicate other footage"),
    ("compare-offers", "also appear in offer B"),
    ("audit", "of the sample you were shown"),
])
def test_headline_wording_follows_the_kind(kind: str, needle: str) -> None:
    r = Report(kind, offered_seconds=600, matched_seconds=300, real_footage_seconds=300)
    assert needle in headline(r)
    assert "50%" in headline(r) and "5.0 of 10.0 min" in headline(r)


def test_percent_never_hides_a_match_or_overclaims() -> None:
    assert format_percent(0) == "0%"
    assert format_percent(0.2) == "<1%"
    assert format_percent(99.7) == ">99%"
    assert format_percent(100) == "100%"
    assert format_percent(61.6) == "62%"
    assert format_duration(42) == "42 s" and format_duration(90) == "1.5 min"
    assert format_duration(3 * 3600) == "3.0 h"


def test_estimates_are_rough_words() -> None:
    assert format_estimate(0) == format_estimate(30) == "under a minute"
    assert format_estimate(60) == "about 1 minute" and format_estimate(700) == "about 12 minutes"
    assert format_estimate(4 * 3600) == "about 4.0 hours"


def test_rebuild_estimate_follows_the_measured_rate() -> None:
    """About 7 s per 100 footage hours at the default preset (bench/RESULTS.md), so ~12 minutes at
    10,000 hours; it counts stored codes, so a preset storing more variants is dearer."""
    from overlap_desktop.core.index.sealing import rebuild_estimate_s

    per_hour = 3600 * 4 * 8  # codes per footage hour: 4 samples/s, 8 variants
    assert rebuild_estimate_s(100 * per_hour) == pytest.approx(7.0)
    assert format_estimate(rebuild_estimate_s(10_000 * per_hour)) == "about 12 minutes"
    assert rebuild_estimate_s(0) == 0 and rebuild_estimate_s(-5) == 0


def test_details_explain_slowdown_below_floor_and_indeterminate() -> None:
    details = " ".join(headline_details(sample_report()))
    assert "2 of 3 offered files" in details
    assert "hold only 1.8 min of real footage" in details
    assert "2 shorter matches below the 10 s evidence floor" in details
    assert "10 s could not be judged" in details
    assert "The other 5.3 min (67%) matched nothing in your library." in details


def test_zero_headline_still_mentions_below_floor_evidence() -> None:
    f = FileResult("a.mp4", 60.0, below_floor=[seg(0, 4, 0, qf="a.mp4")])
    r = Report("compare", 60.0, 0.0, 0.0, files=[f], settings={"floor_seconds": 10})
    assert headline(r).startswith("0% of this footage")
    assert any("1 shorter match below the 10 s evidence floor is listed" in d for d in headline_details(r))


def test_flag_words() -> None:
    r = sample_report()
    assert describe_flags(r.files[0]) == ["slowed to 0.5x", "cropped bottom 18%", "mirrored",
                                          "spliced from 2 sources", "partly new (17% unmatched)"]
    assert describe_flags(r.files[1]) == []  # below-floor evidence is not a manipulation claim
    assert describe_flags(r.files[2]) == ["reversed"]
    two_pieces = FileResult("x", 40.0, 40.0, 40.0,
                            segments=[seg(0, 20, 100, qf="x"), seg(20, 40, 10, qf="x")])
    assert describe_flags(two_pieces) == ["2 pieces of 1 owned file"]
    fast = FileResult("y", 20.0, 20.0, 40.0,
                      segments=[seg(0, 20, 0, 2.0, qf="y", variant=Variant(crop=0.85))])
    assert describe_flags(fast) == ["sped up to 2x", "cropped to 85%"]
    # Measured speeds near a common re-timing factor read as that factor; others keep two decimals.
    noisy = FileResult("n", 20.0, 20.0, 10.0, segments=[seg(0, 20, 0, 0.49, qf="n")])
    assert describe_flags(noisy) == ["slowed to 0.5x"]
    odd = FileResult("o", 20.0, 20.0, 12.0, segments=[seg(0, 20, 0, 0.6, qf="o")])
    assert describe_flags(odd) == ["slowed to 0.6x"]
    assert describe_flags(FileResult("s", 20.0, 20.0, 20.0, segments=[seg(0, 20, 0, 1.05, qf="s")])) == []
    # Machine flags without segment detail still produce words.
    assert describe_flags(FileResult("z", 10.0, flags=["slowdown", "mirror"])) == ["slowed down", "mirrored"]


def test_segment_description() -> None:
    s = seg(10, 30, 60, 0.5, variant=Variant(mirrored=True))
    assert describe_segment(s) == ("offered 0:10.0–0:30.0 matches owned owned/a.mp4 1:00.0–1:10.0, "
                                   "slowed to 0.5x, mirrored")
    assert "below the evidence floor of 10 s" in describe_segment(s, below_floor=True, floor_seconds=10)


def test_safe_text_neutralises_hostile_characters() -> None:
    out = safe_text(HOSTILE)
    for bad in ("\u202e", "\x07", "\x1b", "\u200b", "\ud800", "\n"):
        assert bad not in out
    assert "[U+202E]" in out and "[U+0007]" in out and "[U+D800]" in out
    assert safe_text("plain name.mp4") == "plain name.mp4"
    assert safe_text("ünïcødé 視頻.mp4") == "ünïcødé 視頻.mp4"


# --------------------------------------------------------------------------- JSON


def test_json_has_the_documented_fields(tmp_path: Path) -> None:
    d = report_to_dict(sample_report())
    for key in ("schema", "kind", "overlap_percent", "offered_seconds", "matched_seconds",
                "real_footage_seconds", "indeterminate_seconds", "headline", "files", "settings", "manifest",
                "created", "tool"):
        assert key in d
    assert d["schema"] == REPORT_SCHEMA == "overlap.report/5"
    assert d["overlap_percent"] == 31.25
    f = d["files"][0]
    for key in ("query_file", "duration_s", "matched_percent", "matched_seconds", "real_footage_seconds",
                "flags", "flags_text", "segments", "below_floor", "indeterminate", "episodes"):
        assert key in f
    assert f["matched_percent"] == 75.0
    assert f["indeterminate"] == [{"start": 100.0, "end": 110.0, "reason": "static"}]
    s = f["segments"][1]
    assert s["variant"] == {"mirrored": True, "rotation": 0, "crop": None,
                            "edge": {"side": "bottom", "depth": 0.18}, "offset": None}
    assert s["speed"] == 0.5 and s["corpus_end"] == 215.0 and s["frames"] == 120
    assert "slowed to 0.5x" in s["description"]
    assert d["settings"]["index_path"] == "/x/idx"
    json.dumps(d, allow_nan=False)  # strictly valid JSON


def test_json_round_trip(tmp_path: Path) -> None:
    r = sample_report()
    p = write_report_json(r, tmp_path / "out" / "report.json")
    back = load_report_json(p)
    assert report_to_dict(back) == report_to_dict(r)
    assert back.files[0].segments[1].variant == Variant(mirrored=True, edge="bottom", edge_depth=0.18)
    assert back.files[1].query_file == HOSTILE  # JSON keeps exact strings (data, not display)
    assert back.files[0].segments[0].pairs is not None and back.files[0].segments[0].pairs.shape[1] == 3
    assert not list(tmp_path.glob("out/.*.tmp"))  # atomic write leaves no temp file


def test_times_are_rounded_to_milliseconds() -> None:
    r = Report("compare", 10.123456, 3.0004, 3.0)
    d = report_to_dict(r)
    assert d["offered_seconds"] == 10.123 and d["matched_seconds"] == 3.0


def test_pairs_are_thinned_in_json() -> None:
    s = seg(0, 1000, 0)  # 4,000 points
    f = FileResult("offer/ep1.mp4", 1000.0, 1000.0, 1000.0, segments=[s])
    d = report_to_dict(Report("compare", 1000.0, 1000.0, 1000.0, files=[f]))
    assert 100 < len(d["files"][0]["segments"][0]["pairs"]) <= 400


@pytest.mark.parametrize(("schema", "message"), [
    ("overlap.report/6", "newer overlap desktop"),
    ("overlap.report/0", "not supported"),
    ("overlap.manifest/1", "not an overlap report"),
    (None, "not an overlap report"),
    ("overlap.report/x", "unreadable report schema version"),
])
def test_load_refuses_other_schema_versions(tmp_path: Path, schema: object, message: str) -> None:
    d = report_to_dict(sample_report())
    d["schema"] = schema
    p = tmp_path / "r.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError, match=message) as info:
        load_report_json(p)
    assert info.value.exit_code == ExitCode.INPUT_REFUSED
    assert str(p) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]", b"\xff\xfe",
                                     b'{"schema": "overlap.report/1"}'])
def test_load_refuses_garbage_with_a_clear_error(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "r.json"
    p.write_bytes(content)
    with pytest.raises(InputError):
        load_report_json(p)


def test_load_names_the_bad_field() -> None:
    d = report_to_dict(sample_report())
    d["files"][0]["segments"][0]["query_start"] = "soon"
    with pytest.raises(InputError, match=r"files\[0\].*segments\[0\].*query_start"):
        report_from_dict(d)


def test_load_ignores_unknown_fields_from_additive_changes() -> None:
    d = report_to_dict(sample_report())
    d["future_field"] = {"x": 1}
    d["files"][0]["future"] = 1
    assert report_to_dict(report_from_dict(d)) == report_to_dict(sample_report())


# --------------------------------------------------------------------------- HTML


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_escapes_hostile_strings_everywhere(tmp_path: Path) -> None:
    p = write_report_html(sample_report(), tmp_path / "r.html")
    html = p.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert "\u202e" not in html and "\x07" not in html and "\x1b" not in html and "\u200b" not in html
    parsed = _Collector()
    parsed.feed(html)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert not any(name.startswith("on") for name, _ in parsed.attrs)  # no event handlers smuggled in
    text = "".join(parsed.text)
    # The hostile names are still shown, visibly, for the reader to judge.
    assert "evil[U+202E]gpj.exe<script>alert(1)</script>[U+0007]" in text
    assert "<img src=x onerror=alert(2)>" in text


def test_html_is_self_contained_and_complete(tmp_path: Path) -> None:
    html = write_report_html(sample_report(), tmp_path / "r.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|file:)""", html, re.I)
    assert "@import" not in html and "url(" not in html
    assert "31% of this footage (2.5 of 8.0 min) matches footage you already own." in html
    assert html.count("<svg") == 5  # one plot per (offered file, owned file) pair with matches
    assert "slowed to 0.5x" in html and "cropped bottom 18%" in html and "spliced from 2 sources" in html
    assert "Below the evidence floor (10 s)" in html
    assert "Time that could not be judged" in html and "static" in html
    assert "pdq256-v1" in html and "0e3c" in html  # settings footer


def test_html_of_an_empty_report(tmp_path: Path) -> None:
    html = render_report_html(Report("compare", 0.0, 0.0, 0.0))
    assert "0% of this footage" in html and "<svg" not in html


def test_html_from_a_loaded_report_still_plots(tmp_path: Path) -> None:
    back = load_report_json(write_report_json(sample_report(), tmp_path / "r.json"))
    assert render_report_html(back).count("<circle") > 100


# --------------------------------------------------------------------------- CSV


def test_csv_rows(tmp_path: Path) -> None:
    p = write_report_csv(sample_report(), tmp_path / "r.csv")
    with open(p, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    kinds = [r["kind"] for r in rows]
    assert kinds == ["summary", "segment", "segment", "below-floor", "below-floor", "segment"]
    rows = rows[1:]
    first = rows[0]
    assert first["query_file"] == "offer/ep1.mp4" and first["corpus_file"] == "owned/a.mp4"
    assert float(first["speed"]) == 0.5 and float(first["corpus_end"]) == 40.0
    assert rows[1]["mirrored"] == "1" and rows[1]["edge_side"] == "bottom"
    assert rows[1]["edge_depth"] == "0.1800"
    assert "below the evidence floor" in rows[2]["description"]
    assert "\u202e" not in p.read_text(encoding="utf-8-sig")


def test_csv_lists_unmatched_files_and_defuses_formulas(tmp_path: Path) -> None:
    r = Report("compare", 10.0, 0.0, 0.0, files=[FileResult("=HYPERLINK(\"http://x\")", 10.0)])
    with open(write_report_csv(r, tmp_path / "r.csv"), newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[1]["kind"] == "no-match"
    assert rows[1]["query_file"].startswith("'=")


# --------------------------------------------------------------------------- issue 16


@pytest.mark.parametrize(("seconds", "text"), [
    (59.96, "1:00.0"), (59.94, "0:59.9"), (3599.97, "1:00:00.0"), (119.95, "2:00.0"), (0.0, "0:00.0"),
    (-0.01, "0:00.0"), (-61.0, "-1:01.0"), (3661.25, "1:01:01.2"), (7199.99, "2:00:00.0"),
])
def test_clock_never_shows_sixty_seconds(seconds: float, text: str) -> None:
    assert format_clock(seconds) == text


def test_clock_fields_stay_in_range() -> None:
    for hundredths in range(0, 720_000, 997):
        parts = format_clock(hundredths / 100).split(":")
        assert float(parts[-1]) < 60 and all(int(p) < 60 for p in parts[1:-1]), hundredths


@pytest.mark.parametrize(("chance", "words"), [
    (1e-9, "about 1 in a billion"), (3e-5, "about 1 in 30,000"), (2.2e-7, "about 1 in 5 million"),
    (1e-3, "about 1 in 1,000"), (3.4e-13, "about 1 in 3 trillion"), (1e-30, "less than 1 in 10^15"),
    (0.9, "high (about 1 such line expected by chance)"),
    (4.0, "high (about 4 such lines expected by chance)"),
])
def test_chance_in_plain_words(chance: float, words: str) -> None:
    assert chance_words(chance) == "chance of a coincidence like this: " + words
    assert chance_words(chance, short=True) == words


def test_chance_words_without_a_chance() -> None:
    assert chance_words(None) == ""


def test_speed_words_only_when_the_interval_excludes_normal_speed() -> None:
    sure = seg(0, 30, 0, 0.5)
    sure.speed_low, sure.speed_high = 0.48, 0.52
    unsure = seg(0, 4, 0, 0.9)
    unsure.speed_low, unsure.speed_high = 0.7, 1.1
    fast = seg(0, 20, 0, 2.0)
    fast.speed_low, fast.speed_high = 1.9, 2.1
    back = seg(0, 20, 40, -0.5)
    back.speed_low, back.speed_high = -0.52, -0.48
    assert speed_words(sure) == "slowed to 0.5x" and speed_text(sure) == "0.5x (0.48–0.52x)"
    assert speed_words(unsure) is None and speed_text(unsure) == "0.9x (0.7–1.1x)"
    assert speed_words(fast) == "sped up to 2x"
    assert speed_words(back) == "slowed to 0.5x" and speed_text(back).startswith("reversed 0.5x")
    f = FileResult("u", 4.0, 4.0, 4.0, segments=[unsure], flags=["slowdown"])
    assert describe_flags(f) == []  # the matcher's flag does not override an interval through 1.0
    assert "slowed" not in describe_segment(unsure)
    assert describe_segment(seg(0, 20, 0, 0.9)).endswith("slowed to 0.9x")  # no interval: old tolerance


def test_one_stretch_matching_owned_copies_is_not_a_splice() -> None:
    copies = FileResult("x", 30.0, 30.0, 30.0, segments=[seg(0, 30, 0, qf="x", cf="own/a.mp4"),
                                                          seg(0.4, 29.6, 5, qf="x", cf="own/a_copy.mp4")])
    words = describe_flags(copies)
    assert "matches footage you own in 2 files" in words and not any("splice" in w for w in words)
    spliced = FileResult("y", 40.0, 40.0, 40.0, segments=[seg(0, 20, 0, qf="y", cf="own/a.mp4"),
                                                          seg(20, 40, 0, qf="y", cf="own/b.mp4")])
    assert describe_flags(spliced) == ["spliced from 2 sources"]
    # Pieces following each other, one of them matching two copies: a splice of 2 sources, 3 files.
    mixed = FileResult("z", 40.0, 40.0, 40.0, segments=[seg(0, 20, 0, qf="z", cf="own/a.mp4"),
                                                        seg(0, 20, 0, qf="z", cf="own/a_copy.mp4"),
                                                        seg(20, 40, 0, qf="z", cf="own/b.mp4")])
    assert describe_flags(mixed) == ["spliced from 2 sources", "matches footage you own in 3 files"]
    assert [len(p) for p in offered_pieces(mixed.segments)] == [2, 1]


def test_partly_new_counts_only_judged_unmatched_time() -> None:
    # 100 s: 50 s matched, 40 s could not be judged, 10 s judged and unmatched.
    f = FileResult("p", 100.0, 50.0, 50.0, segments=[seg(0, 50, 0, qf="p")],
                   indeterminate=[Span(50.0, 90.0, "featureless")])
    assert describe_flags(f) == ["partly new (10% unmatched)"]
    assert judged_unmatched_seconds(f) == 10.0
    all_unjudged = FileResult("q", 100.0, 50.0, 50.0, segments=[seg(0, 50, 0, qf="q")],
                              indeterminate=[Span(50.0, 100.0, "static")])
    assert describe_flags(all_unjudged) == []


def _with_new_fields() -> Report:
    r = sample_report()
    s0 = r.files[0].segments[0]
    s0.chance, s0.speed_low, s0.speed_high = 2.5e-11, 0.49, 0.51
    weak = seg(20, 35, 0, qf="offer/ep3.mp4", cf="owned/d.mp4")
    weak.chance = 3.0
    r.files[2].weak = [weak]
    rep = seg(0, 30, 0, 0.5, qf="offer/ep3.mp4", cf="offer/ep1.mp4")
    r.files[2].repeats = [rep]
    r.files[0].new_seconds, r.files[1].new_seconds = 20.0, 300.0
    r.files[2].repeated_seconds = 30.0
    r.new_seconds, r.repeated_seconds = 320.0, 30.0
    r.settings["offer_repeats"] = {"checked": True}
    return r


def test_json_v2_round_trips_the_new_fields(tmp_path: Path) -> None:
    r = _with_new_fields()
    d = report_to_dict(r)
    s0 = d["files"][0]["segments"][0]
    assert s0["chance"] == 2.5e-11 and s0["speed_low"] == 0.49 and s0["speed_high"] == 0.51
    assert "about 1 in 40 billion" in s0["description"]
    assert d["files"][0]["segments"][1]["chance"] is None
    f3 = d["files"][2]
    assert [w["chance"] for w in f3["weak"]] == [3.0] and "weak evidence" in f3["weak"][0]["description"]
    assert f3["repeats"][0]["description"].startswith("offered 0:00.0–0:30.0 repeats offered offer/ep1.mp4")
    assert f3["repeated_seconds"] == 30.0 and d["new_seconds"] == 320.0 and d["repeated_seconds"] == 30.0
    assert d["new_footage"] == ("New footage you would actually get: 5.3 of 8.0 min (67%), not owned and not "
                                "repeated inside the offer.")
    assert d["counts"]["weak"] == 1 and d["counts"]["repeats"] == 1
    back = load_report_json(write_report_json(r, tmp_path / "r.json"))
    assert report_to_dict(back) == d
    assert back.files[2].weak[0].chance == 3.0 and back.files[0].segments[0].speed_high == 0.51


def test_version_1_reports_still_load_with_defaults(tmp_path: Path) -> None:
    d = report_to_dict(sample_report())
    d["schema"] = "overlap.report/1"
    for key in ("repeated_seconds", "new_seconds", "new_footage"):
        del d[key]
    for f in d["files"]:
        for key in ("weak", "repeats", "repeated_seconds", "new_seconds"):
            del f[key]
        for s in f["segments"] + f["below_floor"]:
            for key in ("chance", "speed_low", "speed_high"):
                del s[key]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(d))
    r = load_report_json(p)
    assert r.files[0].segments[0].chance is None and r.files[0].weak == [] and r.files[0].repeats == []
    # Before repeats were checked, new footage is all judged unmatched time, and the sentence says so.
    assert r.files[0].new_seconds == 20.0 and r.files[1].new_seconds == 300.0 and r.new_seconds == 320.0
    assert "did not check the offer for repeats" in new_footage_sentence(r)
    assert report_to_dict(r)["schema"] == "overlap.report/5"


def test_html_shows_new_footage_seal_chance_weak_and_repeats(tmp_path: Path) -> None:
    html = render_report_html(_with_new_fields())
    top = html[:html.index("<h2>")]
    assert "New footage you would actually get: 5.3 of 8.0 min (67%)" in top
    assert f'<code id="seal">{"ab" * 32}</code>' in top and "user-select: all" in html
    assert "about 1 in 40 billion" in html and "0.5x (0.49–0.51x)" in html
    assert "<h2>Weak evidence</h2>" in html and "<h2>Repeats inside the offer</h2>" in html
    assert "repeated inside the offer" in html


def test_html_speaks_plain_words(tmp_path: Path) -> None:
    r = _with_new_fields()
    r.manifest["created"] = "2026-12-01T09:30:00Z"
    parsed = _Collector()
    parsed.feed(render_report_html(r))
    text = "".join(parsed.text)
    for jargon in ("Mean distance", "mean distance", "Score", "v:0", "index", "2026-12-02T15", "2026-12-01T"):
        assert jargon not in text, jargon
    assert "2 December 2026, 15:00 UTC" in text and "1 December 2026, 09:30 UTC" in text
    assert "Words used in this report" in text and GLOSSARY["evidence floor"] in text


def test_one_distance_scale_for_report_and_app() -> None:
    assert [lv.upper for lv in DISTANCE_SCALE] == sorted(lv.upper for lv in DISTANCE_SCALE)
    assert DISTANCE_SCALE[-1].upper >= 256
    assert len({lv.colour for lv in DISTANCE_SCALE}) == len(DISTANCE_SCALE)
    assert distance_colour(0) == distance_colour(DISTANCE_SCALE[0].upper) == DISTANCE_SCALE[0].colour
    assert distance_colour(DISTANCE_SCALE[0].upper + 0.5) == DISTANCE_SCALE[1].colour
    assert distance_colour(300) == DISTANCE_SCALE[-1].colour and distance_words(3) == "near-identical"
    html = render_report_html(sample_report())
    legend = html[html.index('<div class="legend"'):]
    legend = legend[:legend.index("</div>")]
    for lv in DISTANCE_SCALE:
        assert lv.colour in legend and lv.words in legend
    dots = set(re.findall(r'<circle [^>]*fill="(#[0-9a-f]{6})"', html))
    assert dots and dots <= {lv.colour for lv in DISTANCE_SCALE}


def test_csv_has_the_summary_and_the_new_columns(tmp_path: Path) -> None:
    p = write_report_csv(_with_new_fields(), tmp_path / "r.csv")
    with open(p, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    summary = rows[0]
    assert summary["kind"] == "summary" and float(summary["new_seconds"]) == 320.0
    assert "New footage you would actually get" in summary["description"]
    assert float(rows[1]["chance"]) == 2.5e-11 and rows[1]["speed_low"] == "0.4900"
    assert "chance of a coincidence like this: about 1 in 40 billion" in rows[1]["description"]
    kinds = [r["kind"] for r in rows]
    assert kinds.count("weak") == 1 and kinds.count("repeat") == 1


def test_glossary_doc_matches_the_code() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "glossary.md").read_text(encoding="utf-8")
    flat = " ".join(doc.split())
    for term, meaning in GLOSSARY.items():
        assert f"**{term}**" in doc, term
        assert " ".join(meaning.split()) in flat, term
    assert glossary_tip("Seal") == GLOSSARY["seal"] and glossary_tip("nonsense") == ""


def test_date_and_stream_words() -> None:
    assert format_date("2026-12-03T07:49:05Z") == "3 December 2026, 07:49 UTC"
    assert format_date("2026-12-03T08:49:05+01:00") == "3 December 2026, 07:49 UTC"
    assert format_date("not a date") == "not a date"
    assert stream_words("v:0") == "" and stream_words("v:1") == "video track 2"
    assert stream_words("/cam/image") == "/cam/image"


def test_html_of_a_huge_offer_is_summarised_beyond_the_row_budget(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 21: a manifest of many files must not give a report a browser cannot open."""
    from overlap_desktop.core.report import html as rp

    files = [FileResult(query_file=f"clip-{i:05d}.mp4", duration_s=10.0) for i in range(rp.MAX_HTML_FILE_ROWS + 500)]
    big = Report(kind="compare", offered_seconds=10.0 * len(files), matched_seconds=0.0, real_footage_seconds=0.0,
                    files=files)
    html = rp.render_report_html(big)
    assert "clip-00000.mp4" in html and f"clip-{len(files) - 1:05d}.mp4" not in html
    assert "500 more files" in html
    small = rp.render_report_html(Report(kind="compare", offered_seconds=10.0, matched_seconds=0.0,
                                         real_footage_seconds=0.0, files=files[:3]))
    assert "more files" not in small
    assert len(html) < 3_000_000
