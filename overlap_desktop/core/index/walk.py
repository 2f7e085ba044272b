"""Finding the footage under the given folders, and what an item's bytes are.

:func:`walk_candidates` lists every file or recording folder a reader claims (hidden
and system entries skipped, symlink loops followed once, unreadable folders reported).
:func:`item_stat` gives the size and modification time the resume check compares, and
:func:`sha256_item` the content hash stored with the fingerprints (for a recording
folder: a hash over its files' names, sizes and hashes).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.errors import MediaError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.ingest.readers.base import Reader

__all__ = ["SYSTEM_NAMES", "changed_since", "item_stat", "item_state", "sha256_item", "utf8_name",
           "walk_candidates"]

log = logging.getLogger(__name__)

#: File and folder names that are never footage (OS metadata, recycle bins).
SYSTEM_NAMES = frozenset({
    "thumbs.db", "desktop.ini", "$recycle.bin", "system volume information", "__macosx",
    "lost+found", "$windows.~bt", "$windows.~ws", "recycler",
})
_WIN_HIDDEN_OR_SYSTEM = 0x2 | 0x4  # FILE_ATTRIBUTE_HIDDEN | FILE_ATTRIBUTE_SYSTEM
_HASH_CHUNK = 1 << 20


def _hidden(entry: os.DirEntry[str] | Path, st: os.stat_result | None = None) -> bool:
    name = entry.name
    if name.startswith(".") or name.lower() in SYSTEM_NAMES or name.startswith("~$"):
        return True
    attrs = getattr(st, "st_file_attributes", 0) if st is not None else 0
    return bool(attrs & _WIN_HIDDEN_OR_SYSTEM)


#: What :func:`_claim` returns for an item whose readers failed while looking at it.
_FAILED = "failed"


def _claim(path: Path, unlisted: list[tuple[Path, str]] | None) -> Reader | None | str:
    """The reader for ``path``, ``None`` when no reader claims it, or :data:`_FAILED` when a
    reader failed while looking at it (a dataset's metadata that makes a parser fail, a library
    surprise): that item is listed with the reason, and the walk goes on with the rest."""
    from overlap_desktop.core.ingest.readers import reader_for

    try:
        return reader_for(path)
    except MediaError:
        return None
    except Exception as exc:  # one hostile item must not stop the whole library
        why = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("%s: not indexed: a reader failed while looking at it (%s)", path, why)
        if unlisted is not None:
            unlisted.append((path, f"cannot tell how to read this (a reader failed while looking at it: {why}); "
                                   "it was not indexed"))
        return _FAILED


def walk_candidates(paths: Iterable[str | os.PathLike[str]], *, exclude: Sequence[Path] = (),
                    unlisted: list[tuple[Path, str]] | None = None) -> Iterator[tuple[Path, Reader | None]]:
    """Yield ``(item, reader)`` for every file or recording folder under ``paths``.

    Folders are walked recursively in name order; hidden and system entries are
    skipped (unless named explicitly); symlinked folders are followed once (a loop is
    not followed twice). A folder that cannot be listed is appended to ``unlisted`` with
    the reason (and logged), so callers can report it and must not treat what it holds
    as gone; so is an item a reader failed on while looking at it (it is neither yielded
    nor descended into). A folder a reader claims (an image sequence, a LeRobot
    dataset, a rosbag2 folder) is one item and is not descended into. An explicitly
    named file no reader claims is yielded with ``reader=None`` so it can be reported.

    Raises:
        UsageError: a given path does not exist.
    """
    excluded = {os.path.realpath(p) for p in exclude}
    seen_dirs: set[tuple[int, int]] = set()
    seen_items: set[str] = set()

    def emit(p: Path, reader: Reader | None) -> Iterator[tuple[Path, Reader | None]]:
        real = os.path.realpath(p)
        if real in seen_items:
            return
        seen_items.add(real)
        yield p, reader

    def walk_dir(d: Path) -> Iterator[tuple[Path, Reader | None]]:
        try:
            st = d.stat()
        except OSError:
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs or os.path.realpath(d) in excluded:
            return
        seen_dirs.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", d, exc.strerror)
            if unlisted is not None:
                unlisted.append((d, f"cannot list this folder: {exc.strerror or exc}; its files were not indexed"))
            return
        for e in entries:
            try:
                est = e.stat()
            except OSError as exc:
                # A dangling symlink or a symlink loop: say so, the walk goes on.
                log.warning("%s: skipped: %s", e.path, exc.strerror or exc)
                continue
            if _hidden(e, est):
                continue
            p = Path(e.path)
            if stat.S_ISDIR(est.st_mode):
                reader = _claim(p, unlisted)
                if reader is None:
                    yield from walk_dir(p)
                elif not isinstance(reader, str):
                    yield from emit(p, reader)
            elif stat.S_ISREG(est.st_mode):
                reader = _claim(p, unlisted)
                if reader is not None and not isinstance(reader, str):
                    yield from emit(p, reader)

    roots = [Path(os.path.abspath(os.fspath(p))) for p in paths]
    for root in roots:
        if not root.exists():
            raise UsageError("no such file or folder", path=root)
    for root in roots:
        reader = _claim(root, unlisted)
        if isinstance(reader, str):
            continue
        if root.is_dir():
            if reader is not None:
                yield from emit(root, reader)
            else:
                yield from walk_dir(root)
        else:
            yield from emit(root, reader)


def item_stat(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)``; for a folder: total bytes and newest modification."""
    size, mtime, _ = item_state(path)
    return size, mtime


