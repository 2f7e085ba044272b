"""The report's versioned JSON (layout: docs/report-schema.md): write, read and validate.

Bump :data:`REPORT_SCHEMA` on any incompatible change. Reading is strict: every field is
type-checked and a malformed report is refused with a message that says where; reports of
an older version (:data:`_SCHEMA_READABLE`) are migrated by giving the fields they lack
their documented defaults.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.model import (
    NEAR_FRAMES_CAP,
    FileResult,
    NearFrame,
    Report,
    StreamResult,
    judged_unmatched_seconds,
)
from overlap_desktop.core.report.output import dumps_json, write_atomically
from overlap_desktop.core.report.segment_words import (
    ambiguous_episodes,
    describe_flags,
    describe_repeat,
    describe_segment,
    owned_moments,
)
from overlap_desktop.core.report.signing import report_signature_lines
from overlap_desktop.core.report.wording import evidence_floor, headline, headline_details, new_footage_sentence
from overlap_desktop.core.types import Segment, Span, Variant
from overlap_desktop.errors import InputError

__all__ = ["MAX_NEAR_FRAMES_PER_REPORT", "MAX_PAIRS_PER_REPORT", "MAX_PAIRS_PER_SEGMENT", "MIN_NEAR_FRAMES_PER_FILE",
           "MIN_PAIRS_PER_SEGMENT", "REPORT_SCHEMA", "jsonable",
           "load_report_json", "report_from_dict", "report_to_dict", "thin_pairs", "tool_version",
           "write_report_json"]

#: Identifier and version of the report JSON format.
REPORT_SCHEMA = "overlap.report/5"
_SCHEMA_PREFIX = "overlap.report/"
_SCHEMA_MAJOR = 5
#: Older versions :func:`load_report_json` still reads (missing fields get defaults; see
#: docs/report-schema.md, "Versioning").
_SCHEMA_READABLE = (1, 2, 3, 4, 5)

#: Points per segment kept in the JSON (and plotted): enough to see the line and its noise.
MAX_PAIRS_PER_SEGMENT = 400
#: Points kept over a whole report, so the JSON of a 10,000-segment offer stays a few MB
#: (each segment keeps at least :data:`MIN_PAIRS_PER_SEGMENT`).
MAX_PAIRS_PER_REPORT = 200_000
MIN_PAIRS_PER_SEGMENT = 24
#: Near-identical frames kept over a whole report (about 200 bytes each), so an offer of
#: thousands of "can't tell" files stays a few MB; each such file keeps at least
#: :data:`MIN_NEAR_FRAMES_PER_FILE` (and at most ``NEAR_FRAMES_CAP``, 300).
MAX_NEAR_FRAMES_PER_REPORT = 20_000
MIN_NEAR_FRAMES_PER_FILE = 24


def _r(x: float, nd: int = 3) -> float:
    """Round for JSON; NaN/inf (never expected) become 0 so the JSON stays valid."""
    xf = float(x)
    if not math.isfinite(xf):
        return 0.0
    return round(xf, nd)


def jsonable(obj: Any) -> Any:
    """Convert settings/manifest facts to JSON types (paths, tuples, numpy scalars)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, Variant):
        return obj.to_dict()
    if isinstance(obj, bytes):
        return obj.hex()
    return str(obj)


