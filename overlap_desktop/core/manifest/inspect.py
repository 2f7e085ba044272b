"""A manifest summarised for people and the GUI: :func:`inspect_manifest`."""

from __future__ import annotations

import os
from typing import Any

from overlap_desktop.core.manifest.format import SECTION_NAMES, Manifest
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.core.manifest.sections import describe_sections
from overlap_desktop.core.manifest.vendors import manifest_signature_facts

__all__ = ["inspect_manifest"]


def inspect_manifest(path: str | os.PathLike[str] | Manifest, *, record_vendor: bool = True) -> dict[str, Any]:
    """Summarise a manifest for people and the GUI (it is fully verified first).

    Args:
        path: A manifest file, or an already-read :class:`Manifest`.
        record_vendor: Record a signed manifest's key when its vendor is new (trust on
            first use); ``False`` only looks.

    Returns:
        A JSON-ready dict: format, label, algo_id, prep_id, created, creator, root,
        anonymized, files, streams, samples, hours, sampling (distinct fps values),
        bytes, bytes_per_hour, optional_sections (not understood), ``file_list`` (name,
        size, duration, streams), ``text_ngrams`` (tokenizer, documents, ns, counts per
        n; ``None`` without annotation hashes), ``episodes`` (streams, spans) and
        ``signature`` (:func:`~overlap_desktop.core.manifest.vendors.signature_facts`:
        ``status`` "signed" with vendor, fingerprint and trust, or "unsigned").

    Raises:
        ManifestError: the manifest is refused.
    """
    m = path if isinstance(path, Manifest) else read_manifest(path)
    streams = [s for f in m.files for s in f.streams]
    samples = sum(len(s.fingerprints) for s in streams)
    hours = m.hours
    return {
        "format": f"ovlm/{m.version}",
        "path": str(m.path) if m.path else None,
        "label": m.label,
        "algo_id": m.algo_id,
        "prep_id": m.prep_id,
        "created": m.created,
        "creator": m.creator,
        "root": m.root,
        "signature": manifest_signature_facts(m, record=record_vendor),
        "anonymized": m.anonymized,
        "files": len(m.files),
        "streams": len(streams),
        "samples": samples,
        "hours": hours,
        "indeterminate_hours": sum(sp.duration_s for s in streams for sp in s.fingerprints.indeterminate)
        / 3600.0,
        "sampling": sorted({s.fps for s in streams}),
        "bytes": m.size_bytes,
        "bytes_per_hour": (m.size_bytes / hours) if hours > 0 else None,
        "optional_sections": [{"type": s.type, "name": SECTION_NAMES.get(s.type, f"{s.type:#06x}"),
                               "version": s.sversion, "bytes": len(s.body), "understood": False}
                              for s in m.optional_sections],
        "file_list": [{"name": f.name, "size": f.size, "sha256": f.sha256, "duration_s": f.duration_s,
                       "streams": [s.key for s in f.streams]} for f in m.files],
        **describe_sections(m.text_ngrams, {(i, s.key): s.episodes for i, f in enumerate(m.files)
                                            for s in f.streams if s.episodes}),
    }
