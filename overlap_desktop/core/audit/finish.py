"""After the check: the re-screen (with the delivered frames' crop search and the pixel
settlement of can't-tell stretches, when installed), then adding the delivery to the library.

The order matters: both screens compare with the library as it stood before the delivery,
so the delivery is added last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.audit.decode import Decoded, FrameTap
from overlap_desktop.core.audit.pixels import settle_with_pixels
from overlap_desktop.core.audit.rescreen import copy_words, delivered_manifest, same_offer, screen, seconds_of
from overlap_desktop.core.audit.result import AuditResult, FileAudit
from overlap_desktop.core.manifest.format import Manifest
from overlap_desktop.core.match.accounting import union_seconds
from overlap_desktop.core.report.model import FileResult
from overlap_desktop.core.types import CancelCallback, ProgressCallback, Segment, check_cancel

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = ["add_to_library", "rescreen_and_add"]

def _crop_segments(tap: FrameTap | None, idx: Index, config: Config, progress: ProgressCallback | None,
                   cancel: CancelCallback | None, owned: Mapping[str, FileResult] | None = None
                   ) -> tuple[dict[str, list[Segment]], str]:
    if tap is None:
        return {}, ""
    import importlib

    try:  # the crop search is optional here: installed with its own module
        crops = importlib.import_module("overlap_desktop.core.audit.crops")
    except ImportError:
        return {}, ""
    search: Any = getattr(crops, "search_crops", None)
    if search is None:
        return {}, ""
    counted = {name: list(fr.segments) for name, fr in (owned or {}).items()}
    return search(tap, idx, config=config, progress=progress, cancel=cancel, owned=counted), "searched"


def _count_crops(fa: FileAudit, fr: FileResult | None, segs: Sequence[Segment]) -> None:
    """Owned seconds only the crop search found: taken from can't tell first, then from new."""
    if not segs or fa.final is None:
        return
    owned = [(s.query_start, s.query_end) for s in (fr.segments if fr is not None else [])]
    extra = union_seconds(owned + [(s.query_start, s.query_end) for s in segs]) - union_seconds(owned)
    if extra <= 0:
        return
    fa.crop_seconds = extra
    take = min(extra, fa.final.cant_tell)
    fa.final.cant_tell -= take
    fa.final.new = max(0.0, fa.final.new - (extra - take))
    fa.final.owned += extra
    words = ", ".join(sorted({s.variant.describe() for s in segs if s.variant.describe()}))
    fa.copy_of = fa.copy_of or f"a copy of {Path(segs[0].corpus_file).name}{' ' + words if words else ''}"


# Over 80 lines only because of its argument list; each step is a call.
def rescreen_and_add(result: AuditResult, m: Manifest, decoded: Mapping[str, Decoded], idx: Index, *,
                     config: Config, add: bool, tap: FrameTap | None, full: Callable[[str], Decoded | None],
                     settings: str, progress: ProgressCallback | None,
                     cancel: CancelCallback | None, pixels: bool = True) -> None:
    """Fill ``quoted`` and ``final`` seconds of every file, then add the delivery (``add``): ``full``
    gives an item's whole decode by quoted name, one at a time."""
    result.index = str(idx.path)
    inside = [d.path.name for d in decoded.values() if idx.file_state(d.path) is not None]
    if inside:
        # The library "before the delivery" already holds these (an earlier audit added them, or they
        # were indexed): each matches itself, so their re-screen reads owned.
        result.warnings.append(f"{len(inside)} delivered file(s) are already in the library ({', '.join(inside[:3])}"
                               f"{' ...' if len(inside) > 3 else ''}): the re-screen finds them owned by themselves; "
                               "audit against the library as it was before they were added")
    quoted = screen(m, idx, config=config, progress=progress, cancel=cancel)
    as_offer = delivered_manifest(m, decoded)
    # An honest quote of this version is the delivered footage itself: its screen is the answer.
    result.same_as_quote = same_offer(m, as_offer)
    delivered = quoted if result.same_as_quote else screen(as_offer, idx, config=config, progress=progress,
                                                              cancel=cancel)
    # The crop search skips what the whole frames already count owned: _count_crops counts only
    # the crops' seconds outside those segments.
    crop_hits, result.crops = _crop_segments(tap, idx, config, progress, cancel, delivered)
    for fa in result.files:
        check_cancel(cancel)
        fa.quoted = seconds_of(quoted.get(fa.name))
        d = decoded.get(fa.name)
        if d is None or not d.streams:
            fa.final = None  # nothing delivered to screen
            continue
        fr = delivered.get(fa.name)
        fa.final = seconds_of(fr)
        fa.copy_of = copy_words(fr, idx, d.sha256)
    if pixels:
        result.settle = settle_with_pixels(result.files, delivered, as_offer, decoded, idx, config=config,
                                           progress=progress, cancel=cancel)
    for fa in result.files:  # after the pixels: the crops' finds are counted owned on top
        d = decoded.get(fa.name)
        if fa.final is not None and d is not None:
            _count_crops(fa, delivered.get(fa.name), crop_hits.get(fa.name, []))
    result.rescreened = True
    if add:
        names = [n for n, d in decoded.items() if d.streams and d.sha256 and not d.error]
        result.added = add_to_library(idx, [decoded[n].path for n in names], (full(n) for n in names),
                                      settings=settings, cancel=cancel)


def add_to_library(idx: Index, roots: Sequence[Path], items: Iterable[Decoded | None], *, settings: str,
                   cancel: CancelCallback | None = None) -> int:
    """Record the decoded items' fingerprints in the library (given one at a time: bounded memory),
    one transaction each, then seal the search shards; items that changed since they were decoded are
    left for indexing to redo."""
    from overlap_desktop.core.index.schema import now_iso
    from overlap_desktop.core.index.walk import changed_since

    if not roots:
        return 0
    added = 0
    with idx.writer():
        idx.check_compatible()
        idx.begin_run(roots)
        for d in items:
            check_cancel(cancel)
            if d is None or not d.streams or not d.sha256 or d.error:
                continue
            if changed_since(d.path, d.size, d.mtime_ns, d.stat_key) is not None:
                continue
            idx.record_file(d.path, size=d.size, mtime_ns=d.mtime_ns, sha256=str(d.sha256), reader=d.reader,
                            streams=d.streams, settings=settings, indexed_at=now_iso(), stat_key=d.stat_key or None)
            added += 1
        idx.seal(cancel=cancel)
        idx.end_run(roots)
    return added