def thin_pairs(pairs: np.ndarray | None, limit: int = MAX_PAIRS_PER_SEGMENT) -> np.ndarray | None:
    if pairs is None:
        return None
    arr = np.asarray(pairs, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 3 or arr.shape[0] == 0:
        return None
    if arr.shape[0] > limit:
        idx = np.unique(np.linspace(0, arr.shape[0] - 1, limit).round().astype(np.int64))
        arr = arr[idx]
    return arr[:, :3]


def _round_pairs(pairs: np.ndarray) -> list[list[float]]:
    """Plot points for JSON: times to ms, distances to 0.1, non-finite values dropped."""
    arr = pairs[np.isfinite(pairs).all(axis=1)]
    out = np.empty_like(arr)
    out[:, :2] = np.round(arr[:, :2], 3)
    out[:, 2] = np.round(arr[:, 2], 1)
    return out.tolist()


def _sig(x: float | None, digits: int = 3) -> float | None:
    """Round to significant figures (an E-value of 1e-30 must not become 0), ``None`` kept."""
    if x is None:
        return None
    xf = float(x)
    if not math.isfinite(xf):
        return None
    return float(f"{xf:.{digits}g}")


def _opt(x: float | None, nd: int) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else _r(x, nd)


def _segment_to_dict(seg: Segment, *, below_floor: bool, floor_seconds: float | None,
                     max_pairs: int = MAX_PAIRS_PER_SEGMENT, weak: bool = False,
                     repeat: bool = False, ambiguous: int = 0, moments: int = 0) -> dict[str, Any]:
    pairs = thin_pairs(seg.pairs, max_pairs)
    description = describe_repeat(seg) if repeat else describe_segment(
        seg, below_floor=below_floor, floor_seconds=floor_seconds, weak=weak, ambiguous=ambiguous, moments=moments)
    return {
        "query_file": seg.query_file,
        "query_stream": seg.query_stream,
        "query_start": _r(seg.query_start),
        "query_end": _r(seg.query_end),
        "corpus_file": seg.corpus_file,
        "corpus_stream": seg.corpus_stream,
        "corpus_start": _r(seg.corpus_start),
        "corpus_end": _r(seg.corpus_end),
        "speed": _r(seg.speed, 4),
        "speed_low": _opt(seg.speed_low, 4),
        "speed_high": _opt(seg.speed_high, 4),
        "variant": seg.variant.to_dict(),
        "frames": int(seg.frames),
        "mean_distance": _r(seg.mean_distance, 2),
        "score": _r(seg.score, 4),
        "chance": _sig(seg.chance),
        "description": description,
        "pairs": None if pairs is None else _round_pairs(pairs),
    }


def _near_to_dicts(frames: list[NearFrame], cap: int) -> list[dict[str, Any]]:
    """The near-identical frames as JSON, at most ``cap`` of them taken evenly over the list."""
    if len(frames) > cap:
        frames = [frames[int(k * len(frames) / cap)] for k in range(cap)]
    return [{"query_s": _r(n.query_s), "corpus_file": n.corpus_file, "corpus_stream": n.corpus_stream,
             "corpus_s": _r(n.corpus_s), "distance": int(n.distance)} for n in frames]


def _file_to_dict(f: FileResult, floor_seconds: float | None, max_pairs: int,
                  max_near: int = NEAR_FRAMES_CAP) -> dict[str, Any]:
    return {
        "query_file": f.query_file,
        "duration_s": _r(f.duration_s),
        "matched_percent": _r(f.matched_percent, 2),
        "matched_seconds": _r(f.matched_seconds),
        "real_footage_seconds": _r(f.real_footage_seconds),
        "indeterminate_seconds": _r(f.indeterminate_seconds),
        "flags": list(f.flags),
        "flags_text": describe_flags(f),
        "segments": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds,
                                      max_pairs=max_pairs, moments=owned_moments(f, s)) for s in f.segments],
        "below_floor": [_segment_to_dict(s, below_floor=True, floor_seconds=floor_seconds,
                                         max_pairs=max_pairs) for s in f.below_floor],
        "weak": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds, max_pairs=max_pairs,
                                  weak=True) for s in f.weak],
        "repeats": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds, max_pairs=max_pairs,
                                     repeat=True) for s in f.repeats],
        "repeated_seconds": _r(f.repeated_seconds),
        "new_seconds": _r(f.new_seconds),
        "indeterminate": [{"start": _r(s.start_s), "end": _r(s.end_s), "reason": s.reason}
                          for s in f.indeterminate],
        # overlap.report/3: the verdict "can't tell" and matches to several owned episodes.
        "cant_tell_seconds": _r(f.cant_tell_seconds),
        "cant_tell": [{"start": _r(s.start_s), "end": _r(s.end_s), "reason": s.reason} for s in f.cant_tell],
        "ambiguous": [_segment_to_dict(s, below_floor=False, floor_seconds=floor_seconds, max_pairs=max_pairs,
                                       ambiguous=ambiguous_episodes(f, s)) for s in f.ambiguous],
        "episodes": jsonable(f.episodes),
        # overlap.report/4: per stream (camera of an episode), its own figures in its own time.
        "streams": [_stream_to_dict(s) for s in f.streams],
        # overlap.report/5: where the "can't tell" time's near-identical frames lie in owned footage.
        "near_frames": _near_to_dicts(f.near_frames, max_near),
    }


