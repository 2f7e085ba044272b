"""Delivery verification: do the delivered files match the quoted manifest bit for bit?

Every delivered file whose size equals some quoted size is hashed (SHA-256, streamed in
1 MiB chunks, on a thread pool: hashlib releases the GIL, so both cores work). Each
manifest entry is then *matched* (same relative name and same bytes, or — for renamed
files and anonymised manifests — the same size and digest under another name),
*altered* (a file with its name is there but its size or digest differs) or *missing*;
delivered files that no entry claims are *extra*. Manifest names are only compared
with names found on disk; they are never joined to the delivery folder, so a hostile
name such as ``../../x`` cannot make verify read outside it.

Files that operating systems and file managers drop into folders (``Thumbs.db``,
``desktop.ini``, ``.DS_Store``, AppleDouble ``._*`` files, other hidden dotfiles and
folders) are *ignored* unless the manifest quotes them: copying a delivery through
Windows or macOS must not make it "differ". The verdict separates what a buyer needs to
know: every quoted file present and exact (extras listed) versus quoted files altered
or missing (:attr:`VerifyResult.verdict`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from overlap_desktop.core.manifest.format import Manifest
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.core.manifest.vendors import manifest_signature_facts
from overlap_desktop.core.report.formats import format_date, safe_text
from overlap_desktop.core.report.output import dumps_json, write_atomically
from overlap_desktop.core.report.signing import signature_changed, signature_sentence
from overlap_desktop.core.types import CancelCallback, Progress, ProgressCallback, check_cancel
from overlap_desktop.errors import InputError

__all__ = ["VERIFY_SCHEMA", "EntryResult", "VerifyResult", "hash_file", "is_clutter", "render_verify_html",
           "verify_context", "verify_delivery", "verify_verdict", "write_verify_html", "write_verify_json"]

#: Identifier and version of the JSON written by :meth:`VerifyResult.to_dict`. Version 2:
#: ``ok`` means every quoted file is present and exact (extras allowed; version 1 also
#: required no extras, now ``exact``), with ``verdict`` and the ignored system files.
VERIFY_SCHEMA = "overlap.verify/2"
CHUNK = 1 << 20

#: File names (lower case) that operating systems create in folders on their own.
_CLUTTER_NAMES = frozenset({"thumbs.db", "ehthumbs.db", "ehthumbs_vista.db", "desktop.ini", "icon\r"})
#: Folder names (lower case) that hold only operating-system bookkeeping.
_CLUTTER_DIRS = frozenset({"$recycle.bin", "system volume information", "__macosx"})


def is_clutter(rel_path: str) -> bool:
    """True for files operating systems leave in folders, never part of a delivery:
    ``Thumbs.db``, ``desktop.ini``, ``.DS_Store``, AppleDouble ``._name`` files, any hidden
    (dot) file or file inside a hidden folder, and the recycle-bin / volume-information
    folders. ``rel_path`` uses ``/`` separators."""
    parts = [p for p in str(rel_path).replace("\\", "/").split("/") if p]
    if not parts:
        return False
    if any(p.startswith(".") for p in parts):
        return True
    if any(p.lower() in _CLUTTER_DIRS for p in parts[:-1]):
        return True
    return parts[-1].lower() in _CLUTTER_NAMES


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
        ignored: System files no entry claims (:func:`is_clutter`): ``{"path", "size"}``;
            never a reason for the delivery to fail.
        checked: When the check ran, ISO-8601 UTC.
        signature: Who signed the manifest
            (:func:`~overlap_desktop.core.manifest.vendors.signature_facts`): evidence for a dispute.
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
    ignored: list[dict[str, Any]] = field(default_factory=list)
    checked: str = ""
    signature: dict[str, Any] = field(default_factory=dict)

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
    def complete(self) -> bool:
        """True when every quoted file is present and exact (extra files may be there too)."""
        return all(e.status == "matched" for e in self.entries)

    @property
    def ok(self) -> bool:
        """The buyer's question: did every quoted file arrive exactly as quoted? (= :attr:`complete`)"""
        return self.complete

    @property
    def exact(self) -> bool:
        """Complete, and nothing else delivered (system files aside) and nothing unreadable."""
        return self.complete and not self.extra and not self.unreadable

    @property
    def verdict(self) -> str:
        """``"exact"``, ``"complete"`` (every quoted file present and exact, plus extra files)
        or ``"incomplete"`` (quoted files altered or missing)."""
        if not self.complete:
            return "incomplete"
        return "exact" if self.exact else "complete"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (schema :data:`VERIFY_SCHEMA`)."""
        return {
            "schema": VERIFY_SCHEMA,
            "verdict": self.verdict,
            "verdict_text": verify_verdict(self),
            "ok": self.ok,
            "exact": self.exact,
            "checked": self.checked,
            "manifest": self.manifest,
            "root": self.root,
            "label": self.label,
            "data_dir": self.data_dir,
            "anonymized": self.anonymized,
            "signature": dict(self.signature),
            "signature_text": signature_sentence(self.signature),
            "summary": {"entries": len(self.entries), "matched": self.matched, "altered": self.altered,
                        "missing": self.missing, "extra": len(self.extra),
                        "renamed": sum(1 for e in self.entries if e.renamed),
                        "unreadable": len(self.unreadable), "ignored": len(self.ignored),
                        "bytes_hashed": self.bytes_hashed},
            "entries": [e.to_dict() for e in self.entries],
            "extra": list(self.extra),
            "unreadable": list(self.unreadable),
            "ignored": list(self.ignored),
        }


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def verify_verdict(result: VerifyResult) -> str:
    """The verdict in one plain sentence (CLI, app and HTML report say the same).

    Examples: ``"Every quoted file is present and exact (12 files)."``, ``"Every quoted file
    is present and exact (12 files). 2 files not in the quote are listed. 3 system files
    were ignored."``, ``"Quoted files are altered or missing: 1 altered, 2 missing; 9 of
    12 files are present and exact."``
    """
    n = len(result.entries)
    if result.complete:
        out = f"Every quoted file is present and exact ({_plural(n, 'file')})."
    else:
        parts = []
        if result.altered:
            parts.append(f"{result.altered} altered")
        if result.missing:
            parts.append(f"{result.missing} missing")
        out = (f"Quoted files are altered or missing: {', '.join(parts)}; {result.matched} of "
               f"{_plural(n, 'file')} {'is' if result.matched == 1 else 'are'} present and exact.")
    if result.extra:
        verb = "is" if len(result.extra) == 1 else "are"
        out += f" {_plural(len(result.extra), 'file')} not in the quote {verb} listed."
    if result.unreadable:
        out += f" {_plural(len(result.unreadable), 'file')} could not be read."
    if result.ignored:
        out += f" {_plural(len(result.ignored), 'system file')} (Thumbs.db, .DS_Store and the like) ignored."
    return out


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


def _folder_items(m: Manifest, root: Path, delivered: dict[str, tuple[Path, int]],
                  cancel: CancelCallback | None, known: dict[str, tuple[int, str]]) -> dict[str, str]:
    """Quoted items that are folders in the delivery (a zarr buffer, an RLDS or LeRobot dataset,
    a rosbag2 recording: one item each, as indexing saw them). Each becomes one delivered
    entry with the index's folder size and hash (:func:`~overlap_desktop.core.index.walk.sha256_item`),
    and the files inside it are no longer listed on their own. Manifest names are only compared
    with the delivery's folders, never used as paths. Returns ``name -> sha256``.
    """
    from overlap_desktop.core.index.walk import item_stat, sha256_item

    quoted = {f.name: f.size for f in m.files if not m.anonymized and f.name and f.name not in delivered}
    if not quoted:
        return {}
    folders: dict[str, Path] = {}
    for dirpath, dirnames, _files in os.walk(root, followlinks=False):
        dirnames.sort()
        for d in list(dirnames):
            p = Path(dirpath) / d
            rel = p.relative_to(root).as_posix()
            if rel in quoted and not p.is_symlink():
                folders[rel] = p
                dirnames.remove(d)  # an item: what it holds is not listed on its own
    out: dict[str, str] = {}
    for name, folder in folders.items():
        check_cancel(cancel)
        try:
            size, _ = item_stat(folder)
            if size != quoted[name]:
                digest = ""
            elif known.get(name, (-1, ""))[0] == size:
                digest = known[name][1]
            else:
                digest = sha256_item(folder)
        except OSError:
            continue
        prefix = name + "/"
        for rel in [r for r in delivered if r.startswith(prefix)]:
            del delivered[rel]
        delivered[name] = (folder, size)
        if digest:
            out[name] = digest
    return out


def verify_delivery(manifest: Manifest | str | os.PathLike[str], data_dir: str | os.PathLike[str], *,
                    threads: int = 0, progress: ProgressCallback | None = None,
                    cancel: CancelCallback | None = None,
                    known: dict[str, tuple[int, str]] | None = None) -> VerifyResult:
    """Check a delivery folder against the manifest that quoted it.

    Args:
        manifest: A manifest file or an already-read :class:`Manifest`.
        data_dir: The delivery folder (searched recursively).
        threads: Hashing threads (0 = one per core).
        progress: Receives ``Progress(stage="verify", unit="bytes")``, always on the calling
            thread (about ten times a second).
        cancel: Polled between 1 MiB chunks (from the hashing threads: it must be thread-safe,
            as :class:`~overlap_desktop.core.types.CancelToken` is).
        known: Digests already computed for delivered items (the audit hashes while it decodes):
            ``{relative path: (size, sha256)}``; an item whose size still matches is not read again.

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
    folder_digests = _folder_items(m, root, delivered, cancel, known or {})
    quoted_sizes = {f.size for f in m.files}
    # Only files whose size some entry quotes can match anything; others are extra
    # (or altered by size) without reading a byte.
    to_hash = sorted((rel for rel, (_, size) in delivered.items() if size in quoted_sizes),
                     key=lambda rel: -delivered[rel][1])
    reused = {rel: d for rel, (size, d) in (known or {}).items() if rel in delivered and delivered[rel][1] == size}
    to_hash = [rel for rel in to_hash if rel not in folder_digests and rel not in reused]
    hashed = _hash_files(delivered, to_hash, threads=threads, progress=progress, cancel=cancel)
    hashed.digests.update(folder_digests)
    hashed.digests.update(reused)
    unreadable_paths = {u["path"] for u in hashed.unreadable}
    entries, claimed = _match_entries(m, delivered, hashed.digests, unreadable_paths)
    extra: list[dict[str, Any]] = []
    ignored: list[dict[str, Any]] = []
    for rel, (_, size) in sorted(delivered.items()):
        if rel in claimed or rel in unreadable_paths:
            continue
        (ignored if is_clutter(rel) else extra).append({"path": rel, "size": size})
    # A locked Thumbs.db that no entry needed is clutter, not an unreadable delivery file.
    ignored += [{"path": u["path"], "size": delivered[u["path"]][1]} for u in hashed.unreadable
                if is_clutter(u["path"]) and u["path"] not in claimed]
    ignored.sort(key=lambda x: x["path"])
    unreadable = [u for u in hashed.unreadable if not is_clutter(u["path"])]
    checked = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return VerifyResult(manifest=str(m.path) if m.path else "", root=m.root, label=m.label,
                        data_dir=str(root), anonymized=m.anonymized, entries=entries, extra=extra,
                        bytes_hashed=hashed.bytes_read, unreadable=unreadable, ignored=ignored, checked=checked,
                        signature=manifest_signature_facts(m))


