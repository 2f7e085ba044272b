"""Where an index may live, and who may write to it.

An index needs SQLite's write-ahead log, which shares memory through an mmap of the
``-shm`` file and so breaks on network filesystems (NFS, SMB, sshfs...):
:func:`network_filesystem` names such a location and :func:`wal_support` probes a
folder for real. Only one process writes at a time: :class:`WriterLock` is an OS
lock on ``index.lock``, released by the OS when its holder dies, so a crashed writer
never leaves the index locked.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from overlap_desktop.core.index.db import apply_bestpractice
from overlap_desktop.errors import IndexBusyError

__all__ = ["WriterLock", "existing_ancestor", "network_filesystem", "wal_support"]

# Filesystem types on which SQLite's WAL (shared memory via mmap of -shm) is unsafe.
_NETWORK_FS = frozenset({
    "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs", "coda", "9p",
    "fuse.sshfs", "sshfs", "ceph", "fuse.ceph", "glusterfs", "fuse.glusterfs", "lustre", "gpfs",
    "davfs", "fuse.davfs2", "fuse.rclone", "beegfs", "fuse.s3fs", "fuse.gcsfuse", "webdav",
    "fuse.smbnetfs", "vboxsf", "fuse.vmhgfs-fuse", "vmhgfs", "prl_fs", "drvfs", "v9fs",
})


def _mount_table() -> list[tuple[str, str]]:
    """``(mount point, fs type)`` pairs on Linux (empty elsewhere)."""
    out: list[tuple[str, str]] = []
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3:
                    # Spaces in mount points are escaped as \040.
                    out.append((parts[1].replace("\\040", " "), parts[2]))
    except OSError:
        pass
    return out


def existing_ancestor(path: Path) -> Path:
    p = Path(os.path.abspath(path))
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def network_filesystem(path: Path) -> str | None:
    """Say why ``path`` is on a network filesystem (where WAL cannot work), or ``None``.

    Linux: the type of the mount holding the path. Windows: a UNC path or a drive
    Windows reports as remote. Elsewhere the WAL probe in :func:`wal_support` decides.
    """
    raw = os.path.abspath(path)
    if sys.platform == "win32":
        if raw.startswith("\\\\") and not raw.startswith(("\\\\?\\", "\\\\.\\")):
            return f"{raw} is a network share (UNC path)"
        if raw.upper().startswith("\\\\?\\UNC\\"):
            return f"{raw} is a network share (UNC path)"
        try:
            import ctypes

            drive = os.path.splitdrive(raw)[0]
            if drive:
                if ctypes.windll.kernel32.GetDriveTypeW(drive + "\\") == 4:  # DRIVE_REMOTE
                    return f"drive {drive} is a network drive"
        except (AttributeError, OSError):  # pragma: no cover - non-Windows ctypes
            pass
        return None
    real = os.path.realpath(existing_ancestor(Path(raw)))
    best, fstype = "", ""
    for mount, kind in _mount_table():
        inside = real == mount or real.startswith(mount.rstrip("/") + "/") or mount == "/"
        if inside and len(mount) >= len(best):
            best, fstype = mount, kind
    if fstype.lower() in _NETWORK_FS:
        return f"{real} is on a network filesystem ({fstype} mounted at {best})"
    return None


def wal_support(path: Path) -> tuple[bool, str]:
    """Check that an index can live in folder ``path`` (WAL works there).

    Creates a scratch database next to where the index would be and tries WAL on it.

    Returns:
        ``(ok, reason)``; ``reason`` explains a failure or summarises success.
    """
    import apsw

    apply_bestpractice()
    why = network_filesystem(path)
    if why:
        return False, f"{why}; SQLite's write-ahead log needs a local disk"
    where = existing_ancestor(Path(path))
    if not where.is_dir():
        return False, f"{where} is not a folder"
    probe_dir = None
    try:
        probe_dir = tempfile.mkdtemp(prefix=".overlap-walprobe-", dir=where)
        db = apsw.Connection(os.path.join(probe_dir, "probe.sqlite3"))
        try:
            mode = db.pragma("journal_mode", "wal")
            db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        finally:
            db.close()
        if str(mode).lower() != "wal":
            return False, f"SQLite refused WAL mode in {where} (got {mode!r})"
        return True, f"WAL works in {where}"
    except (OSError, apsw.Error) as exc:
        return False, f"cannot create a database in {where}: {exc}"
    finally:
        if probe_dir:
            shutil.rmtree(probe_dir, ignore_errors=True)


# --------------------------------------------------------------------------- writer lock


class WriterLock:
    """An exclusive OS lock on ``index.lock`` (released by the OS if the process dies)."""

    # Windows byte-range locks block reads of the locked bytes, so lock far past the pid text.
    _WIN_OFFSET = 1 << 16

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def holder(self) -> str:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return "unknown"
        return text.split("\n", 1)[0] or "unknown"

    def held(self) -> bool:
        """Whether a writer (this process or another) holds the lock right now.

        Probed with a lock taken and released at once; a folder this process cannot
        write to cannot be written by an indexing run of its user either: ``False``.
        """
        try:
            fh = open(self.path, "rb")
        except OSError:
            return False
        try:
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI
                import msvcrt

                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBRLCK, 1)
                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        except OSError:
            return True
        finally:
            fh.close()
        return False

    def acquire(self) -> None:
        fh = open(self.path, "a+b")
        try:
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows CI
                import msvcrt

                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise IndexBusyError(
                f"another overlap process ({self.holder()}) is writing to this index; "
                "wait for it to finish or stop it", path=self.path.parent) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n".encode())
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.seek(0)
            fh.truncate()
            if sys.platform == "win32":  # pragma: no cover
                import msvcrt

                fh.seek(self._WIN_OFFSET)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        except OSError:  # pragma: no cover - closing releases the lock anyway
            pass
        finally:
            fh.close()
