"""The re-screen: the delivered footage's own fingerprints compared with the library.

The quote was screened with the fingerprints the vendor computed; the re-screen asks the same
question of the fingerprints the buyer computed from the delivered bytes, against the library
as it stood before the delivery (the audit adds the delivery only afterwards), with the
comparison and evidence rules unchanged (:func:`~overlap_desktop.core.match.compare.compare`).
Each delivered stream is thinned to the quoted stream's sampling rate, so both screens weigh
the same number of samples per second.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from overlap_desktop.core.audit.decode import Decoded
from overlap_desktop.core.audit.reproduce import match_streams
from overlap_desktop.core.audit.result import Seconds
from overlap_desktop.core.manifest.export import stride_fingerprints
from overlap_desktop.core.manifest.format import Manifest, ManifestFile, ManifestStream
from overlap_desktop.core.match.compare import compare
from overlap_desktop.core.report.model import FileResult
from overlap_desktop.core.types import CancelCallback, ProgressCallback

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = ["copy_words", "delivered_manifest", "same_offer", "screen", "seconds_of"]


def delivered_manifest(quote: Manifest, decoded: Mapping[str, Decoded]) -> Manifest:
    """The delivered footage as an offer: each quoted file's delivered streams, at the quoted
    rate, under the quoted names (files not decoded keep no streams)."""
    files: list[ManifestFile] = []
    for f in quote.files:
        d = decoded.get(f.name)
        streams: list[ManifestStream] = []
        if d is not None and d.streams:
            pairs = match_streams(f, d.streams, anonymized=quote.anonymized)
            rate = {id(hit[1]): s.fps for s, hit in pairs if hit is not None}
            for info, fp in d.streams:
                fps = rate.get(id(fp), min((s.fps for s in f.streams), default=fp.fps))
                streams.append(ManifestStream(info.key, min(fps, fp.fps), stride_fingerprints(fp, fps)))
        duration = max((s.fingerprints.duration_s for s in streams), default=f.duration_s)
        files.append(ManifestFile(f.name, f.size, d.sha256 or f.sha256 if d is not None else f.sha256,
                                  duration, streams))
    return Manifest(label=quote.label, algo_id=quote.algo_id, prep_id=quote.prep_id, created=None,
                    creator="overlap audit", root="", files=files, anonymized=quote.anonymized)


def _same_stream(a: ManifestStream, b: ManifestStream) -> bool:
    fa, fb = a.fingerprints, b.fingerprints
    return (a.key == b.key and len(fa) == len(fb) and np.array_equal(fa.times_ns, fb.times_ns)
            and np.array_equal(np.asarray(fa.codes)[:, 0], np.asarray(fb.codes)[:, 0])
            and np.array_equal(fa.usable, fb.usable) and np.array_equal(fa.quality, fb.quality)
            and fa.indeterminate == fb.indeterminate)


def same_offer(quote: Manifest, delivered: Manifest) -> bool:
    """The delivered footage, as an offer, is the quote itself: the same codes, usable samples,
    qualities and indeterminate spans at the same times in every stream (an honest quote made by
    this version). Screening it again would give the quote's answer, so it is not redone. Usable
    flags count too: a quote with honest codes marked unusable would screen "could not be judged"."""
    if len(quote.files) != len(delivered.files):
        return False
    for q, d in zip(quote.files, delivered.files, strict=True):
        if len(q.streams) != len(d.streams) or not all(
                _same_stream(a, b) for a, b in zip(q.streams, d.streams, strict=True)):
            return False
    return True


def screen(manifest: Manifest, idx: Index, *, config: Config, progress: ProgressCallback | None = None,
           cancel: CancelCallback | None = None) -> dict[str, FileResult]:
    """Per offered file, what the comparison with the library says (signature rules are the
    quote's business, checked by verify; the screen itself never refuses an unsigned offer here)."""
    report = compare(manifest, idx, config=config, progress=progress, cancel=cancel, require_signed=False)
    return {f.query_file: f for f in report.files}


def seconds_of(fr: FileResult | None) -> Seconds:
    if fr is None:
        return Seconds()
    return Seconds(owned=float(fr.matched_seconds), new=float(fr.new_seconds), cant_tell=float(fr.cant_tell_seconds))


def copy_words(fr: FileResult | None, idx: Index, delivered_sha256: str | None) -> str:
    """What the delivered footage copies, in words: ``"a copy of clip0.mp4 re-encoded"``."""
    if fr is None or not fr.segments:
        return ""
    owned: list[str] = []
    how: list[str] = []
    for seg in fr.segments:
        base = os.path.basename(seg.corpus_file)
        if base not in owned:
            owned.append(base)
        words = seg.variant.describe()
        if words and words not in how:
            how.append(words)
        if abs(seg.speed) < 0.95 or abs(seg.speed) > 1.05:
            pace = "slowed" if abs(seg.speed) < 1 else "sped up"
            if pace not in how:
                how.append(pace)
    same_bytes = delivered_sha256 is not None and any(
        idx.indexed_sha256(seg.corpus_file) == delivered_sha256 for seg in fr.segments)
    if same_bytes:
        how.insert(0, "the same bytes")
    elif not how:
        how.append("re-encoded")
    names = _names(owned)
    return f"a copy of {names} {', '.join(how)}" if how != ["the same bytes"] else f"the same bytes as {names}"


def _names(names: Sequence[str]) -> str:
    if len(names) <= 3:
        return ", ".join(names)
    return f"{', '.join(names[:3])} and {len(names) - 3} more"