@dataclass(slots=True)
class _Hashed:
    """What hashing the candidate files found."""

    digests: dict[str, str]
    unreadable: list[dict[str, Any]]
    bytes_read: int


def _hash_files(delivered: dict[str, tuple[Path, int]], to_hash: list[str], *, threads: int,
                progress: ProgressCallback | None, cancel: CancelCallback | None) -> _Hashed:
    """SHA-256 of the files ``to_hash`` on a thread pool, progress from the calling thread."""
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
    return _Hashed(digests, unreadable, done[0])


def _match_entries(m: Manifest, delivered: dict[str, tuple[Path, int]], digests: dict[str, str],
                   unreadable_paths: set[str]) -> tuple[list[EntryResult], set[str]]:
    """One verdict per manifest entry, and the delivered paths the entries claim.

    First by name (same name, same bytes), then by content for renamed files and anonymised
    manifests; a file with the quoted name but other bytes makes its entry *altered*.
    """
    claimed: set[str] = set()
    entries: list[EntryResult] = []
    unresolved: list[int] = []
    for f in m.files:
        e = EntryResult(name=f.name, status="missing", size=f.size, sha256=f.sha256)
        entries.append(e)
        hit = None if m.anonymized else delivered.get(f.name)
        if hit is None or f.name in unreadable_paths:
            unresolved.append(len(entries) - 1)
            continue
        e.delivered, e.delivered_size = f.name, hit[1]
        e.delivered_sha256 = digests.get(f.name)
        if hit[1] == f.size and e.delivered_sha256 == f.sha256:
            e.status = "matched"
            claimed.add(f.name)
        else:
            unresolved.append(len(entries) - 1)
    # Second pass: content found under another name (renamed, or anonymised manifest).
    by_content: dict[tuple[int, str], list[str]] = {}
    for rel, digest in sorted(digests.items()):
        if rel not in claimed:
            by_content.setdefault((delivered[rel][1], digest), []).append(rel)
    unmatched: list[EntryResult] = []
    for i in unresolved:
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
    return entries, claimed