def item_state(path: Path) -> tuple[int, int, str]:
    """``(size, mtime_ns, stat_key)``: :func:`item_stat` plus what the item *is*.

    ``stat_key`` is ``"inode:ctime_ns"``; for a folder, the folder's inode and the newest
    change time of anything in it. Size and mtime can be copied onto another file
    (``truncate -s SIZE``, ``touch -r``); a renamed-in replacement has another inode, and
    its change time is set by the kernel to when it happened, which no user call can set
    back. The device number is left out on purpose: it changes when a removable disk is
    mounted again, which must not make a library look changed.
    """
    st = path.stat()
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size, st.st_mtime_ns, f"{st.st_ino}:{st.st_ctime_ns}"
    size, mtime, ctime = 0, st.st_mtime_ns, st.st_ctime_ns
    for dirpath, dirnames, names in os.walk(path):
        dirnames.sort()
        for n in names:
            try:
                s = os.stat(os.path.join(dirpath, n))
            except OSError:
                continue
            size += s.st_size
            mtime = max(mtime, s.st_mtime_ns)
            ctime = max(ctime, s.st_ctime_ns)
    return size, mtime, f"{st.st_ino}:{ctime}"


def _sha256_file(path: str, stop: threading.Event) -> str:
    from overlap_desktop.core.fsutil import open_regular

    h = hashlib.sha256()
    # Regular files only: a FIFO would block this thread in open() for ever (and the job's
    # pool.shutdown(wait=True) with it, Ctrl-C included); /dev/zero would never end.
    with open_regular(path) as fh:
        while not stop.is_set():
            block = fh.read(_HASH_CHUNK)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def sha256_item(path: Path, stop: threading.Event | None = None) -> str:
    """SHA-256 of a file's bytes; for a folder, of the sorted list of
    ``relative path, size, sha256`` lines of the files in it."""
    from overlap_desktop.core.fsutil import is_regular_file

    stop = stop or threading.Event()
    if not path.is_dir():
        return _sha256_file(str(path), stop)
    h = hashlib.sha256()
    for dirpath, dirnames, names in os.walk(path):
        dirnames.sort()
        for n in sorted(names):
            full = os.path.join(dirpath, n)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            if not is_regular_file(full):  # FIFO, device, socket, dangling link: named, never read
                h.update(f"{rel}\tnot a regular file\n".encode())
                continue
            h.update(f"{rel}\t{os.path.getsize(full)}\t{_sha256_file(full, stop)}\n".encode())
    return h.hexdigest()


def changed_since(item: Path, size: int, mtime_ns: int, stat_key: str | None = None) -> str | None:
    """Why ``item`` no longer matches the size and mtime (and ``stat_key``, when given: see
    :func:`item_state`) seen before it was read, or None."""
    try:
        now = item_state(item)
    except OSError:
        return "disappeared while being indexed (deleted or moved)"
    if now[:2] != (size, mtime_ns):
        return ("changed while being indexed (size or modification time differ); run the index again "
                "once it is complete")
    if stat_key and now[2] != stat_key:
        # Same size and mtime, another file: what was read may be the old bytes or the new.
        return ("replaced while being indexed (same size and modification time, but another file: its inode "
                "or change time differ); run the index again once it is complete")
    return None


def utf8_name(path: str) -> bool:
    """False for a path holding undecodable bytes (surrogate escapes from os.fsdecode)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
