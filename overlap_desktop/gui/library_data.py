"""What "My library" reads and writes, in worker threads: the file list, forgetting files, plain problems."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from overlap_desktop import api

__all__ = ["START_HERE", "changed_on_disk", "forget_files", "load_library", "plain_problem"]


def load_library(index_path: Path, config: api.Config, check_disk: bool = False) -> dict[str, Any]:
    """Read the index's file list and totals (runs in a worker thread).

    Args:
        index_path: The index folder; a missing folder is an empty library.
        config: The resolved configuration.
        check_disk: Also list the ready files that changed on disk since they were indexed (asked
            after a stopped job, whose re-scan may not have reached them).

    Returns:
        ``{"files": [IndexedFile...], "stats": {...}, "path": str, "not_checked": set[str]}``.
    """
    if api.library_status(index_path, config=config).empty:
        # Nothing indexed yet: an empty library, not an error.
        return {"files": [], "stats": {"files": 0, "hours": 0.0}, "path": str(index_path),
                "not_checked": set()}
    with api.open_index(Path(index_path), config=config, create=False, readonly=True) as idx:
        files = list(idx.files())
        stats = dict(idx.stats())
    stats.setdefault("path", str(index_path))
    not_checked = changed_on_disk(files) if check_disk else set()
    return {"files": files, "stats": stats, "path": str(index_path), "not_checked": not_checked}


def changed_on_disk(files: list[Any]) -> set[str]:
    """Paths of ready files whose size or modification time differs from the index's (a re-scan
    would check them again). Folder recordings and files gone from disk are left to the re-scan."""
    out: set[str] = set()
    for f in files:
        if f.status != "ok":
            continue
        try:
            st = os.stat(f.path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and (st.st_size != f.size or st.st_mtime_ns != f.mtime_ns):
            out.add(f.path)
    return out


def forget_files(index_path: Path, config: api.Config, paths: list[str], folders: list[str]) -> int:
    """Forget ``paths`` and every file at or under ``folders`` in the index (runs in a worker thread).

    Returns:
        How many files were forgotten.
    """
    every = list(paths)
    if folders:
        every += [f.path for f in api.library_files(index_path, under=folders, config=config)]
    with api.open_index(Path(index_path), config=config, create=False) as idx:
        return idx.remove_files([Path(p) for p in every])


#: Shown where an empty library would be: the first thing to do.
START_HERE = ("Your library is empty: start by adding your footage. Click \"Add folder…\" (or drop a "
              "folder of footage on this window); every offer is then checked against it.")


#: Reader messages that mean "the file is damaged or incomplete" (the raw reason stays in the tooltip).
_DAMAGED_HINTS = ("moov atom", "magic", "invalid data", "truncated", "end of file", "eof", "corrupt",
                  "runs past", "ffmpeg", "decod", "header")


def plain_problem(reason: str) -> str:
    """Lead with what happened and what to do; the reader's own words are kept for the tooltip."""
    low = reason.lower()
    if any(h in low for h in _DAMAGED_HINTS):
        return ("Damaged or incomplete file: check that it plays, or copy it again from the original. "
                "(Hover for details.)")
    if api.needs_frame_rate(reason):
        # The reader's words name the command line; in the app the rate is asked above the list.
        return "Stores no frame rate: give it in the box above the list (Read them at these rates)."
    return reason
