"""Reader discovery: the ``overlap.readers`` entry-point group.

Built-in readers are declared in ``pyproject.toml`` under that group, so a plugin
installed by a third party is found the same way. When the package runs from a
source tree that was never installed (no entry points), the built-ins are used
directly so nothing silently disappears.
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points
from pathlib import Path

from overlap_desktop.core.ingest.readers.base import Reader, ReaderLimits
from overlap_desktop.errors import MediaError

__all__ = ["BUILTIN_READERS", "ENTRY_POINT_GROUP", "Reader", "ReaderLimits", "ReaderLoadFailure",
           "available_readers", "reader_for"]

ENTRY_POINT_GROUP = "overlap.readers"

#: name -> "module:Class" of the readers shipped with the package (also in pyproject.toml).
BUILTIN_READERS: dict[str, str] = {
    "video": "overlap_desktop.core.ingest.readers.video:VideoReader",
    "mcap": "overlap_desktop.core.ingest.readers.mcap:McapReader",
    "rosbag": "overlap_desktop.core.ingest.readers.rosbag:RosbagReader",
    "lerobot": "overlap_desktop.core.ingest.readers.lerobot:LeRobotReader",
    "imageseq": "overlap_desktop.core.ingest.readers.imageseq:ImageSequenceReader",
    "aloha": "overlap_desktop.core.ingest.readers.hdf5.aloha:AlohaReader",
    "robomimic": "overlap_desktop.core.ingest.readers.hdf5.robomimic:RobomimicReader",
    "rlds": "overlap_desktop.core.ingest.readers.rlds.reader:RldsReader",
    "zarr": "overlap_desktop.core.ingest.readers.zarrbuf.reader:ZarrReader",
}

log = logging.getLogger(__name__)


class ReaderLoadFailure:
    """A reader entry point that could not be loaded (shown by ``overlap doctor``)."""

    def __init__(self, name: str, target: str, error: str) -> None:
        self.name, self.target, self.error = name, target, error


_cache: tuple[list[Reader], list[ReaderLoadFailure]] | None = None


def _load(target: str) -> object:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def available_readers(*, refresh: bool = False) -> tuple[list[Reader], list[ReaderLoadFailure]]:
    """Return the loadable readers (in priority order) and the ones that failed to load."""
    global _cache
    if _cache is not None and not refresh:
        return _cache
    targets: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        targets.setdefault(ep.name, ep.value)
    for name, target in BUILTIN_READERS.items():
        targets.setdefault(name, target)
    readers: list[Reader] = []
    failures: list[ReaderLoadFailure] = []
    for name, target in targets.items():
        try:
            cls = _load(target)
            reader = cls()  # type: ignore[operator]
            if not isinstance(reader, Reader):
                raise TypeError(f"{target} does not implement the Reader interface")
            readers.append(reader)
        except Exception as exc:  # a broken plugin must not take the product down
            log.debug("reader %s failed to load", name, exc_info=True)
            failures.append(ReaderLoadFailure(name, target, f"{type(exc).__name__}: {exc}"))
    # Specific readers first (folders, recordings), the generic video reader last.
    readers.sort(key=lambda r: (r.name == "video", r.name))
    _cache = (readers, failures)
    return _cache


def reader_for(path: Path) -> Reader:
    """Pick the reader for ``path``.

    Raises:
        MediaError: no reader claims the path.
    """
    readers, _ = available_readers()
    for reader in readers:
        try:
            if reader.can_open(path):
                return reader
        except OSError:
            continue
    raise MediaError("no reader supports this kind of file", path=path)


def is_candidate(path: Path) -> bool:
    """True when some reader claims ``path`` (used when walking folders)."""
    try:
        reader_for(path)
    except MediaError:
        return False
    return True
