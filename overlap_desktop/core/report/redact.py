"""A copy of a report without the lab's folder names, for reports that leave the lab.

Buyers forward reports while negotiating; a report names the lab's own files with their
absolute paths (``D:\\robots\\customer-x\\kitchen\\a.mp4``), which tells a seller how the lab
organises its data and for whom. :func:`hide_folder_names` keeps every figure and every
file *name* (so the report can still be read and checked) and drops the folders in front
of them: owned files become ``a.mp4``, absolute paths inside settings and facts (the
library folder, the manifest's location, evaluation files) become ``…/a.mp4``. Offered
file names come from the seller's manifest and are kept as they are.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from overlap_desktop.core.report.model import FileResult, Report
from overlap_desktop.core.types import Segment

__all__ = ["FOLDERS_HIDDEN_SETTING", "hide_folder_names"]

#: ``Report.settings`` key recording that folder names were taken out (readers see it in the report).
FOLDERS_HIDDEN_SETTING = "folder_names_hidden"

#: The folders of an absolute path inside any text (``/a/b/``, ``C:\\a\\b\\``, ``\\\\server\\share\\``): a
#: separator that starts a word, then at least one folder. "n/a" and "0.5/1" are not paths.
_FOLDERS = re.compile(r"(?<![\w.])(?:[A-Za-z]:[\\/]|\\\\|/)(?:[^\s\\/\"'<>|]+[\\/])+")


def _name(path: str) -> str:
    """The last component of a path written with either separator."""
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1] or path


def _text(value: str) -> str:
    return _FOLDERS.sub("…/", value) if ("/" in value or "\\" in value) else value


def _scrub(value: Any) -> Any:
    """Folder names out of every string of a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {(_text(k) if isinstance(k, str) else k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    return value


def _owned(seg: Segment) -> Segment:
    return dataclasses.replace(seg, corpus_file=_name(seg.corpus_file))


def _file(f: FileResult) -> FileResult:
    out = copy.copy(f)
    out.segments = [_owned(s) for s in f.segments]
    out.below_floor = [_owned(s) for s in f.below_floor]
    out.weak = [_owned(s) for s in f.weak]
    out.near_frames = [dataclasses.replace(n, corpus_file=_name(n.corpus_file)) for n in f.near_frames]
    out.repeats = list(f.repeats)  # the other side is offered footage: the seller's own names
    out.episodes = [_scrub(e) for e in f.episodes]
    return out


def hide_folder_names(report: Report) -> Report:
    """A copy of ``report`` that names the lab's files without their folders.

    Args:
        report: Any report (``compare``, ``self-dedupe``, ``compare-offers``, ``audit``).

    Returns:
        A new report with the same figures; ``settings[FOLDERS_HIDDEN_SETTING]`` is True. The
        original is not changed (the app keeps showing full paths on screen).
    """
    out = copy.copy(report)
    out.files = [_file(f) for f in report.files]
    out.manifest = _scrub(dict(report.manifest))
    settings = _scrub(dict(report.settings))
    settings[FOLDERS_HIDDEN_SETTING] = True
    out.settings = settings
    out.text_overlap = _scrub(report.text_overlap) if report.text_overlap is not None else None
    return out