def _stream_to_dict(s: StreamResult) -> dict[str, Any]:
    return {"stream": s.stream, "episode": s.episode, "camera": s.camera, "offset_s": _r(s.offset_s),
            "duration_s": _r(s.duration_s), "owned_seconds": _r(s.owned_seconds), "new_seconds": _r(s.new_seconds),
            "cant_tell_seconds": _r(s.cant_tell_seconds), "indeterminate_seconds": _r(s.indeterminate_seconds),
            "repeated_seconds": _r(s.repeated_seconds)}


def _streams_from(d: Mapping[str, Any], w: str) -> list[StreamResult]:
    out = []
    for i, sd in enumerate(_get(d, "streams", list, w, [])):
        where = f"{w}: streams[{i}]"
        if not isinstance(sd, Mapping):
            raise _Bad(f"{where}: expected an object")
        episode = _get(sd, "episode", int, where, None)
        out.append(StreamResult(
            stream=_get(sd, "stream", str, where), duration_s=_num(sd, "duration_s", where),
            owned_seconds=_num(sd, "owned_seconds", where), new_seconds=_num(sd, "new_seconds", where),
            cant_tell_seconds=_num(sd, "cant_tell_seconds", where),
            indeterminate_seconds=_num(sd, "indeterminate_seconds", where, 0.0),
            repeated_seconds=_num(sd, "repeated_seconds", where, 0.0),
            episode=None if isinstance(episode, bool) else episode,
            camera=_get(sd, "camera", str, where, ""), offset_s=_num(sd, "offset_s", where, 0.0)))
    return out


def tool_version(report: Report) -> str:
    if report.tool_version:
        return report.tool_version
    from overlap_desktop import __version__

    return __version__


