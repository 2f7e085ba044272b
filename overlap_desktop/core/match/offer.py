"""The offer side of a comparison: a manifest read and checked, its streams as query streams,
and the facts about it a report shows."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.manifest.sections import episode_seconds, stream_episode
from overlap_desktop.core.manifest.vendors import manifest_signature_facts
from overlap_desktop.core.match.types import QueryStream
from overlap_desktop.core.types import StreamFingerprints, Variant
from overlap_desktop.errors import ManifestError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.manifest.format import Manifest

__all__ = ["check_ids", "index_queries", "load_manifest", "manifest_facts", "manifest_queries"]


def load_manifest(manifest: Manifest | Path | str, *, expect_algo: str | None = None,
                   expect_prep: str | None = None) -> tuple[Manifest, str | None]:
    if isinstance(manifest, (str, os.PathLike)):
        from overlap_desktop.core.manifest.parse import read_manifest

        path = Path(manifest)
        return read_manifest(path, expect_algo=expect_algo, expect_prep=expect_prep), str(path)
    return manifest, None


def check_ids(m: Manifest, algo: str, prep: str, *, what: str, path: str | None) -> None:
    if m.algo_id != algo or m.prep_id != prep:
        raise ManifestError(
            f"incompatible fingerprints: the manifest uses algo {m.algo_id!r} / prep {m.prep_id!r}, "
            f"{what} uses algo {algo!r} / prep {prep!r}; both sides must use the same hash and "
            f"normalisation", path=path)


def manifest_queries(m: Manifest) -> list[QueryStream]:
    out: list[QueryStream] = []
    for f in m.files:
        dur = episode_seconds(f)
        for s in f.streams:
            out.append(QueryStream(f.name, dur, s.key, s.fingerprints, episode=stream_episode(s)))
        if not f.streams:
            empty = StreamFingerprints(np.zeros(0, np.int64), np.zeros(0, np.uint8),
                                       np.zeros((0, 1, 32), np.uint8), (Variant(),), np.zeros(0, bool),
                                       [], 1.0, dur)
            out.append(QueryStream(f.name, dur, "", empty))
    return out


def manifest_facts(m: Manifest) -> dict[str, Any]:
    secs = sum(episode_seconds(f) for f in m.files)
    return {
        "label": getattr(m, "label", None),
        "root": getattr(m, "root", None),
        "algo_id": m.algo_id,
        "prep_id": m.prep_id,
        "created": getattr(m, "created", None),
        "creator": getattr(m, "creator", None),
        "files": len(m.files),
        "streams": sum(len(f.streams) for f in m.files),
        "hours": round(secs / 3600.0, 4),
        # Who signed it (issue 37): "signed" with the vendor, key and trust, or "unsigned".
        "signature": manifest_signature_facts(m),
    }


def index_queries(idx: Index, paths: Sequence[str | os.PathLike[str]] | None) -> list[QueryStream]:
    """The index's own streams (at or under ``paths``) as query streams, for ``self_dedupe``."""
    queries: list[QueryStream] = []
    sid_by_key = {(fid, key): sid for sid, fid, key in idx.stream_ids()}
    for f, key, fp in idx.streams(paths):
        # Only the identity codes are queried; keep memory to that.
        q_fp = StreamFingerprints(fp.times_ns, fp.quality, np.ascontiguousarray(fp.codes[:, :1]),
                                  fp.variants[:1], fp.usable, fp.indeterminate, fp.fps, fp.duration_s)
        queries.append(QueryStream(f.path, float(f.duration_s or fp.duration_s), key, q_fp,
                                   stream_id=sid_by_key.get((f.id, key), -1)))
    return queries
