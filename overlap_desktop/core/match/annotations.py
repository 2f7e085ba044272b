"""What a comparison adds beyond footage: annotation overlap and episode labels.

- :func:`annotation_overlap` checks the lab's evaluation set against the keyed n-gram
  hashes a vendor's manifest carries (TEXT_NGRAMS section) and returns the report's
  ``text_overlap`` block. Only the lab's own text appears in it: the manifest holds no
  text, just "this n-gram occurs".
- :func:`fill_episodes` maps matched segments to dataset episodes on both sides
  (LeRobot): "offered episode 41, 00:12–00:31 matches your episode 7, 00:02–00:21".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.manifest.sections import clean_episodes
from overlap_desktop.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.manifest.format import Manifest
    from overlap_desktop.core.report.model import FileResult
    from overlap_desktop.core.text.overlap import Document
    from overlap_desktop.core.types import Segment

__all__ = [
    "MAX_LISTED_EXAMPLES",
    "TEXT_OVERLAP_SCHEMA",
    "annotation_overlap",
    "fill_episodes",
    "index_episode_lookup",
    "manifest_episode_lookup",
]

TEXT_OVERLAP_SCHEMA = "overlap.text-overlap/1"
#: Matched evaluation examples listed with their text in a report (all are counted).
MAX_LISTED_EXAMPLES = 1000
#: Shared n-grams listed per example.
MAX_NGRAMS_PER_EXAMPLE = 5
#: Longest example text kept in a report (characters).
MAX_EXAMPLE_CHARS = 2000
#: Episode pieces shorter than this (seconds) are sampling noise at an episode boundary
#: and are not listed when the segment has longer pieces.
MIN_PIECE_SECONDS = 0.5

EpisodeLookup = Callable[[str, str], list[tuple[int, float, float]]]


# --------------------------------------------------------------------------- text overlap


def annotation_overlap(manifest: Manifest, eval_sources: Sequence[str | os.PathLike[str]], *,
                       fields: Sequence[str] | None = None, n: int | None = None) -> dict[str, Any]:
    """Check evaluation examples against the manifest's annotation n-gram hashes.

    Args:
        manifest: A read manifest (its ``text_ngrams`` may be ``None``).
        eval_sources: The lab's evaluation set (text, JSONL/JSON, LeRobot folder, MCAP).
        fields: JSON fields holding the text (default: every string field).
        n: Force the n-gram size (default: the percentile rule, moved to the nearest n the
            manifest carries).

    Returns:
        The JSON-ready ``text_overlap`` block of a report (docs/report-schema.md):
        ``status`` is ``"checked"``, or ``"no-annotations"`` when the manifest carries no
        hashes (then nothing else is read).

    Raises:
        InputError: an evaluation source is unreadable or malformed.
    """
    from overlap_desktop.core.report.wording import text_overlap_sentence
    from overlap_desktop.core.text.overlap import check_hashed_overlap, iter_documents

    sources = [os.fspath(p) for p in eval_sources]
    tn = manifest.text_ngrams
    if tn is None or not tn.hashes:
        return {"schema": TEXT_OVERLAP_SCHEMA, "status": "no-annotations", "eval_sources": sources,
                "message": "The manifest carries no annotation n-gram hashes, so annotation overlap "
                           "could not be checked."}
    docs: list[Document] = []
    for p in sources:
        try:
            docs.extend(iter_documents(Path(p), fields=fields))
        except RecursionError:
            # JSON nested thousands of levels deep is not an evaluation set; name the file.
            raise InputError("this evaluation file nests JSON too deeply to hold evaluation text (flatten it, "
                             "or give one example per line)", path=p) from None
    res = check_hashed_overlap(docs, tn.hashes, tokenizer=tn.tokenizer, n=n)
    grams: dict[int, list[dict[str, Any]]] = {}
    for mt in res.matches:
        lst = grams.setdefault(mt.example, [])
        if len(lst) < MAX_NGRAMS_PER_EXAMPLE:
            lst.append({"position": mt.position, "ngram": mt.ngram})
    listed = []
    for ex in res.matched_examples[:MAX_LISTED_EXAMPLES]:
        d = docs[ex]
        text = d.text if len(d.text) <= MAX_EXAMPLE_CHARS else d.text[:MAX_EXAMPLE_CHARS - 1] + "…"
        listed.append({"example": ex, "source": d.source, "locator": d.locator, "text": text,
                       "ngrams": grams.get(ex, [])})
    block = {
        "schema": TEXT_OVERLAP_SCHEMA,
        "status": "checked",
        "tokenizer": res.tokenizer,
        "n": res.n,
        "manifest_ns": tn.ns,
        "eval_sources": sources,
        "examples": res.examples,
        "too_short": res.too_short,
        "matched": len(res.matched_examples),
        "matched_percent": round(res.matched_percent, 3),
        "matched_examples": listed,
    }
    block["message"] = text_overlap_sentence(block)
    return block


# --------------------------------------------------------------------------- episodes


def manifest_episode_lookup(manifest: Manifest) -> EpisodeLookup:
    """``(file name, stream key) -> episode spans`` from a manifest's STREAM_EPISODES."""
    table = {(f.name, s.key): list(s.episodes) for f in manifest.files for s in f.streams
             if getattr(s, "episodes", None)}
    return lambda name, key: table.get((name, key), [])