def report_to_dict(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (layout: docs/report-schema.md).

    Times are seconds rounded to milliseconds; percentages are 0..100. Derived
    fields (``overlap_percent``, ``headline``, ``flags_text``, ``description``)
    are written for readers that do not run this code; :func:`load_report_json`
    recomputes them rather than trusting them.
    """
    fl = evidence_floor(report)
    n_segments = sum(len(f.segments) + len(f.below_floor) + len(f.weak) + len(f.repeats) + len(f.ambiguous)
                     for f in report.files)
    max_pairs = max(MIN_PAIRS_PER_SEGMENT,
                    min(MAX_PAIRS_PER_SEGMENT, MAX_PAIRS_PER_REPORT // max(1, n_segments)))
    max_near = max(MIN_NEAR_FRAMES_PER_FILE, min(NEAR_FRAMES_CAP, MAX_NEAR_FRAMES_PER_REPORT // max(
        1, sum(1 for f in report.files if f.near_frames))))
    created = report.created or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {
        "schema": REPORT_SCHEMA,
        "kind": report.kind,
        "created": created,
        "tool": {"name": "overlap-desktop", "version": tool_version(report)},
        "headline": headline(report),
        "details": headline_details(report),
        "overlap_percent": _r(report.overlap_percent, 2),
        "offered_seconds": _r(report.offered_seconds),
        "matched_seconds": _r(report.matched_seconds),
        "real_footage_seconds": _r(report.real_footage_seconds),
        "indeterminate_seconds": _r(report.indeterminate_seconds),
        "repeated_seconds": _r(report.repeated_seconds),
        "new_seconds": _r(report.new_seconds),
        "cant_tell_seconds": _r(report.cant_tell_seconds),
        "new_footage": new_footage_sentence(report),
        # Who signed the offer(s), in words (issue 37); the facts are manifest["signature"].
        "signature": report_signature_lines(report),
        "counts": {
            "files": len(report.files),
            "matched_files": sum(1 for f in report.files if f.segments),
            "segments": sum(len(f.segments) for f in report.files),
            "below_floor": sum(len(f.below_floor) for f in report.files),
            "weak": sum(len(f.weak) for f in report.files),
            "repeats": sum(len(f.repeats) for f in report.files),
            "ambiguous": sum(len(f.ambiguous) for f in report.files),
            "indeterminate_spans": sum(len(f.indeterminate) for f in report.files),
        },
        "files": [_file_to_dict(f, fl, max_pairs, max_near) for f in report.files],
        "manifest": jsonable(report.manifest),
        "settings": jsonable(report.settings),
        **({"text_overlap": jsonable(report.text_overlap)} if report.text_overlap is not None else {}),
    }


def write_report_json(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report as versioned JSON (atomically: temp file, fsync, rename).

    Args:
        report: The report.
        path: Destination ``.json``.

    Returns:
        The path written.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, dumps_json(report_to_dict(report)))
    return p


class _Bad(Exception):
    pass


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str,
         default: Any = ...) -> Any:
    if key not in d or d[key] is None:
        if default is ...:
            raise _Bad(f"{where}: missing {key!r}")
        return default
    v = d[key]
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool) and kind is not bool and (kind is float or kind is int):
        raise _Bad(f"{where}: {key!r} must be a number")
    if not isinstance(v, kind):
        raise _Bad(f"{where}: {key!r} has the wrong type ({type(v).__name__})")
    return v


def _num(d: Mapping[str, Any], key: str, where: str, default: Any = ...) -> float:
    v = _get(d, key, (int, float), where, default)
    if isinstance(v, bool):
        raise _Bad(f"{where}: {key!r} must be a number")
    v = float(v)
    if not math.isfinite(v):
        raise _Bad(f"{where}: {key!r} is not finite")
    return v


def _segment_from_dict(d: Any, where: str) -> Segment:
    if not isinstance(d, Mapping):
        raise _Bad(f"{where}: expected an object")
    vd = _get(d, "variant", Mapping, where, {})
    try:
        variant = Variant.from_dict(dict(vd))
    except (TypeError, ValueError, KeyError) as exc:
        raise _Bad(f"{where}: bad variant ({exc})") from exc
    pairs_raw = d.get("pairs")
    pairs = None
    if pairs_raw is not None:
        try:
            arr = np.asarray(pairs_raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise _Bad(f"{where}: bad pairs") from exc
        if arr.ndim == 2 and arr.shape[1] == 3:
            pairs = arr
        elif arr.size:
            raise _Bad(f"{where}: pairs must be [query_s, corpus_s, distance] triples")
    return Segment(
        query_file=_get(d, "query_file", str, where, ""),
        query_stream=_get(d, "query_stream", str, where, ""),
        query_start=_num(d, "query_start", where),
        query_end=_num(d, "query_end", where),
        corpus_file=_get(d, "corpus_file", str, where, ""),
        corpus_stream=_get(d, "corpus_stream", str, where, ""),
        corpus_start=_num(d, "corpus_start", where),
        corpus_end=_num(d, "corpus_end", where),
        speed=_num(d, "speed", where, 1.0),
        variant=variant,
        frames=int(_num(d, "frames", where, 0)),
        mean_distance=_num(d, "mean_distance", where, 0.0),
        score=_num(d, "score", where, 0.0),
        pairs=pairs,
        chance=_opt_num(d, "chance", where),
        speed_low=_opt_num(d, "speed_low", where),
        speed_high=_opt_num(d, "speed_high", where),
    )


def _opt_num(d: Mapping[str, Any], key: str, where: str) -> float | None:
    """An optional number (absent or null in reports older than ``overlap.report/2``)."""
    if d.get(key) is None:
        return None
    return _num(d, key, where)


def _spans_from(d: Mapping[str, Any], key: str, w: str) -> list[Span]:
    spans = []
    for i, sd in enumerate(_get(d, key, list, w, [])):
        if not isinstance(sd, Mapping):
            raise _Bad(f"{w}: {key}[{i}]: expected an object")
        spans.append(Span(_num(sd, "start", w), _num(sd, "end", w), str(sd.get("reason", "") or "")))
    return spans


def _file_from_dict(d: Any, where: str) -> FileResult:
    if not isinstance(d, Mapping):
        raise _Bad(f"{where}: expected an object")
    name = _get(d, "query_file", str, where)
    w = f"{where} ({safe_text(name, max_len=60)})"
    spans = _spans_from(d, "indeterminate", w)
    flags = _get(d, "flags", list, w, [])
    if not all(isinstance(x, str) for x in flags):
        raise _Bad(f"{w}: flags must be words")
    episodes = _get(d, "episodes", list, w, [])
    f = FileResult(
        query_file=name,
        duration_s=_num(d, "duration_s", w),
        matched_seconds=_num(d, "matched_seconds", w, 0.0),
        real_footage_seconds=_num(d, "real_footage_seconds", w, 0.0),
        segments=[_segment_from_dict(s, f"{w}: segments[{i}]")
                  for i, s in enumerate(_get(d, "segments", list, w, []))],
        below_floor=[_segment_from_dict(s, f"{w}: below_floor[{i}]")
                     for i, s in enumerate(_get(d, "below_floor", list, w, []))],
        indeterminate=spans,
        flags=list(flags),
        episodes=[e for e in episodes if isinstance(e, dict)],
        weak=[_segment_from_dict(s, f"{w}: weak[{i}]") for i, s in enumerate(_get(d, "weak", list, w, []))],
        repeats=[_segment_from_dict(s, f"{w}: repeats[{i}]")
                 for i, s in enumerate(_get(d, "repeats", list, w, []))],
        repeated_seconds=_num(d, "repeated_seconds", w, 0.0),
        # overlap.report/1 and /2 predate "can't tell": none, as those reports were written.
        ambiguous=[_segment_from_dict(s, f"{w}: ambiguous[{i}]")
                   for i, s in enumerate(_get(d, "ambiguous", list, w, []))],
        cant_tell=_spans_from(d, "cant_tell", w),
        # overlap.report/1 to /3 predate per-stream figures: none (the file is one timeline).
        streams=_streams_from(d, w),
        # overlap.report/1 to /4 predate near-identical frame pairs: none.
        near_frames=_near_frames_from(d, w),
    )
    # overlap.report/1 predates repeats: its new footage is all judged unmatched time.
    f.new_seconds = _num(d, "new_seconds", w, round(judged_unmatched_seconds(f), 3))
    return f


def _near_frames_from(d: Mapping[str, Any], w: str) -> list[NearFrame]:
    out: list[NearFrame] = []
    for i, nd in enumerate(_get(d, "near_frames", list, w, [])):
        where = f"{w}: near_frames[{i}]"
        if not isinstance(nd, Mapping):
            raise _Bad(f"{where} is not an object")
        out.append(NearFrame(_num(nd, "query_s", where), _get(nd, "corpus_file", str, where),
                             _get(nd, "corpus_stream", str, where, ""), _num(nd, "corpus_s", where),
                             int(_num(nd, "distance", where))))
    return out


def _check_schema(data: Any) -> None:
    if not isinstance(data, Mapping):
        raise _Bad("not a report: the top level is not a JSON object")
    schema = data.get("schema")
    if not isinstance(schema, str) or not schema.startswith(_SCHEMA_PREFIX):
        raise _Bad(f"not an overlap report (schema is {safe_text(repr(schema), max_len=60)}, "
                   f"expected {REPORT_SCHEMA!r})")
    version = schema[len(_SCHEMA_PREFIX):]
    if not version.isdigit():
        raise _Bad(f"unreadable report schema version {safe_text(version, max_len=40)!r}")
    if int(version) not in _SCHEMA_READABLE:
        newer = int(version) > _SCHEMA_MAJOR
        raise _Bad(f"report schema {schema!r} is not supported by this version (it reads {REPORT_SCHEMA!r})"
                   + ("; it was written by a newer overlap desktop — update to open it" if newer else ""))


def _text_overlap_from_dict(block: Any) -> dict[str, Any] | None:
    if block is None:
        return None
    where = "text_overlap"
    if not isinstance(block, Mapping):
        raise _Bad(f"{where}: expected an object")
    status = _get(block, "status", str, where)
    if status == "checked":
        for key in ("examples", "matched"):
            v = _num(block, key, where)
            if v < 0 or v != int(v):
                raise _Bad(f"{where}: {key!r} must be a whole number")
        for i, ex in enumerate(_get(block, "matched_examples", list, where, [])):
            if not isinstance(ex, Mapping) or not isinstance(ex.get("text", ""), str):
                raise _Bad(f"{where}: matched_examples[{i}]: expected an object with a text")
    return dict(block)


def report_from_dict(data: Any) -> Report:
    """Rebuild a :class:`Report` from :func:`report_to_dict` data.

    Unknown keys are ignored (additive changes keep the schema version); derived
    values are recomputed from the stored facts.

    Raises:
        InputError: wrong schema version or malformed content (message says where).
    """
    try:
        _check_schema(data)
        raw_files = _get(data, "files", list, "report", [])
        files = [_file_from_dict(f, f"files[{i}]") for i, f in enumerate(raw_files)]
        tool = data.get("tool") if isinstance(data.get("tool"), Mapping) else {}
        return Report(
            kind=_get(data, "kind", str, "report"),
            offered_seconds=_num(data, "offered_seconds", "report"),
            matched_seconds=_num(data, "matched_seconds", "report"),
            real_footage_seconds=_num(data, "real_footage_seconds", "report", 0.0),
            indeterminate_seconds=_num(data, "indeterminate_seconds", "report", 0.0),
            files=files,
            manifest=dict(_get(data, "manifest", Mapping, "report", {})),
            settings=dict(_get(data, "settings", Mapping, "report", {})),
            created=_get(data, "created", str, "report", ""),
            tool_version=str(tool.get("version", "") or ""),
            text_overlap=_text_overlap_from_dict(data.get("text_overlap")),
            repeated_seconds=_num(data, "repeated_seconds", "report",
                                  round(sum(f.repeated_seconds for f in files), 3)),
            new_seconds=_num(data, "new_seconds", "report", round(sum(f.new_seconds for f in files), 3)),
            cant_tell_seconds=_num(data, "cant_tell_seconds", "report",
                                   round(sum(f.cant_tell_seconds for f in files), 3)),
        )
    except _Bad as exc:
        raise InputError(str(exc)) from None


def load_report_json(path: str | os.PathLike[str]) -> Report:
    """Read a report written by :func:`write_report_json`.

    Args:
        path: A ``.json`` report.

    Returns:
        The report (segment plot points included when they were stored).

    Raises:
        InputError: unreadable file, not JSON, wrong schema version or malformed
            content; the message names the file and the problem.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the report: {exc.strerror or exc}", path=p) from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a JSON report: {exc}", path=p) from None
    try:
        return report_from_dict(data)
    except InputError as exc:
        raise InputError(exc.message, path=p) from None

