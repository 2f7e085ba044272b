"""Delivery verification: do the delivered files match the quoted manifest bit for bit?

Every delivered file whose size equals some quoted size is hashed (SHA-256, streamed in
1 MiB chunks, on a thread pool: hashlib releases the GIL, so both cores work). Each
manifest entry is then *matched* (same relative name and same bytes, or — for renamed
files and anonymised manifests — the same size and digest under another name),
*altered* (a file with its name is there but its size or digest differs) or *missing*;
delivered files that no entry claims are *extra*. Manifest names are only compared
with names found on disk; they are never joined to the delivery folder, so a hostile
name such as ``../../x`` cannot make verify read outside it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overlap_desktop.core.manifest import Manifest, read_manifest
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import InputError

__all__ = ["VERIFY_SCHEMA", "EntryResult", "VerifyResult", "hash_file", "verify_delivery"]

#: Identifier and version of the JSON written by :meth:`VerifyResult.to_dict`.
VERIFY_SCHEMA = "overlap.verify/1"
CHUNK = 1 << 20


@dataclass(slots=True)
class EntryResult:
    """The verdict for one manifest entry.

    Attributes:
        name: The name in the manifest.
        status: ``matched``, ``altered`` or ``missing``.
        size: Quoted size in bytes.
        sha256: Quoted digest (hex).
        delivered: Relative path (``/`` separators) of the delivered file, if any.
        delivered_size: Its size, if there is one.
        delivered_sha256: Its digest, if it was hashed.
        renamed: Matched by size + digest under a different name.
        reason: Plain words for ``altered`` (``size differs``, ``content differs``).
    """

    name: str
    status: str
    size: int
    sha256: str
    delivered: str | None = None
    delivered_size: int | None = None
    delivered_sha256: str | None = None
    renamed: bool = False
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "size": self.size, "sha256": self.sha256,
                "delivered": self.delivered, "delivered_size": self.delivered_size,
                "delivered_sha256": self.delivered_sha256, "renamed": self.renamed, "reason": self.reason}


@dataclass(slots=True)
class VerifyResult:
    """The outcome of :func:`verify_delivery`.

    Attributes:
        manifest: Path of the manifest.
        root: Its Merkle root (hex).
        label: Its label.
        data_dir: The delivery folder.
        anonymized: The manifest's names are pseudonyms (matching by size + digest only).
        entries: One verdict per manifest entry, in manifest order.
        extra: Delivered files no entry claims: ``{"path", "size"}`` (path relative, ``/``).
        bytes_hashed: Bytes read and hashed.
        unreadable: Delivered files that could not be read: ``{"path", "error"}``.
    """

    manifest: str
    root: str
    label: str
    data_dir: str
    anonymized: bool
    entries: list[EntryResult] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    bytes_hashed: int = 0
    unreadable: list[dict[str, Any]] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for e in self.entries if e.status == status)

    @property
    def matched(self) -> int:
        return self.count("matched")

    @property
    def altered(self) -> int:
        return self.count("altered")

    @property
    def missing(self) -> int:
        return self.count("missing")

    @property
    def ok(self) -> bool:
        """True when the delivery is exactly the quote: every entry matched, nothing extra."""
        return all(e.status == "matched" for e in self.entries) and not self.extra and not self.unreadable

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema :data:`VERIFY_SCHEMA`)."""
        return {
            "schema": VERIFY_SCHEMA,
            "ok": self.ok,
            "manifest": self.manifest,
            "root": self.root,
            "label": self.label,
            "data_dir": self.data_dir,
            "anonymized": self.anonymized,
            "summary": {"entries": len(self.entries), "matched": self.matched, "altered": self.altered,
                        "missing": self.missing, "extra": len(self.extra),
                        "renamed": sum(1 for e in self.entries if e.renamed),
                        "unreadable": len(self.unreadable), "bytes_hashed": self.bytes_hashed},
            "entries": [e.to_dict() for e in self.entries],
            "extra": list(self.extra),
            "unreadable": list(self.unreadable),
        }


def hash_file(path: str | os.PathLike[str], *, cancel: CancelCallback | None = None,
              on_bytes: Any = None) -> str:
    """SHA-256 of a file, streamed in 1 MiB chunks.

    Args:
        path: The file.
        cancel: Polled between chunks.
        on_bytes: Called with the byte count of each chunk (thread-safe callers only).

    Returns:
        Hex digest.

    Raises:
        OSError: the file cannot be read.
        Cancelled: ``cancel`` returned True.
    """
    h = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            check_cancel(cancel)
            n = fh.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            if on_bytes is not None:
                on_bytes(n)
    return h.hexdigest()


