"""The vendor's duplicate check, kept beside the offer's fingerprints and reused while nothing changed.

Checking an offer against itself takes a while (about 25 s for a few hours of footage, minutes
for more); running the vendor wizard again on the same, unchanged files repeated it. The answer
is saved in the offer's workspace with a key made of what it depends on: the files under the
chosen folders as the index holds them (path, size, date, checksum, status), the folders, and
the settings that can change a result. The same key next time: the saved report is read back.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from overlap_desktop.config import SETTINGS, Config, load_config
from overlap_desktop.core.index.status import library_files
from overlap_desktop.core.match.compare import self_dedupe
from overlap_desktop.core.report.json_io import load_report_json, write_report_json
from overlap_desktop.core.report.model import Report
from overlap_desktop.errors import OverlapError

__all__ = ["CACHE_NAME", "CACHE_VERSION", "self_dedupe_reused"]

#: The saved report and its key, in the workspace.
CACHE_NAME = "self-dedupe-cache.json"
KEY_NAME = "self-dedupe-cache.key"
#: Bumped when what the key covers changes (an older key then never matches).
CACHE_VERSION = 1


def _key(index_path: Path, folders: Sequence[str], config: Config) -> str:
    files = library_files(index_path, under=list(folders), config=config)
    rows = sorted((f.path, f.size, f.mtime_ns, f.sha256 or "", f.status, tuple(f.streams)) for f in files)
    verdict = {k: repr(config[k]) for k, s in SETTINGS.items() if s.verdict}
    from overlap_desktop import __version__

    blob = json.dumps({"version": CACHE_VERSION, "tool": __version__, "files": rows,
                       "folders": sorted(os.path.abspath(f) for f in folders), "settings": verdict},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def self_dedupe_reused(index_path: Path, folders: Sequence[str], config: Config | None = None, *,
                       progress: Any = None, cancel: Any = None) -> tuple[Report, bool]:
    """``self_dedupe`` of the files under ``folders``, or its saved answer when nothing changed.

    Returns:
        ``(report, reused)``: ``reused`` is True when the saved answer was read back.
    """
    config = load_config() if config is None else config
    index_path = Path(index_path)
    key = _key(index_path, folders, config)
    cache, key_file = index_path / CACHE_NAME, index_path / KEY_NAME
    try:
        if key_file.read_text(encoding="utf-8").strip() == key:
            return load_report_json(cache), True
    except (OSError, OverlapError, ValueError):
        pass  # none saved, or unreadable: checked again
    report = self_dedupe(index_path, config=config, paths=[Path(f) for f in folders], progress=progress,
                         cancel=cancel)
    try:
        key_file.unlink(missing_ok=True)  # never a key beside a half-written report
        write_report_json(report, cache)
        key_file.write_text(key + "\n", encoding="utf-8")
    except OSError:
        pass  # not saved: the next run checks again
    return report, False
