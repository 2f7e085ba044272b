"""Small file-system helpers shared by the writers of manifests and reports."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from overlap_desktop.errors import (
    WRITE_ERRNOS,
    DiskFullError,
    InputError,
    OverlapError,
    WriteError,
    write_failure_reason,
)

__all__ = ["JSON_MAX_DEPTH", "STALE_TEMP_SECONDS", "NotRegularFileError", "atomic_write_bytes", "exclusive_lock",
           "file_kind", "is_regular_file", "loads_json_limited", "open_regular", "os_write_error", "read_json_regular",
           "read_regular"]


def os_write_error(exc: OSError, path: str | os.PathLike[str], prefix: str,
                   error_type: type[OverlapError] = InputError) -> OverlapError:
    """The error for an OS failure while writing ``path``.

    A full disk, a file-size limit (``EFBIG``), a quota, a read-only or failing disk is a
    :class:`~overlap_desktop.errors.WriteError` (exit 2, the reason in plain words);
    anything else (permission denied, a missing folder) keeps the caller's ``error_type``.
    """
    if exc.errno in WRITE_ERRNOS:
        full = exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
        cls = DiskFullError if full else WriteError
        return cls(f"{prefix}: {write_failure_reason(exc.errno)}", path=path)
    return error_type(f"{prefix}: {exc.strerror or exc}", path=path)

#: A temporary file of a killed writer older than this is removed by the next successful
#: write to the same destination (younger ones may belong to a writer still running).
STALE_TEMP_SECONDS = 3600.0


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *,
                       error_type: type[OverlapError] = InputError,
                       open_message: str = "cannot write here", write_message: str = "cannot write",
                       make_parents: bool = False, mode: int = 0o666) -> Path:
    """Write ``data`` so that ``path`` is either the old file or the complete new one.

    The bytes go to a temporary file in the same folder (so the rename cannot cross file
    systems), are flushed and fsynced, then renamed over ``path``; the folder is fsynced
    afterwards where the platform allows it (not on Windows), so the rename survives a
    power cut.

    Args:
        path: Destination file.
        data: The complete new contents.
        error_type: The :class:`~overlap_desktop.errors.OverlapError` subclass raised on an
            OS error (each caller keeps its own error type, and so its exit code).
        open_message: Message prefix when the temporary file cannot be created.
        write_message: Message prefix when writing or renaming fails.
        make_parents: Create missing parent folders first.
        mode: Permissions of the new file, minus the umask (0o666: an ordinary file; manifests
            use 0o600, as ``tempfile.mkstemp`` gave them before this helper existed).

    Returns:
        The destination path.

    Raises:
        OverlapError: of type ``error_type``, naming ``path`` and the OS's reason, or a
            :class:`~overlap_desktop.errors.WriteError` for a full disk, a file-size limit,
            a quota or a failing disk (:func:`os_write_error`); the temporary file is
            removed and ``path`` is left as it was.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    tmp = folder / f".{_temp_stem(path.name)}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        if make_parents:
            folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    except OSError as exc:
        raise os_write_error(exc, path, open_message, error_type) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise os_write_error(exc, path, write_message, error_type) from exc
        raise
    _remove_stale_temps(folder, path.name)
    # The rename is durable only once the directory entry is; opening a folder fails on Windows.
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
    return path


#: Longest file name most file systems allow (bytes); the temporary name must fit too.
_NAME_MAX = 255
#: What the temporary name adds around the destination's name: "." + "." + 12 hex + ".tmp".
_TEMP_EXTRA = 18


def _temp_stem(name: str) -> str:
    """The destination's name as used inside its temporary name.

    A destination name of 238-255 bytes is legal, but the temporary name adds 18 bytes
    and would fail with "File name too long"; such names are cut and made unique again
    with a digest of the whole name (stable, so stale temporaries are still recognised).
    """
    raw = os.fsencode(name)
    if len(raw) + _TEMP_EXTRA <= _NAME_MAX:
        return name
    import hashlib

    digest = hashlib.sha256(raw).hexdigest()[:8]
    keep = raw[: _NAME_MAX - _TEMP_EXTRA - 9]
    # "ignore" drops a character the cut split in two (the digest keeps the name unique).
    return keep.decode("utf-8", "ignore") + "~" + digest