def _walk(root: Path) -> dict[str, tuple[Path, int]]:
    """Regular files under ``root`` as ``{relative posix path: (path, size)}``.

    Directory symlinks are not followed (no loops, nothing outside the delivery).
    """
    found: dict[str, tuple[Path, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except OSError:
                continue
            if not p.is_file():
                continue
            rel = p.relative_to(root).as_posix()
            found[rel] = (p, st.st_size)
    return found


def verify_delivery(manifest: Manifest | str | os.PathLike[str], data_dir: str | os.PathLike[str], *,
                    threads: int = 0, progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None) -> VerifyResult:
    """Check a delivery folder against the manifest that quoted it.

    Args:
        manifest: A manifest file or an already-read :class:`Manifest`.
        data_dir: The delivery folder (searched recursively).
        threads: Hashing threads (0 = one per core).
        progress: Receives ``Progress(stage="verify", unit="bytes")``, always on the calling
            thread (about ten times a second).
        cancel: Polled between 1 MiB chunks (from the hashing threads: it must be thread-safe,
            as :class:`~overlap_desktop.core.types.CancelToken` is).

    Returns:
        A :class:`VerifyResult`; ``result.ok`` is True for an exact delivery.

    Raises:
        ManifestError: the manifest is refused.
        InputError: ``data_dir`` is not a folder.
        Cancelled: ``cancel`` returned True.
    """
    m = manifest if isinstance(manifest, Manifest) else read_manifest(manifest)
    root = Path(data_dir)
    if not root.is_dir():
        raise InputError("delivery folder not found or not a folder", path=root)
    delivered = _walk(root)
    quoted_sizes = {f.size for f in m.files}
    # Only files whose size some entry quotes can match anything; others are extra
    # (or altered by size) without reading a byte.
    to_hash = sorted((rel for rel, (_, size) in delivered.items() if size in quoted_sizes),
                     key=lambda rel: -delivered[rel][1])
    total = sum(delivered[rel][1] for rel in to_hash)
    digests: dict[str, str] = {}
    unreadable: list[dict[str, Any]] = []
    lock = threading.Lock()
    done = [0]

    def count(n: int) -> None:
        with lock:
            done[0] += n

    def work(rel: str) -> tuple[str, str]:
        return rel, hash_file(delivered[rel][0], cancel=cancel, on_bytes=count)

    workers = threads if threads > 0 else (os.cpu_count() or 1)
    workers = max(1, min(workers, len(to_hash) or 1))
    check_cancel(cancel)
    if progress is not None:
        progress(Progress(stage="verify", done=0, total=total, unit="bytes"))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="overlap-verify") as pool:
        futures = {pool.submit(work, rel): rel for rel in to_hash}
        pending = set(futures)
        try:
            while pending:
                # Progress is reported from the calling thread only, about ten times a second.
                finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for fut in finished:
                    rel = futures[fut]
                    try:
                        _, digest = fut.result()
                    except OSError as exc:
                        unreadable.append({"path": rel, "error": exc.strerror or str(exc)})
                        continue
                    digests[rel] = digest
                if progress is not None:
                    with lock:
                        d = done[0]
                    progress(Progress(stage="verify", done=d, total=total, unit="bytes",
                                      current=futures[next(iter(finished))] if finished else None))
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    unreadable.sort(key=lambda u: u["path"])
    unreadable_paths = {u["path"] for u in unreadable}

    claimed: set[str] = set()
    entries: list[EntryResult] = []
    pending: list[int] = []
    for f in m.files:
        e = EntryResult(name=f.name, status="missing", size=f.size, sha256=f.sha256)
        entries.append(e)
        hit = None if m.anonymized else delivered.get(f.name)
        if hit is None or f.name in unreadable_paths:
            pending.append(len(entries) - 1)
            continue
        e.delivered, e.delivered_size = f.name, hit[1]
        e.delivered_sha256 = digests.get(f.name)
        if hit[1] == f.size and e.delivered_sha256 == f.sha256:
            e.status = "matched"
            claimed.add(f.name)
        else:
            pending.append(len(entries) - 1)
    # Second pass: content found under another name (renamed, or anonymised manifest).
    by_content: dict[tuple[int, str], list[str]] = {}
    for rel, digest in sorted(digests.items()):
        if rel not in claimed:
            by_content.setdefault((delivered[rel][1], digest), []).append(rel)
    unmatched: list[EntryResult] = []
    for i in pending:
        e = entries[i]
        cands = by_content.get((e.size, e.sha256))
        if cands:
            rel = cands.pop(0)
            claimed.add(rel)
            same_name = e.delivered == rel
            e.status, e.renamed = "matched", not same_name and not m.anonymized
            e.delivered, e.delivered_size, e.delivered_sha256 = rel, e.size, e.sha256
            e.reason = "" if same_name or m.anonymized else "found under another name"
        else:
            unmatched.append(e)
    for e in unmatched:
        if e.delivered is not None and e.delivered not in claimed:
            # A file with the quoted name is there but holds other bytes.
            e.status = "altered"
            e.reason = "size differs" if e.delivered_size != e.size else "content differs"
            claimed.add(e.delivered)
        else:
            e.delivered = e.delivered_size = e.delivered_sha256 = None
    extra = [{"path": rel, "size": size} for rel, (_, size) in sorted(delivered.items())
             if rel not in claimed and rel not in unreadable_paths]
    return VerifyResult(manifest=str(m.path) if m.path else "", root=m.root, label=m.label,
                        data_dir=str(root), anonymized=m.anonymized, entries=entries, extra=extra,
                        bytes_hashed=done[0], unreadable=unreadable)
