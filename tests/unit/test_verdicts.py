"""The verdict rule: owned only with proof, new only where shown unowned, else "can't tell"."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from overlap_desktop.core.match.repeats import new_and_repeated_seconds
from overlap_desktop.core.match.verdicts import (
    REASON_AMBIGUOUS,
    REASON_BELOW_FLOOR,
    REASON_SAME_MOTION,
    REASON_STILL,
    REASON_WEAK,
    cant_tell_spans,
    settle_episodes,
    verdict_problems,
)
from overlap_desktop.core.report.json_io import load_report_json, report_to_dict, write_report_json
from overlap_desktop.core.report.model import REPEATS_SETTING, FileResult, Report, judged_unmatched_seconds
from overlap_desktop.core.report.segment_words import describe_segment
from overlap_desktop.core.report.wording import headline_details
from overlap_desktop.core.types import Segment, Span, StreamFingerprints, Variant


def seg(q0: float, q1: float, owned: str, mean: float, c0: float | None = None) -> Segment:
    c0 = q0 if c0 is None else c0
    pairs = np.array([[t, c0 + t - q0, mean] for t in np.arange(q0, q1 + 1e-9, 0.25)])
    return Segment("offer.mp4", "v:0", q0, q1, owned, "v:0", c0, c0 + q1 - q0, 1.0, Variant(),
                   int(pairs.shape[0]), mean, 1.0, pairs=pairs, chance=1e-9)


def fp(codes: np.ndarray) -> StreamFingerprints:
    n = codes.shape[0]
    return StreamFingerprints((np.arange(n) * 250_000_000).astype(np.int64), np.full(n, 90, np.uint8),
                              codes[:, None, :], (Variant(),), np.ones(n, bool), [], 4.0, n / 4.0)


RNG = np.random.default_rng(3)
EP_A = RNG.integers(0, 256, (80, 32), dtype=np.uint8)


def flipped(codes: np.ndarray, bits: int, seed: int) -> np.ndarray:
    """``codes`` with ``bits`` random bits flipped per row."""
    rng = np.random.default_rng(seed)
    out = np.unpackbits(codes, axis=1)
    for row in out:
        row[rng.choice(256, bits, replace=False)] ^= 1
    return np.packbits(out, axis=1)


def test_a_stretch_matching_two_episodes_equally_is_not_owned() -> None:
    """Scripted repeats: 11 and 12 bits from two owned episodes that differ from each other."""
    fps = {"ep1": fp(EP_A), "ep2": fp(flipped(EP_A, 14, 1))}
    owned, ambiguous = settle_episodes([seg(0, 16, "ep1", 11.0), seg(0, 16, "ep2", 12.0)],
                                       lambda s: fps[s.corpus_file])
    assert owned == [] and len(ambiguous) == 2
    text = describe_segment(ambiguous[0], ambiguous=2)
    assert "the same motion as 2 owned episodes; can't tell which, if any, was copied" in text


def test_a_copy_clearly_closer_to_its_source_is_owned_and_attributed_once() -> None:
    """A true copy: 4.7 bits from its source, 9.9 from the twin (the issue's measurement)."""
    fps = {"ep1": fp(EP_A), "ep2": fp(flipped(EP_A, 12, 2))}
    owned, ambiguous = settle_episodes([seg(0, 16, "ep1", 4.7), seg(0, 16, "ep2", 9.9)],
                                       lambda s: fps[s.corpus_file])
    assert [s.corpus_file for s in owned] == ["ep1"] and ambiguous == []


def test_the_library_holding_one_footage_twice_still_owns_it() -> None:
    """Two owned files that are copies of each other (2 bits apart): a match to both proves ownership."""
    fps = {"a": fp(EP_A), "a-copy": fp(flipped(EP_A, 2, 3))}
    owned, ambiguous = settle_episodes([seg(0, 16, "a", 3.0), seg(0, 16, "a-copy", 4.0)],
                                       lambda s: fps[s.corpus_file])
    assert len(owned) == 2 and ambiguous == []


def test_pieces_in_sequence_are_a_splice_not_an_ambiguity() -> None:
    owned, ambiguous = settle_episodes([seg(0, 12, "ep1", 5.0), seg(12, 30, "ep2", 6.0)], lambda s: None)
    assert len(owned) == 2 and ambiguous == []


def file_with_evidence() -> FileResult:
    f = FileResult("offer.mp4", 60.0)
    f.segments = [seg(0, 20, "own", 3.0)]
    f.below_floor = [seg(18, 26, "own", 5.0)]  # overlaps owned time: only 20..26 is "can't tell"
    f.weak = [seg(30, 40, "own", 30.0)]
    f.ambiguous = [seg(40, 52, "ep1", 11.0), seg(40, 52, "ep2", 12.0)]
    f.indeterminate = [Span(50.0, 55.0, "static")]
    f.matched_seconds = 20.0
    return f


def test_uncounted_evidence_is_cant_tell_never_new() -> None:
    f = file_with_evidence()
    f.cant_tell = cant_tell_spans(f, still=[(55.0, 57.0)])
    got = [(sp.start_s, sp.end_s, sp.reason) for sp in f.cant_tell]
    assert got == [(20.0, 26.0, REASON_BELOW_FLOOR), (30.0, 40.0, REASON_WEAK), (40.0, 50.0, REASON_AMBIGUOUS),
                   (55.0, 57.0, REASON_STILL)]
    f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    # 60 s: 20 owned, 5 not judged, 28 can't tell; new is only what was shown unowned.
    assert f.cant_tell_seconds == 28.0 and f.new_seconds == 7.0
    assert judged_unmatched_seconds(f) == 7.0
    report = Report("compare", 60.0, 20.0, 20.0, 5.0, files=[f], new_seconds=7.0, cant_tell_seconds=28.0,
                    settings={REPEATS_SETTING: {"checked": True}, "floor_seconds": 10.0})
    assert verdict_problems(report) == []
    assert any("Can't tell for 28 s" in line for line in headline_details(report))


def test_the_same_motion_as_owned_footage_is_cant_tell_where_nothing_else_speaks() -> None:
    """A rival line (distinctly the same motion, not one moment) is evidence of ownership: its
    offered time is can't tell, after owned, unjudged and every stronger reason; time it does not
    cover stays new."""
    f = file_with_evidence()
    f.cant_tell = cant_tell_spans(f, still=[(55.0, 57.0)], same_motion=[(10.0, 32.0), (56.0, 58.0)])
    got = [(sp.start_s, sp.end_s, sp.reason) for sp in f.cant_tell]
    assert got == [(20.0, 26.0, REASON_BELOW_FLOOR), (26.0, 30.0, REASON_SAME_MOTION), (30.0, 40.0, REASON_WEAK),
                   (40.0, 50.0, REASON_AMBIGUOUS), (55.0, 57.0, REASON_STILL), (57.0, 58.0, REASON_SAME_MOTION)]
    f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    assert f.new_seconds == 2.0  # 58..60


def test_the_check_catches_evidence_counted_new() -> None:
    f = file_with_evidence()  # cant_tell left empty: the old accounting
    f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    report = Report("compare", 60.0, 20.0, 20.0, 5.0, files=[f], new_seconds=f.new_seconds,
                    settings={REPEATS_SETTING: {"checked": True}})
    problems = verdict_problems(report)
    assert any("neither owned nor can't tell" in p for p in problems), problems


def test_json_v3_round_trips_and_v2_reads_without_cant_tell(tmp_path: Path) -> None:
    f = file_with_evidence()
    f.cant_tell = cant_tell_spans(f)
    f.repeated_seconds, f.new_seconds = new_and_repeated_seconds(f)
    report = Report("compare", 60.0, 20.0, 20.0, 5.0, files=[f], new_seconds=f.new_seconds,
                    cant_tell_seconds=f.cant_tell_seconds, settings={REPEATS_SETTING: {"checked": True}})
    p = write_report_json(report, tmp_path / "r.json")
    back = load_report_json(p)
    assert back.cant_tell_seconds == report.cant_tell_seconds
    assert [(s.start_s, s.end_s, s.reason) for s in back.files[0].cant_tell] == \
        [(s.start_s, s.end_s, s.reason) for s in f.cant_tell]
    assert len(back.files[0].ambiguous) == 2
    d = json.loads(p.read_text())
    assert "can't tell which, if any, was copied" in d["files"][0]["ambiguous"][0]["description"]
    # An overlap.report/2 file has none of the new fields: it reads as written then.
    d["schema"] = "overlap.report/2"
    for key in ("cant_tell_seconds",):
        d.pop(key)
    for fd in d["files"]:
        for key in ("cant_tell", "cant_tell_seconds", "ambiguous"):
            fd.pop(key)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(d))
    r2 = load_report_json(old)
    assert r2.cant_tell_seconds == 0.0 and r2.files[0].cant_tell == [] and r2.files[0].ambiguous == []
    assert report_to_dict(r2)["schema"] == "overlap.report/5"


def test_the_floor_counts_unjudged_time_a_match_runs_into() -> None:
    """A 15 s reversed copy of which 9.8 s show an empty room is 15 s of evidence, not a 5 s piece."""
    from overlap_desktop.core.match.verdicts import evidence_seconds

    s = seg(9.5, 15.0, "room", 2.8)
    assert evidence_seconds(s, [Span(0.0, 9.8, "static")]) == 15.0
    assert evidence_seconds(s, []) == 5.5
    # Unjudged time that does not touch the match (more than 1.5 s away) speaks for nothing.
    assert evidence_seconds(s, [Span(0.0, 7.0, "static")]) == 5.5


def test_two_cameras_of_one_offered_recording_are_not_rivals() -> None:
    """An offered dataset with a top and a wrist camera, each matching its owned camera: both owned."""
    top, wrist = seg(0, 16, "lib", 1.3), seg(0, 16, "lib", 1.5)
    top.query_stream, top.corpus_stream = "top", "top"
    wrist.query_stream, wrist.corpus_stream = "wrist", "wrist"
    owned, ambiguous = settle_episodes([top, wrist], lambda s: None)
    assert len(owned) == 2 and ambiguous == []
