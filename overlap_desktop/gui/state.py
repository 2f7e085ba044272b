"""Application state shared by the pages: effective configuration, recent files.

Configuration is always resolved through ``api.load_config`` (the same provenance
the CLI prints); the GUI adds at most a command-line override for the index
folder. UI state (recent manifests, geometry, library folders) lives in
``QSettings``, whose organisation/application names are set by :mod:`.app` so
tests can redirect them to a temporary ini file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal

from overlap_desktop import api

__all__ = ["AppState", "MAX_RECENT"]

MAX_RECENT = 8


def _as_list(value: Any) -> list[str]:
    # QSettings' ini backend returns a plain str for one-element lists and None for empty ones.
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


class AppState(QObject):
    """What every page needs to know; emits when it changes.

    Args:
        overrides: Settings given on the command line (``{"index.path": ...}``).
    """

    config_changed = Signal()
    recent_changed = Signal()

    def __init__(self, overrides: dict[str, Any] | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.overrides: dict[str, Any] = dict(overrides or {})
        self._config: api.Config | None = None

    # ------------------------------------------------------------------ config
    def config(self) -> api.Config:
        """The resolved :class:`~overlap_desktop.api.Config` (cached until :meth:`reload`).

        Raises:
            ConfigError: a setting does not parse (the message names key and source).
        """
        if self._config is None:
            self._config = api.load_config(self.overrides)
        return self._config

    def reload(self) -> None:
        """Forget the cached configuration (after the settings dialog saved) and notify."""
        self._config = None
        self.config_changed.emit()

    @property
    def index_path(self) -> Path:
        return Path(self.config()["index.path"])

    # ------------------------------------------------------------------ QSettings helpers
    @staticmethod
    def settings() -> QSettings:
        return QSettings()

    def recent_manifests(self) -> list[str]:
        return _as_list(self.settings().value("recent/manifests"))

    def add_recent(self, path: str | Path) -> None:
        p = str(Path(path).resolve())
        items = [p] + [x for x in self.recent_manifests() if x != p]
        self.settings().setValue("recent/manifests", items[:MAX_RECENT])
        self.recent_changed.emit()

    def clear_recent(self) -> None:
        self.settings().remove("recent/manifests")
        self.recent_changed.emit()

    def library_folders(self) -> list[str]:
        """Folders the user added to the library (re-scanned by "Re-scan")."""
        return _as_list(self.settings().value("library/folders"))

    def add_library_folders(self, folders: list[str]) -> None:
        items = self.library_folders()
        for f in folders:
            f = str(Path(f).resolve())
            if f not in items:
                items.append(f)
        self.settings().setValue("library/folders", items)

    def remove_library_folder(self, folder: str) -> None:
        items = [x for x in self.library_folders() if x != folder]
        self.settings().setValue("library/folders", items)

    def folder_frame_rates(self) -> dict[str, float]:
        """Folder -> the frame rate given for its robot datasets that store none."""
        import json

        raw = self.settings().value("frameRates/byFolder")
        try:
            data = json.loads(str(raw)) if raw else {}
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float)) and v > 0}

    def set_folder_frame_rates(self, rates: dict[str, float]) -> None:
        """Remember ``rates`` (folder -> Hz) beside those given before."""
        import json

        kept = {**self.folder_frame_rates(), **{str(k): float(v) for k, v in rates.items()}}
        self.settings().setValue("frameRates/byFolder", json.dumps(kept, sort_keys=True))

    def unfinished_job(self) -> list[str]:
        """Paths of an indexing job that did not finish (crash, quit, cancel)."""
        return _as_list(self.settings().value("library/unfinished"))

    def set_unfinished_job(self, paths: list[str] | None) -> None:
        s = self.settings()
        if paths:
            s.setValue("library/unfinished", [str(p) for p in paths])
        else:
            s.remove("library/unfinished")
        s.sync()

    def _count(self, key: str) -> int | None:
        v = self.settings().value(key)
        try:
            return int(v) if v not in (None, "") else None
        except (TypeError, ValueError):
            return None

    def _set_count(self, key: str, n: int | None) -> None:
        s = self.settings()
        if n is None:
            s.remove(key)
        else:
            s.setValue(key, int(n))

    def unfinished_total(self) -> int | None:
        """How many files the unfinished job's scan found (``None``: not known)."""
        return self._count("library/unfinished_total")

    def set_unfinished_total(self, n: int | None) -> None:
        self._set_count("library/unfinished_total", n or None)

    def unfinished_left(self) -> int | None:
        """Files the stopped job had not done yet, as the job itself counted them (``None``: not known)."""
        return self._count("library/unfinished_left")

    def set_unfinished_left(self, n: int | None) -> None:
        self._set_count("library/unfinished_left", n)

    def resume_quiet(self) -> bool:
        """The unfinished job was stopped on purpose (Cancel) or the user said No to finishing
        it: start-up does not ask again (the library page's banner still offers to resume)."""
        return str(self.settings().value("library/resume_quiet", "")).lower() in ("true", "1")

    def set_resume_quiet(self, quiet: bool) -> None:
        s = self.settings()
        if quiet:
            s.setValue("library/resume_quiet", True)
        else:
            s.remove("library/resume_quiet")
        s.sync()