def index_episode_lookup(index: Any) -> EpisodeLookup:
    """``(indexed path, stream key) -> episode spans`` from the stream details the index
    recorded (the reader's ``StreamInfo.extra["episodes"]``), loaded on first use."""
    sid_of: dict[tuple[str, str], int] | None = None
    cache: dict[tuple[str, str], list[tuple[int, float, float]]] = {}

    def lookup(path: str, key: str) -> list[tuple[int, float, float]]:
        nonlocal sid_of
        if (path, key) in cache:
            return cache[(path, key)]
        if sid_of is None:
            try:
                paths = {f.id: f.path for f in index.files()}
                sid_of = {(paths[fid], k): sid for sid, fid, k in index.stream_ids() if fid in paths}
            except (AttributeError, KeyError):
                sid_of = {}
        spans: list[tuple[int, float, float]] = []
        sid = sid_of.get((path, key))
        if sid is not None:
            try:
                info = index.stream_details(sid)
                spans = clean_episodes((info.extra or {}).get("episodes"), info.duration_s)
            except (KeyError, AttributeError, ValueError):
                spans = []
        cache[(path, key)] = spans
        return spans

    return lookup


def _clock(seconds: float) -> str:
    from overlap_desktop.core.report.formats import format_clock

    return format_clock(seconds)


def _pieces(episodes: list[tuple[int, float, float]], a: float, b: float,
            stream: str = "") -> list[dict[str, Any] | None]:
    from overlap_desktop.core.ingest.readers.lerobot import camera_of_key, episode_spans_for

    if not episodes:
        return [None]
    found = episode_spans_for({"episodes": episodes, "camera": camera_of_key(stream)}, a, b)
    long = [p for p in found if p["file_end_s"] - p["file_start_s"] >= MIN_PIECE_SECONDS]
    out: list[dict[str, Any] | None] = list(long or found[:1])
    return out or [None]


def _sub_label(piece: dict[str, Any], a: float, b: float) -> dict[str, Any]:
    """The episode piece restricted to file time ``[a, b]``."""
    from overlap_desktop.core.ingest.readers.lerobot import format_episode_span

    e0 = piece["file_start_s"] - piece["start_s"]
    lo, hi = max(a, piece["file_start_s"]), min(b, piece["file_end_s"])
    hi = max(lo, hi)
    return {"episode": piece["episode"], "start_s": round(lo - e0, 3), "end_s": round(hi - e0, 3),
            "file_start_s": round(lo, 3), "file_end_s": round(hi, 3),
            "camera": piece.get("camera"),
            "label": format_episode_span(piece["episode"], lo - e0, hi - e0, piece.get("camera"))}


def _segment_episodes(seg: Segment, q_eps: list[tuple[int, float, float]],
                      c_eps: list[tuple[int, float, float]], owned_word: str) -> list[dict[str, Any]]:
    qs, qe, cs, ce = seg.query_start, seg.query_end, seg.corpus_start, seg.corpus_end

    def q2c(t: float) -> float:
        return cs if qe == qs else cs + (t - qs) * (ce - cs) / (qe - qs)

    def c2q(c: float) -> float:
        return qs if ce == cs else qs + (c - cs) * (qe - qs) / (ce - cs)

    out: list[dict[str, Any]] = []
    for op in _pieces(q_eps, qs, qe, seg.query_stream):
        a, b = (op["file_start_s"], op["file_end_s"]) if op else (qs, qe)
        ca, cb = sorted((q2c(a), q2c(b)))
        for cp in _pieces(c_eps, ca, cb, seg.corpus_stream):
            if cp is not None:
                # The offered stretch that lands inside this owned episode.
                qa, qb = sorted((c2q(cp["file_start_s"]), c2q(cp["file_end_s"])))
                qa, qb = max(a, qa), min(b, qb)
                if qb < qa:
                    continue
            else:
                qa, qb = a, b
            ca2, cb2 = sorted((q2c(qa), q2c(qb)))
            off = _sub_label(op, qa, qb) if op else None
            own = _sub_label(cp, ca2, cb2) if cp else None
            left = f"offered {off['label']}" if off else f"offered {_clock(qa)}–{_clock(qb)}"
            right = (f"{owned_word} {own['label']}" if own
                     else f"{'owned' if owned_word == 'your' else owned_word} {seg.corpus_file} "
                          f"{_clock(ca2)}–{_clock(cb2)}")
            out.append({"query_start": round(qa, 3), "query_end": round(qb, 3), "corpus_start": round(ca2, 3),
                        "corpus_end": round(cb2, 3), "offered": off, "owned": own,
                        "label": f"{left} matches {right}"})
    return out


def fill_episodes(files: Sequence[FileResult], query_lookup: EpisodeLookup | None,
                  corpus_lookup: EpisodeLookup | None, *, owned_word: str = "your") -> None:
    """Set ``FileResult.episodes`` for segments whose offered or owned stream has episodes.

    Each entry names the segment (``segment`` index into ``segments``, or into
    ``below_floor`` when ``below_floor`` is true), the query and corpus file times of the
    piece, the ``offered`` and ``owned`` episode pieces (``None`` on a side without
    episodes) and a plain ``label``. A segment crossing episode boundaries gives one entry
    per pair of episodes it joins. ``owned_word`` names the corpus side in labels
    (``"your"``; ``"offer B"`` when two offers are compared).
    """
    def none(_a: str, _b: str) -> list[tuple[int, float, float]]:
        return []

    ql = query_lookup or none
    cl = corpus_lookup or none
    for f in files:
        out: list[dict[str, Any]] = []
        for below, segs in ((False, f.segments), (True, f.below_floor)):
            for i, seg in enumerate(segs):
                q_eps = ql(seg.query_file or f.query_file, seg.query_stream)
                c_eps = cl(seg.corpus_file, seg.corpus_stream)
                if not q_eps and not c_eps:
                    continue
                for entry in _segment_episodes(seg, q_eps, c_eps, owned_word):
                    out.append({"segment": i, "below_floor": below, "query_stream": seg.query_stream,
                                "corpus_file": seg.corpus_file, "corpus_stream": seg.corpus_stream, **entry})
        f.episodes = out