def _remove_stale_temps(folder: Path, name: str) -> None:
    """Delete ``.NAME.<hex>.tmp`` files left by a writer that was killed mid-write.

    Only files matching this helper's own naming for the same destination and older than
    :data:`STALE_TEMP_SECONDS` are touched; failures are ignored (it is housekeeping).
    """
    pattern = re.compile(rf"^\.{re.escape(_temp_stem(name))}\.[0-9a-f]{{12}}\.tmp$")
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if pattern.match(entry.name) and entry.is_file(follow_symlinks=False) \
                    and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            continue


# --------------------------------------------------------------------------- regular files only


class NotRegularFileError(OSError):
    """A path that should be a regular file is a FIFO, a device, a socket or a folder.

    Reading a FIFO blocks until a writer appears (forever, and a blocked ``open`` cannot be
    interrupted from another thread); ``/dev/zero`` never ends. Media readers and hashing
    therefore only ever read regular files.
    """

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file (it is {kind})", os.fspath(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """Plain words for a file type (``"a FIFO (named pipe)"``, ``"a device"``...)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` (symlinks followed) is a regular file; never blocks or raises."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for reading in binary mode, refusing anything but a regular file.

    The file is opened non-blocking (so a FIFO swapped in after a check cannot block the
    ``open``) and its type is checked on the open descriptor, so there is no window
    between check and use.

    Raises:
        NotRegularFileError: ``path`` is a FIFO, device, socket or folder.
        OSError: it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                 | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, file_kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit``), refusing FIFOs and devices.

    Raises:
        NotRegularFileError: not a regular file.
        OSError: unreadable.
    """
    with open_regular(path) as fh:
        return fh.read() if limit is None else fh.read(limit)


# --------------------------------------------------------------------------- JSON with limits

#: Deepest nesting accepted in any JSON file the program reads (its own and a dataset's).
JSON_MAX_DEPTH = 64


def loads_json_limited(raw: bytes | str, *, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` with a plain ``ValueError``.

    The standard parser recurses once per level and raises ``RecursionError`` (not a
    ``ValueError``) near the interpreter's limit, so a file of nested ``[`` escaped every
    reader's "damaged file" handling; the depth of what parses is checked without recursion.

    Raises:
        ValueError: not JSON, or nested too deeply.
    """
    try:
        doc = json.loads(raw)
    except RecursionError:
        raise ValueError(f"nested more than {max_depth} levels deep") from None
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= max_depth:
                raise ValueError(f"nested more than {max_depth} levels deep")
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return doc


def read_json_regular(path: str | os.PathLike[str], limit: int, *, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Parse a JSON file of at most ``limit`` bytes, refusing FIFOs and devices.

    Raises:
        NotRegularFileError: not a regular file.
        OSError: unreadable.
        ValueError: larger than ``limit``, not UTF-8 JSON, or nested too deeply (the reason in words).
    """
    raw = read_regular(path, limit + 1)
    if len(raw) > limit:
        raise ValueError(f"larger than {limit:,} bytes")
    try:
        return loads_json_limited(raw.decode("utf-8"), max_depth=max_depth)
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


# --------------------------------------------------------------------------- a lock between processes


@contextmanager
def exclusive_lock(path: str | os.PathLike[str], *, timeout: float = 30.0,
                   error_type: type[OverlapError] = InputError) -> Iterator[None]:
    """Hold an OS lock on ``path`` (created if needed) for a read-modify-write by one process at a time.

    The OS drops the lock when its holder dies, so a crash never leaves it held. Waits up
    to ``timeout`` seconds for another holder.

    Raises:
        OverlapError: (``error_type``) the lock file cannot be made, or another process held it too long.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    except OSError as exc:
        raise os_write_error(exc, target, "cannot make the lock file", error_type) from None
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() > deadline:
                raise error_type(f"another overlap process has held this file for over {timeout:.0f} s; "
                                 "wait for it to finish and try again", path=target)
            time.sleep(0.02)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks bytes from the current position
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)
