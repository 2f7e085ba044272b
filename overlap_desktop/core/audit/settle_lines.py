"""The lines behind "can't tell": what a report does not keep, found again for the settle check.

A report keeps the lines of ambiguous, weak and below-the-floor matches, but much of its
"can't tell" time rests on lines it drops: rival episodes replaying the same motion ("the same
motion as owned footage, not shown to be the same moment") and offered frames near-identical
to owned frames on no line ("near-identical to owned footage, too still or too short to place
in time"). :func:`open_lines` runs the comparison's matching once more for the files that need
it and returns every line as an ordinary
:class:`~overlap_desktop.core.types.Segment`; :func:`open_stretches` picks those that overlap a
file's "can't tell" time, as the settle check's candidates.

Near pieces are left out: a near piece is not a line, only an owned frame it resembles (the
first of several equally close ones, at normal speed), so a check along it compares the offer
with a moment that may not be its source. Measured on the verdict suites (bench/bench_settle.py):
settled along near pieces, a reversed copy of a fixed camera read 2.5 s new and a rescaled car
park copy 0.5 s new, because people and cars had moved between the two moments; their time
stays "can't tell".
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.audit.settle import OpenStretch, stretch_from_segment
from overlap_desktop.core.match.corpora import IndexCorpus
from overlap_desktop.core.match.offer import manifest_queries
from overlap_desktop.core.match.pipeline import search_orientations
from overlap_desktop.core.match.settings import match_params
from overlap_desktop.core.report.model import FileResult
from overlap_desktop.core.types import CancelCallback, ProgressCallback, Segment, Variant

if TYPE_CHECKING:
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.manifest.format import Manifest

__all__ = ["open_lines", "open_stretches"]


def open_lines(manifest: Manifest, index: Index, *, config: Config, names: Collection[str] | None = None,
               progress: ProgressCallback | None = None, cancel: CancelCallback | None = None
               ) -> dict[str, list[Segment]]:
    """Every line between the offer's files (``names``, default all) and the library, rivals and
    uncounted ones included (near pieces are not lines: left out), per offered file name."""
    queries = [q for q in manifest_queries(manifest) if names is None or q.file in names]
    if not queries:
        return {}
    found, view = search_orientations(queries, IndexCorpus(index), match_params(config), twins=True,
                                      progress=progress, cancel=cancel)
    out: dict[str, list[Segment]] = {}
    for qi, sid, s in found:
        if s.near:
            continue
        q = queries[qi]
        corpus_file, corpus_key = view.describe(sid)
        variants = view.fingerprints(sid).variants
        variant = variants[s.variant_idx] if 0 <= s.variant_idx < len(variants) else Variant()
        out.setdefault(q.file, []).append(Segment(
            query_file=q.file, query_stream=q.key, query_start=s.query_start, query_end=s.query_end,
            corpus_file=corpus_file, corpus_stream=corpus_key, corpus_start=s.corpus_start,
            corpus_end=s.corpus_end, speed=s.speed, variant=variant, frames=s.frames,
            mean_distance=s.mean_distance, score=s.score, chance=s.chance))
    return out


def open_stretches(fr: FileResult, lines: Sequence[Segment], index: Index) -> list[OpenStretch]:
    """The stretches to settle for one file: every line overlapping its "can't tell" time, and
    its ambiguous, weak and below-the-floor matches (each once), with the index's digests."""
    spans = [(c.start_s, c.end_s) for c in fr.cant_tell]
    why = {id(s): w for w, segs in (("ambiguous among owned episodes", fr.ambiguous), ("weak evidence", fr.weak),
                                   ("shorter than the evidence floor", fr.below_floor)) for s in segs}
    picked: dict[tuple[str, str, float, float, float], tuple[Segment, str]] = {}
    for s in [*fr.ambiguous, *fr.weak, *fr.below_floor, *lines]:
        overlaps = any(min(b, s.query_end) > max(a, s.query_start) for a, b in spans)
        if id(s) not in why and not overlaps:
            continue
        key = (s.corpus_file, s.query_stream, round(s.query_start, 1), round(s.query_end, 1),
               round(s.corpus_start, 1))
        picked.setdefault(key, (s, why.get(id(s), "the same motion as owned footage, or near-identical to it")))
    digests: dict[str, str | None] = {}
    out = []
    for s, reason in picked.values():
        if s.corpus_file not in digests:
            digests[s.corpus_file] = index.indexed_sha256(Path(s.corpus_file))
        out.append(stretch_from_segment(s, owned_sha256=digests[s.corpus_file], why_open=reason))
    return out
