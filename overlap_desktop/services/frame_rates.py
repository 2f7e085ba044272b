"""Robot datasets that store no frame rate: which items need one, the usual rate of their
format, and indexing with a rate per folder.

ALOHA episodes, RLDS datasets and zarr replay buffers store no rate; a guessed one would read as
a speed change, so the readers refuse such an item (``index.frame_rate`` /
``overlap index --frame-rate`` gives one rate for a whole run). The app asks per folder instead:
:func:`frame_rate_needs` groups the refused items of a run by the folder they were added with and
names the rate their format usually has; :func:`index_with_frame_rates` runs the indexer once per
rate, each folder with its own.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overlap_desktop.config import Config, load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.run import IndexSummary
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.ingest.readers.arraydata import NO_FRAME_RATE
from overlap_desktop.errors import OverlapError

__all__ = ["USUAL_FRAME_RATES", "FrameRateNeed", "frame_rate_needs", "index_with_frame_rates", "needs_frame_rate"]

#: Reader -> (what the items are called, the rate to suggest, where that rate comes from).
USUAL_FRAME_RATES: dict[str, tuple[str, float, str]] = {
    "aloha": ("ALOHA HDF5 episode", 50.0, "ALOHA records at 50 Hz"),
    "robomimic": ("robomimic HDF5 file", 20.0, "robosuite runs at 20 Hz"),
    "zarr": ("zarr replay buffer", 10.0, "push-T records at 10 Hz, UMI at 60 Hz: check yours"),
    "rlds": ("RLDS dataset", 10.0, "many RLDS datasets record at 10 Hz (Open X-Embodiment): check yours"),
}
#: Suggested for a format not listed above.
DEFAULT_SUGGESTION = ("robot dataset item", 30.0, "no usual rate known for this format: check yours")


@dataclass(frozen=True)
class FrameRateNeed:
    """Items of one folder that were left out because no frame rate is known.

    Attributes:
        folder: The folder they were added with (or their own folder).
        files: Their paths.
        kind: What they are, singular (``"ALOHA HDF5 episode"``).
        usual_hz: The rate their format usually has (the suggestion).
        usual_words: Where that rate comes from, for the user.
    """

    folder: str
    files: tuple[str, ...]
    kind: str
    usual_hz: float
    usual_words: str


def needs_frame_rate(reason: str) -> bool:
    """Whether an item's error says it was refused for want of a frame rate."""
    return NO_FRAME_RATE in reason


def _home_folder(path: str, folders: Sequence[str]) -> str:
    """The folder of ``folders`` holding ``path`` (the deepest), else the path's own folder."""
    p = Path(path)
    best: Path | None = None
    for f in folders:
        fp = Path(f)
        if (p == fp or fp in p.parents) and (best is None or len(fp.parts) > len(best.parts)):
            best = fp
    if best is not None:
        return str(best)
    return str(p if p.is_dir() else p.parent)


def _kind_of(path: str) -> tuple[str, float, str]:
    try:
        name = reader_for(Path(path)).name
    except (OverlapError, OSError):
        return DEFAULT_SUGGESTION
    return USUAL_FRAME_RATES.get(name, DEFAULT_SUGGESTION)


def frame_rate_needs(failed: Iterable[tuple[str, str]], folders: Sequence[str]) -> list[FrameRateNeed]:
    """Group a run's items refused for want of a frame rate by folder.

    Args:
        failed: ``(path, reason)`` of the items a run could not fingerprint (``IndexSummary.failed``).
        folders: The folders the run was given (the items are grouped under them).

    Returns:
        One :class:`FrameRateNeed` per folder, in the order first met.
    """
    groups: dict[str, list[str]] = {}
    for path, reason in failed:
        if needs_frame_rate(str(reason)):
            groups.setdefault(_home_folder(str(path), folders), []).append(str(path))
    out = []
    for folder, files in groups.items():
        kind, hz, words = _kind_of(files[0])
        out.append(FrameRateNeed(folder, tuple(files), kind, hz, words))
    return out


def _rate_for(path: str, rates: Mapping[str, float]) -> float | None:
    """The rate of the deepest folder in ``rates`` holding ``path`` (or of ``path`` itself)."""
    p = Path(path)
    best: tuple[int, float] | None = None
    for folder, hz in rates.items():
        fp = Path(folder)
        if (p == fp or fp in p.parents) and (best is None or len(fp.parts) > best[0]):
            best = (len(fp.parts), float(hz))
    return None if best is None else best[1]


def _merged(summaries: Sequence[IndexSummary]) -> IndexSummary:
    """One summary of several runs: counts and lists added, flags or-ed, the rest the last run's."""
    out = summaries[-1]
    values: dict[str, Any] = {}
    for f in dataclasses.fields(IndexSummary):
        vals = [getattr(s, f.name) for s in summaries]
        if isinstance(vals[-1], bool):
            values[f.name] = any(vals)
        elif isinstance(vals[-1], (int, float)):
            values[f.name] = sum(vals)
        elif isinstance(vals[-1], list):
            values[f.name] = [x for v in vals for x in v]
        else:
            values[f.name] = getattr(out, f.name)
    return IndexSummary(**values)


def index_with_frame_rates(paths: Sequence[str | os.PathLike[str]], rates: Mapping[str, float], *,
                           index: Path | str | None = None, config: Config | None = None,
                           forget_missing: bool = False, progress: Any = None,
                           cancel: Any = None) -> IndexSummary:
    """:func:`~overlap_desktop.core.index.indexer.index_paths` with a frame rate per folder.

    Args:
        paths: Files and folders, as for ``index_paths``.
        rates: Folder -> frame rate (Hz) for its robot datasets that store none; a path under
            no folder of ``rates`` is read with ``config``'s ``index.frame_rate``. A rate a file
            stores itself always wins.
        index, config, forget_missing, progress, cancel: As for ``index_paths``.

    Returns:
        One summary of the run (a run per rate, added up).
    """
    config = load_config() if config is None else config
    groups: dict[float | None, list[Path]] = {}
    for p in paths:
        groups.setdefault(_rate_for(str(p), rates), []).append(Path(p))
    summaries = []
    for hz, group in groups.items():
        cfg = config if hz is None else config.with_value("index.frame_rate", hz, "a rate given in the app")
        summaries.append(index_paths(group, index=index, config=cfg, forget_missing=forget_missing,
                                     progress=progress, cancel=cancel))
    if not summaries:
        return index_paths([], index=index, config=config, progress=progress, cancel=cancel)
    return summaries[0] if len(summaries) == 1 else _merged(summaries)
