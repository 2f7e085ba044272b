"""Writing manifest files: :func:`write_manifest` and :func:`export_manifest` from an index.

An export thins each indexed stream to ``fps`` samples per second with the pipeline's
own time grid, names files relative to their common folder (or anonymises them),
optionally hashes annotation n-grams, and writes the canonical encoding
(:func:`~overlap_desktop.core.manifest.encode.encode_manifest`) atomically, mode 0600.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import (
    CONTROL_RE,
    DRIVE_RE,
    EXT_RE,
    MAX_FPS,
    ManifestFile,
    ManifestStream,
    TextNgrams,
)
from overlap_desktop.core.manifest.keys import SigningKey, load_signing_key, signing_key_info
from overlap_desktop.core.manifest.sections import clean_episodes, episode_seconds
from overlap_desktop.core.types import (
    CancelCallback,
    Progress,
    ProgressCallback,
    StreamFingerprints,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import InputError, ManifestError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index

__all__ = ["ExportSummary", "export_manifest", "stride_fingerprints", "write_manifest"]


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What :func:`export_manifest` / :func:`write_manifest` wrote.

    Attributes:
        path: The manifest file.
        root: Merkle root, hex.
        files: Number of files.
        hours: Footage hours.
        bytes: Size of the manifest file.
        streams: Number of streams.
        samples: Number of fingerprints.
        signed_by: The vendor name it is signed for, or ``None`` when unsigned.
        key_fingerprint: The signing key's fingerprint, or ``None``.
        signed_root: The content root the signature covers (hex), or ``None``.
    """

    path: Path
    root: str
    files: int
    hours: float
    bytes: int
    streams: int = 0
    samples: int = 0
    signed_by: str | None = None
    key_fingerprint: str | None = None
    signed_root: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "root": self.root, "files": self.files,
                "hours": self.hours, "bytes": self.bytes, "streams": self.streams,
                "samples": self.samples, "signed_by": self.signed_by,
                "key_fingerprint": self.key_fingerprint, "signed_root": self.signed_root}


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` is either the old file or the complete new one."""
    # 0o600: a manifest is a confidential business document (docs/manifest-spec.md).
    atomic_write_bytes(path, data, error_type=ManifestError, open_message="cannot write manifest",
                       write_message="cannot write manifest", mode=0o600)


def write_manifest(files: Sequence[ManifestFile], out: str | os.PathLike[str], **kwargs: Any) -> ExportSummary:
    """Encode ``files`` (see :func:`encode_manifest` for keyword arguments) and write atomically.

    Returns:
        An :class:`ExportSummary`.

    Raises:
        ManifestError: bad input values or the file cannot be written.
    """
    data, root = encode_manifest(files, **kwargs)
    out = Path(out)
    _atomic_write(out, data)
    return ExportSummary(path=out, root=root, files=len(files),
                         hours=sum(float(f.duration_s) for f in files) / 3600.0, bytes=len(data),
                         streams=sum(len(f.streams) for f in files),
                         samples=sum(len(s.fingerprints) for f in files for s in f.streams))


def stride_fingerprints(fp: StreamFingerprints, fps: float) -> StreamFingerprints:
    """Keep the identity variant at (at most) ``fps`` samples per second, exact timestamps.

    For each grid point ``k / fps`` the latest sample at or before it is kept (the
    frame shown at that moment), so kept timestamps are the index's own, never
    invented; sampling already at or below ``fps`` is kept whole.

    Args:
        fp: Fingerprints as stored in the index (any number of variants).
        fps: Target rate.

    Returns:
        Fingerprints with one variant, recorded ``fps = min(fps, fp.fps)``.
    """
    n = len(fp)
    codes = np.asarray(fp.codes)
    if codes.ndim == 3:
        codes = codes[:, :1, :]
    else:
        codes = codes.reshape(n, 1, 32)
    times = np.asarray(fp.times_ns, dtype=np.int64)
    if n == 0 or fps >= fp.fps:
        keep = np.arange(n)
        rate = float(fp.fps)
    else:
        rate = float(fps)
        step_ns = 1e9 / rate
        last = int(times[-1])
        grid = np.rint(np.arange(0, int(last // step_ns) + 1, dtype=np.float64) * step_ns).astype(np.int64)
        idx = np.searchsorted(times, grid, side="right") - 1
        keep = np.unique(idx[idx >= 0])
    return StreamFingerprints(times_ns=times[keep].copy(),
                              quality=np.asarray(fp.quality, dtype=np.uint8)[keep].copy(),
                              codes=np.ascontiguousarray(codes[keep]), variants=(Variant(),),
                              usable=np.asarray(fp.usable, dtype=bool)[keep].copy(),
                              indeterminate=list(fp.indeterminate), fps=rate,
                              duration_s=float(fp.duration_s))


def _stride(fp: StreamFingerprints, fps: float) -> StreamFingerprints:
    """Thin to ``fps`` with the pipeline's own :func:`~overlap_desktop.core.ingest.fingerprint.resample`
    (one definition of the time grid project-wide); :func:`stride_fingerprints` otherwise."""
    try:
        from overlap_desktop.core.ingest.fingerprint import resample
    except ImportError:  # pragma: no cover - only while the fingerprint module is absent
        return stride_fingerprints(fp, fps)
    out = resample(fp, fps, identity_only=True)
    if out.codes.ndim != 3 or out.codes.shape[1] != 1:
        out.codes = np.ascontiguousarray(np.asarray(out.codes).reshape(len(out), -1, 32)[:, :1])
        out.variants = (Variant(),)
    return out


def _sanitize_name(rel: str) -> str:
    # Non-UTF-8 bytes (surrogate escapes) and control characters cannot go in a
    # manifest; replace them visibly rather than refusing the export.
    raw = rel.encode("utf-8", "surrogateescape")
    s = raw.decode("utf-8", "replace")
    s = CONTROL_RE.sub("\ufffd", s).replace("\\", "/")
    parts = [p for p in s.split("/") if p not in ("", ".", "..")] or ["unnamed"]
    if DRIVE_RE.match(parts[0]):
        parts[0] = parts[0].replace(":", "_", 1)
    return "/".join(parts)


def _anon_ext(name: str) -> str:
    ext = os.path.splitext(name)[1][1:].lower()
    return f".{ext}" if EXT_RE.fullmatch(ext) else ""


#: A dataset version folder (TFDS / RLDS ``robot_dataset/1.0.0``): named with its dataset folder.
_VERSION_FOLDER = re.compile(r"\d+(\.\d+)+")


def _parent(path: str) -> str:
    """The folder an item is named from: its parent, or for a dataset version folder its
    grandparent, so an RLDS dataset is named ``robot_dataset/1.0.0``, never just ``1.0.0``."""
    full = os.path.abspath(path)
    up = os.path.dirname(full)
    if _VERSION_FOLDER.fullmatch(os.path.basename(full)) and os.path.isdir(full) and os.path.dirname(up) != up:
        return os.path.dirname(up)
    return up


def _common_base(paths: Sequence[str]) -> str:
    parents = [_parent(p) for p in paths]
    try:
        return os.path.commonpath(parents) if parents else ""
    except ValueError:  # different drives on Windows
        return ""


def _annotation_ngrams(sources: Sequence[str | os.PathLike[str]], fields: Sequence[str] | None,
                       tokenizer: str | None, ns: Sequence[int] | None,
                       cancel: CancelCallback | None) -> TextNgrams:
    """Keyed n-gram hashes of the annotation sources (the text itself is never written)."""
    from overlap_desktop.core.text.ngrams import DEFAULT_TOKENIZER, keyed_ngram_hashes
    from overlap_desktop.core.text.overlap import iter_documents

    tokenizer = tokenizer or DEFAULT_TOKENIZER
    ns = sorted(set(int(n) for n in (ns if ns else range(8, 14))))
    texts: list[str] = []
    for src in sources:
        check_cancel(cancel)
        try:
            texts.extend(d.text for d in iter_documents(Path(src), fields=fields))
        except RecursionError:
            # JSON nested thousands of levels deep exhausts any recursive reader; it is
            # not annotation text, so the file is refused by name rather than crashing.
            raise InputError("cannot export: this annotation file nests JSON too deeply to be annotation "
                             "text (flatten it, or give the text one record per line)", path=src) from None
    if not texts:
        raise ManifestError("cannot export: the annotation sources hold no text",
                            path=os.fspath(sources[0]) if len(sources) == 1 else None)
    return TextNgrams(tokenizer=tokenizer, hashes=keyed_ngram_hashes(texts, tokenizer=tokenizer, ns=ns),
                      documents=len(texts))


def _index_episodes(idx: Any) -> Any:
    """``(indexed file, stream key) -> reader's episode spans`` (LeRobot), from the stream
    details the index recorded; empty for indexes or streams without them."""
    try:
        sids = {(fid, key): sid for sid, fid, key in idx.stream_ids()}
    except AttributeError:
        sids = {}

    def lookup(ifile: Any, key: str) -> Any:
        sid = sids.get((getattr(ifile, "id", None), key))
        if sid is None:
            return []
        try:
            return (idx.stream_details(sid).extra or {}).get("episodes") or []
        except (KeyError, AttributeError, ValueError):
            return []

    return lookup


def export_manifest(index: Index | str | os.PathLike[str] | None, out: str | os.PathLike[str], *,
                    paths: Sequence[str | os.PathLike[str]] | None = None, label: str | None = None,
                    anonymize: bool = False, fps: float = 1.0, created: str | bool | None = None,
                    compress: str = "auto", config: Config | None = None,
                    annotations: Sequence[str | os.PathLike[str]] | None = None,
                    annotation_fields: Sequence[str] | None = None,
                    annotation_tokenizer: str | None = None,
                    annotation_ns: Sequence[int] | None = None,
                    sign: bool | None = None, passphrase: str | None = None,
                    progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> ExportSummary:
    """Export the index (or the files under ``paths``) as a manifest, written atomically.

    Args:
        index: An open :class:`~overlap_desktop.core.index.store.Index`, its folder, or ``None``
            for the configured default.
        out: Destination ``.ovlm`` file (replaced atomically).
        paths: Only files under these paths (default: every indexed file).
        label: Free text shown to the buyer.
        anonymize: Replace names by ``file-NNNNNN.ext`` and stream keys by ``stream-N``.
        fps: Fingerprints kept per second (strided down from the index's rate).
        created: ``True`` to record the current UTC time, a ``YYYY-MM-DDTHH:MM:SSZ``
            string, or ``None`` (default: not recorded, so re-exports are byte-identical).
        compress: See :func:`encode_manifest`.
        config: Settings used to find the index when ``index`` is ``None``.
        annotations: Annotation sources (text, JSONL/JSON, a LeRobot folder, MCAP string
            topics; see :func:`~overlap_desktop.core.text.overlap.iter_documents`) whose keyed
            n-gram hashes go into the TEXT_NGRAMS section (no text is written).
        annotation_fields: JSON fields holding the annotation text (default: every string field).
        annotation_tokenizer: Tokenizer id (default ``alnum-lower-v1``).
        annotation_ns: n values hashed (default 8..13, the range the n-choosing rule clamps to).
        sign: Sign with the vendor's key (:mod:`~overlap_desktop.core.manifest.keys`);
            ``None`` (default): sign when a key exists; ``False``: unsigned.
        passphrase: Unlocks a passphrase-protected key (default: ``OVERLAP_KEY_PASSPHRASE``).
        progress: Receives ``Progress(stage="export", unit="files")``.
        cancel: Polled between files.

    Returns:
        An :class:`ExportSummary`.

    Raises:
        ManifestError: nothing to export, or the file cannot be written.
        ConfigError: signing was asked for but there is no key, or it cannot be unlocked.
        Cancelled: ``cancel`` returned True (nothing is written).
    """
    if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
        raise ManifestError(f"cannot export: fps {fps} outside (0, {MAX_FPS}]")
    if created is True:
        created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif created is False:
        created = None
    if index is None or not hasattr(index, "streams"):
        from overlap_desktop.core.index.store import open_index

        with open_index(None if index is None else Path(index), config=config, create=False,
                        readonly=True) as opened:
            return export_manifest(opened, out, paths=paths, label=label, anonymize=anonymize, fps=fps,
                                   created=created, compress=compress, annotations=annotations,
                                   annotation_fields=annotation_fields,
                                   annotation_tokenizer=annotation_tokenizer, annotation_ns=annotation_ns,
                                   sign=sign, passphrase=passphrase, progress=progress, cancel=cancel)
    # An open index (or a test double with the same methods): anything with ``streams``.
    idx = cast("Index", index)
    # Unlocked before any work, so a wrong passphrase fails fast (issue 37).
    key = load_signing_key(passphrase) if sign or (sign is None and signing_key_info() is not None) else None
    signed: list[bytes] = []
    text_ngrams = None
    if annotations:
        text_ngrams = _annotation_ngrams(annotations, annotation_fields, annotation_tokenizer, annotation_ns,
                                         cancel)
    grouped = _grouped_streams(idx, paths, fps, progress, cancel)
    files = _manifest_files(grouped, _index_episodes(idx))
    if anonymize:
        _anonymize(files)
    else:
        _separate_equal_names(files)
    check_cancel(cancel)
    summary = write_manifest(files, out, label=label or "", algo_id=idx.algo_id, prep_id=idx.prep_id,
                             created=created or None, anonymized=anonymize, compress=compress,
                             text_ngrams=text_ngrams, signer=_recording(key, created or None, signed) if key else None)
    if key is not None:
        summary = replace(summary, signed_by=key.name, key_fingerprint=key.public.fingerprint,
                          signed_root=signed[0].hex())
    if progress is not None:
        progress(Progress(stage="export", done=len(files), total=len(files), unit="files",
                          message=f"wrote {summary.bytes} bytes"))
    return summary


def _recording(key: SigningKey, created: str | None, roots: list[bytes]) -> Callable[[bytes, str], bytes]:
    """``key``'s signer, noting the content root it signs (for the summary)."""
    sign = key.signer(created)

    def signer(root: bytes, label: str) -> bytes:
        roots.append(root)
        return sign(root, label)

    return signer


_Grouped = dict[str, tuple[Any, list[tuple[str, StreamFingerprints]]]]


def _grouped_streams(idx: Index, paths: Sequence[str | os.PathLike[str]] | None, fps: float,
                     progress: ProgressCallback | None, cancel: CancelCallback | None) -> _Grouped:
    """``path -> (indexed file, [(stream key, fingerprints thinned to fps)])`` for the selection."""
    sel = None if paths is None else [Path(p) for p in paths]
    grouped: _Grouped = {}
    done = 0
    for ifile, key, fp in idx.streams(sel):
        check_cancel(cancel)
        fpath = os.fspath(ifile.path)
        if fpath not in grouped:
            grouped[fpath] = (ifile, [])
            done += 1
            if progress is not None:
                progress(Progress(stage="export", done=done - 1, total=None, unit="files", current=fpath))
        grouped[fpath][1].append((key, _stride(fp, fps)))
    if not grouped:
        where = "under the given paths" if paths else "in the index"
        raise ManifestError(f"nothing to export: no indexed files {where}")
    return grouped


def _manifest_files(grouped: _Grouped, episodes_of: Callable[[Any, str], Any]) -> list[ManifestFile]:
    """Manifest entries named relative to the files' common folder, in path order."""
    order = sorted(grouped)
    base = _common_base(order)
    files: list[ManifestFile] = []
    for fpath in order:
        ifile, streams = grouped[fpath]
        digest = getattr(ifile, "sha256", None)
        if not isinstance(digest, str) or len(digest) != 64:
            raise ManifestError("cannot export: the index has no sha256 for this file; re-index it",
                                path=fpath)
        durations = [s.duration_s for _, s in streams]
        recorded = getattr(ifile, "duration_s", None)
        dur = (float(recorded) if recorded is not None and math.isfinite(float(recorded))
               else max(durations, default=0.0))
        rel = os.path.relpath(fpath, base) if base else os.path.basename(fpath)
        mf = ManifestFile(name=_sanitize_name(rel.replace(os.sep, "/")), size=int(ifile.size),
                          sha256=digest.lower(), duration_s=max(0.0, dur),
                          streams=[ManifestStream(key=k, fps=s.fps, fingerprints=s,
                                                  episodes=clean_episodes(episodes_of(ifile, k), s.duration_s))
                                   for k, s in streams])
        # Quoted in episode time: a file of several episodes offers their sum, never its longest one.
        mf.duration_s = round(episode_seconds(mf), 6)
        files.append(mf)
    return files


def _anonymize(files: list[ManifestFile]) -> None:
    """Rename files to ``file-NNNNNN.ext`` (ordered by content) and streams to ``stream-N``."""
    files.sort(key=lambda f: (f.sha256, f.size, f.name))
    width = max(6, len(str(len(files))))
    for i, f in enumerate(files, 1):
        ext = _anon_ext(f.name)
        f.name = f"file-{i:0{width}d}{ext}"
        f.streams.sort(key=lambda s: s.key.encode("utf-8"))
        for j, s in enumerate(f.streams, 1):
            s.key = f"stream-{j}"


def _separate_equal_names(files: list[ManifestFile]) -> None:
    """Sanitising can make two names equal; keep them apart deterministically."""
    seen: dict[str, int] = {}
    for f in files:
        if f.name in seen:
            seen[f.name] += 1
            stem, ext = os.path.splitext(f.name)
            f.name = f"{stem}~{seen[f.name]}{ext}"
        seen.setdefault(f.name, 1)