def write_verify_json(result: VerifyResult, path: str | os.PathLike[str]) -> Path:
    """Write :meth:`VerifyResult.to_dict` as JSON, atomically.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, dumps_json(result.to_dict()))
    return p


_STATUS_WORDS = {"matched": "present and exact", "altered": "altered", "missing": "missing"}
#: Terms explained at the end of the page (see :data:`~overlap_desktop.core.report.glossary.GLOSSARY`).
_VERIFY_TERMS = ("present and exact", "altered", "missing", "not in the quote", "system files", "seal", "manifest")


def verify_context(result: VerifyResult) -> dict[str, Any]:
    """Everything ``verify.html.j2`` shows (strings raw: the template neutralises and escapes)."""
    from overlap_desktop import __version__

    cards = [(len(result.entries), "quoted files"), (result.matched, "present and exact"),
             (result.altered, "altered"), (result.missing, "missing"),
             (len(result.extra), "not in the quote"), (len(result.ignored), "system files ignored")]
    if result.unreadable:
        cards.append((len(result.unreadable), "could not be read"))
    entries = [{"name": e.name, "ok": e.status == "matched", "size": e.size, "sha256": e.sha256,
                "delivered": e.delivered or "",
                "words": _STATUS_WORDS.get(e.status, e.status) + (f" ({e.reason})" if e.reason else "")}
               for e in sorted(result.entries, key=lambda e: (e.status == "matched", e.name))]
    return {
        "title": "Delivery check",
        "label": safe_text(result.label, max_len=120) if result.label else "",
        "complete": result.complete,
        "verdict": verify_verdict(result),
        "root": result.root,
        "signature": signature_sentence(result.signature),
        "signature_changed": signature_changed(result.signature),
        "signed_root": result.signature.get("signed_root", ""),
        "cards": cards,
        "entries": entries,
        "extra": [(x.get("path", ""), int(x.get("size", 0))) for x in result.extra],
        "unreadable": [(u["path"], u.get("error", "")) for u in result.unreadable],
        "ignored": [(x.get("path", ""), int(x.get("size", 0))) for x in result.ignored],
        "glossary_terms": _VERIFY_TERMS,
        "tool_version": __version__,
        "checked": format_date(result.checked) if result.checked else "",
        "bytes_hashed": result.bytes_hashed,
        "schema": VERIFY_SCHEMA,
        "manifest": result.manifest,
        "data_dir": result.data_dir,
        "names": "pseudonyms (files matched by size and checksum only)" if result.anonymized else "real names",
    }


def render_verify_html(result: VerifyResult) -> str:
    """The verification as a self-contained HTML page a buyer can file with the purchase."""
    # Imported here: Jinja2 and the templates load only when a page is written, not with verify.
    from overlap_desktop.core.report.html import render_page

    return render_page("verify.html.j2", verify_context(result))


def write_verify_html(result: VerifyResult, path: str | os.PathLike[str]) -> Path:
    """Write a human-readable verification report (self-contained HTML), atomically.

    Names from the manifest and the delivery folder are neutralised and escaped (by the
    template: autoescape plus :func:`~overlap_desktop.core.report.formats.safe_text`).

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, render_verify_html(result).encode("utf-8", errors="replace"))
    return p
