"""Is there a library yet, and what does it hold? The one answer the CLI and the GUI both ask for.

"Library" is the lab's index folder. Before anything is indexed the folder may be
missing, empty, or hold other things; only an index database in it makes a library.
These helpers answer that without opening the database (cheap enough for a window
to ask on every refresh), and list the files of an existing library with the filters
``overlap files`` offers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from overlap_desktop.core.index.db import DB_NAME
from overlap_desktop.core.index.lock import WriterLock

# `norm_path`/`is_under` are the store's own rule for "this path is at or under that root"; using
# them keeps `overlap files PATH` in step with how paths are stored.
from overlap_desktop.core.index.reading import IndexedFile, is_under, norm_path
from overlap_desktop.core.index.schema import LOCK_NAME
from overlap_desktop.core.index.store import Index, open_index

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config

__all__ = ["FILE_STATUSES", "LibraryCompleteness", "LibraryStatus", "completeness_of", "library_completeness",
           "library_files", "library_status"]

#: What ``library_files(status=...)`` accepts; "pending" also covers files a writer is working on.
FILE_STATUSES = ("ok", "error", "pending")


@dataclass(frozen=True)
class LibraryStatus:
    """What is at the library (index) folder, found without opening the database.

    Attributes:
        path: The index folder, absolute.
        has_index: An index database is there (something was indexed, or indexing started).
        problem: Why the folder cannot be a library (e.g. it is a file); empty when it can.
    """

    path: Path
    has_index: bool
    problem: str = ""

    @property
    def empty(self) -> bool:
        """Nothing indexed yet: the next step is to add footage (not an error)."""
        return not self.has_index and not self.problem

    @property
    def ready(self) -> bool:
        """There is an index to open, read and compare against."""
        return self.has_index and not self.problem


def _folder(path: str | os.PathLike[str] | None, config: Config | None) -> Path:
    if path is None:
        if config is None:
            from overlap_desktop.config import load_config

            config = load_config()
        path = config.index_path
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def library_status(path: str | os.PathLike[str] | None = None, *, config: Config | None = None) -> LibraryStatus:
    """Is there a library yet at ``path``?

    Args:
        path: The index folder; default the configured one (``config.index_path``).
        config: Resolved settings, used when ``path`` is not given (default: loaded).

    Returns:
        A :class:`LibraryStatus`; a missing or empty folder is an empty library, not an error.
    """
    folder = _folder(path, config)
    if folder.exists() and not folder.is_dir():
        return LibraryStatus(folder, has_index=False, problem="is a file, not an index folder")
    return LibraryStatus(folder, has_index=(folder / DB_NAME).is_file())


def library_files(path: str | os.PathLike[str] | None = None, *, status: str | None = None,
                  under: Iterable[str | os.PathLike[str]] = (), config: Config | None = None,
                  ) -> list[IndexedFile]:
    """The files a library holds, sorted by path; none when nothing was indexed yet.

    Args:
        path: The index folder; default the configured one.
        status: Only files with this status (one of :data:`FILE_STATUSES`; ``"pending"``
            includes files being indexed right now).
        under: Only files at or under one of these paths (as given on a command line:
            relative paths are taken from the current folder).
        config: Resolved settings.

    Returns:
        The matching :class:`IndexedFile` rows.

    Raises:
        ValueError: ``status`` is not one of :data:`FILE_STATUSES`.
        IndexError_: the folder is not a readable index (damaged, a file, a newer version).
    """
    if status is not None and status not in FILE_STATUSES:
        raise ValueError(f"status must be one of {', '.join(FILE_STATUSES)}, not {status!r}")
    lib = library_status(path, config=config)
    if lib.empty:
        return []
    with open_index(lib.path, config=config, create=False, readonly=True) as idx:
        files = idx.with_frame_rates(idx.files())
    if status == "pending":
        files = [f for f in files if f.status in ("pending", "running")]
    elif status is not None:
        files = [f for f in files if f.status == status]
    roots = [norm_path(p) for p in under]
    if roots:
        files = [f for f in files if any(is_under(f.path, r) for r in roots)]
    return files


@dataclass(frozen=True)
class LibraryCompleteness:
    """Whether a comparison against the library now sees all of the lab's footage.

    Attributes:
        files_ready: Files with fingerprints (what a comparison uses).
        files_unfinished: Files found by an indexing run and not fingerprinted yet.
        unfinished_runs: Folders of indexing runs that started and did not finish
            (stopped, crashed, or running now).
        indexing_now: A writer holds the library right now (an indexing run is going on).
    """

    files_ready: int = 0
    files_unfinished: int = 0
    unfinished_runs: tuple[str, ...] = ()
    indexing_now: bool = False

    @property
    def complete(self) -> bool:
        """Nothing is being indexed and no run was left unfinished."""
        return not (self.files_unfinished or self.unfinished_runs or self.indexing_now)

    @property
    def why(self) -> str:
        """Why the library may be incomplete, as a clause (``"indexing is running now"``...)."""
        if self.complete:
            return ""
        why = "indexing is running now" if self.indexing_now else "indexing was stopped before it finished"
        if self.files_unfinished:
            why += f"; {self.files_unfinished} file{'s' if self.files_unfinished != 1 else ''} not fingerprinted yet"
        return why

    @property
    def note(self) -> str:
        """One plain sentence for a window or a terminal; empty when the library is complete."""
        if self.complete:
            return ""
        ready = f"{self.files_ready} file{'s' if self.files_ready != 1 else ''}"
        return (f"Your library may be incomplete ({self.why}): a comparison now uses the {ready} fingerprinted "
                "so far, and footage not yet read counts as not owned. "
                + ("Wait for indexing to finish" if self.indexing_now else "Resume indexing (or re-scan)")
                + " for a full answer.")


def library_completeness(path: str | os.PathLike[str] | None = None, *,
                         config: Config | None = None) -> LibraryCompleteness:
    """Is the library complete, or would a comparison now miss footage being (re)indexed?

    Opens the database read-only (run it off a window's UI thread).

    Args:
        path: The index folder; default the configured one.
        config: Resolved settings.

    Returns:
        A :class:`LibraryCompleteness`; an empty library is complete (and empty).

    Raises:
        IndexError_: the folder is not a readable index (damaged, a file, a newer version).
    """
    lib = library_status(path, config=config)
    if lib.empty:
        return LibraryCompleteness()
    with open_index(lib.path, config=config, create=False, readonly=True) as idx:
        return completeness_of(idx)


def completeness_of(idx: Index) -> LibraryCompleteness:
    """:func:`library_completeness` of an index that is already open."""
    counts = {status: len(idx.files(status=status)) for status in ("ok", "pending", "running")}
    return LibraryCompleteness(files_ready=counts["ok"], files_unfinished=counts["pending"] + counts["running"],
                               unfinished_runs=tuple(idx.unfinished_runs()),
                               indexing_now=WriterLock(idx.path / LOCK_NAME).held())
