"""The re-screen's verdicts checked with both sides' pixels, now that the delivered frames are here.

Two kinds of stretch go to the pixel check (:mod:`.settle`): those the re-screen left "can't tell"
(every line overlapping that time, :mod:`.settle_lines`, and the ambiguous, weak and short
matches), and, as a second opinion, the matches it counted owned. A can't-tell span settled owned
or new moves its seconds there; a counted match is moved to new only when every owned candidate
of its span settles new (a near twin the fingerprints alone took for a copy: objects moved), never
the other way, since the fingerprints' owned verdict already rests on evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from overlap_desktop.core.audit.decode import Decoded
from overlap_desktop.core.audit.result import FileAudit
from overlap_desktop.core.manifest.format import Manifest
from overlap_desktop.core.report.model import FileResult
from overlap_desktop.core.types import CancelCallback, ProgressCallback, Variant, check_cancel

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.audit.settle import OpenStretch
    from overlap_desktop.core.index.store import Index

__all__ = ["SAME_BYTES", "SETTLED", "same_bytes", "settle_with_pixels"]

#: What :attr:`AuditResult.settle` says once the pixel check ran.
SETTLED = "settled with pixels"


def _union(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted((min(x, y), max(x, y)) for x, y in spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _overlap(spans: Sequence[tuple[float, float]], a: float, b: float) -> float:
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in _union(spans))


def _apply_open(fa: FileAudit, fr: FileResult, rows: Sequence[tuple[str, float, float, str, str]]) -> None:
    assert fa.final is not None
    cant = [(s.start_s, s.end_s) for s in fr.cant_tell]
    for _stream, start, end, verdict, reason in rows:
        fa.settled.append((float(start), float(end), str(verdict), str(reason)))
        moved = min(_overlap(cant, float(start), float(end)), fa.final.cant_tell)
        if moved <= 0 or verdict not in ("owned", "new"):
            continue
        fa.final.cant_tell -= moved
        if verdict == "owned":
            fa.final.owned += moved
        else:
            fa.final.new += moved


def _apply_counted(fa: FileAudit, fr: FileResult, rows: Sequence[tuple[str, float, float, str, str]]) -> None:
    assert fa.final is not None
    owned = [(s.query_start, s.query_end) for s in fr.segments]
    for _stream, start, end, verdict, reason in rows:
        if verdict != "new":
            continue  # owned stays owned; a pixel "can't tell" does not undo the fingerprints' evidence
        moved = min(_overlap(owned, float(start), float(end)), fa.final.owned)
        if moved <= 0:
            continue
        fa.final.owned -= moved
        fa.final.new += moved
        fa.settled.append((float(start), float(end), "new", f"counted owned by the fingerprints; {reason}"))
    if fa.final.owned < 0.5:
        fa.copy_of = ""


# Over 80 lines only because of its argument list; the steps are the module docstring's.
def settle_with_pixels(files: Sequence[FileAudit], delivered: Mapping[str, FileResult], as_offer: Manifest,
                       decoded: Mapping[str, Decoded], idx: Index, *, config: Config,
                       progress: ProgressCallback | None = None, cancel: CancelCallback | None = None) -> str:
    """Settle every file's open stretches and second-check its counted matches (see the module).

    Returns:
        :data:`SETTLED`.
    """
    from overlap_desktop.core.audit.settle import Settlement, settle_offered, settle_stretches, stretch_from_segment
    from overlap_desktop.core.audit.settle_lines import open_lines, open_stretches

    ready = {n for n, d in decoded.items() if d.streams and not d.error}
    unsure = {n for n, fr in delivered.items() if fr.cant_tell and n in ready}
    lines = open_lines(as_offer, idx, config=config, names=unsure, progress=progress, cancel=cancel) if unsure \
        else {}
    for fa in files:
        check_cancel(cancel)
        fr = delivered.get(fa.name)
        if fr is None or fa.name not in ready or fa.final is None:
            continue
        open_ = open_stretches(fr, lines.get(fa.name, []), idx) if fa.name in unsure else []
        counted = [stretch_from_segment(s, owned_sha256=idx.indexed_sha256(s.corpus_file),
                                        why_open="counted owned; second opinion") for s in fr.segments]
        if not open_ and not counted:
            continue
        # A counted match of the delivered file with itself (the library holds these very bytes,
        # on the line that pairs each frame with itself) cannot settle new: both sides' pixels are
        # the same. It keeps its place among the candidates without a decode of either side.
        same = [same_bytes(st, decoded[fa.name].sha256) for st in counted]
        asked = [*open_, *(st for st, sm in zip(counted, same, strict=True) if not sm)]
        got = iter(settle_stretches(decoded[fa.name].path, asked, progress=progress, cancel=cancel) if asked else [])
        done = [next(got) for _ in open_]
        done += [Settlement(st, "owned", SAME_BYTES) if sm else next(got) for st, sm in zip(counted, same, strict=True)]
        _apply_open(fa, fr, settle_offered(done[:len(open_)]) if open_ else [])
        _apply_counted(fa, fr, settle_offered(done[len(open_):]) if counted else [])
    return SETTLED


#: A counted match's second opinion when the delivered file is the library's file byte for byte.
SAME_BYTES = "the delivered file is the library's file byte for byte, on the line pairing each frame with itself"
#: How far (seconds) a self-match's line may sit from the frame itself at either end: well within
#: the pixel check's own refinement of a line (shifts of up to 0.3 s, the best kept), so the check
#: would compare each frame with itself or its neighbour.
_SELF_LINE_S = 0.1


def same_bytes(stretch: OpenStretch, delivered_sha256: str | None) -> bool:
    """Is ``stretch`` the delivered file matched with itself (same bytes, stream, times, no edit)?"""
    if delivered_sha256 is None or stretch.owned_sha256 != delivered_sha256 or stretch.variant != Variant() \
            or stretch.owned_stream != stretch.offered_stream:
        return False
    length = stretch.offered_end_s - stretch.offered_start_s
    start_off = stretch.owned_start_s - stretch.offered_start_s
    end_off = start_off + length * (stretch.speed - 1.0)
    return abs(start_off) <= _SELF_LINE_S and abs(end_off) <= _SELF_LINE_S
