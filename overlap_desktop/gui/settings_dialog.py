"""Settings: each value with where it comes from, saved to the user's ``overlap.toml``.

The provenance shown is ``api.load_config(...).source(key)``, exactly what
``overlap config`` prints, so the CLI and the window never disagree about which
file or variable is in charge.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.api import user_config_file
from overlap_desktop.gui.common import show_error
from overlap_desktop.gui.state import AppState

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["EDITABLE", "SettingsDialog", "write_user_config"]

#: Keys the dialog edits, with the label a non-specialist reads.
EDITABLE: tuple[tuple[str, str], ...] = (
    ("index.path", "Library folder (fingerprints)"),
    ("index.preset", "Detection of cropped copies"),
    ("index.crop_edges", "Also catch copies trimmed at the"),
    ("index.fps", "Fingerprints per second (when reading footage)"),
    ("match.floor_seconds", "Shortest match that counts"),
    ("index.threads", "Decoding threads"),
)

PRESET_WORDS = {"fast": "Standard (fastest, smallest library)",
                "balanced": "More crops (bigger library)",
                "thorough": "Most crops (biggest library, slowest)"}
SIDES = ("top", "bottom", "left", "right")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(str(v), ensure_ascii=False)


def write_user_config(values: dict[str, Any], path: Path | None = None) -> Path:
    """Merge ``values`` (dotted keys) into the user's ``overlap.toml`` and write it atomically.

    Keys already in the file and not in ``values`` are kept; a value of ``None``
    removes the key (falls back to the default).

    Args:
        values: ``{"index.fps": 4.0, ...}``.
        path: The file (default: ``paths.user_config_file()``).

    Returns:
        The file written.
    """
    path = Path(path) if path is not None else user_config_file()
    data: dict[str, Any] = {}
    if path.exists():
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)

        def walk(prefix: str, d: dict[str, Any]) -> None:
            for k, v in d.items():
                key = f"{prefix}.{k}" if prefix else k
                if isinstance(v, dict):
                    walk(key, v)
                else:
                    data[key] = v

        walk("", raw)
    for k, v in values.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = list(v) if isinstance(v, tuple) else (str(v) if isinstance(v, Path) else v)
    tables: dict[str, dict[str, Any]] = {}
    for key, v in sorted(data.items()):
        table, _, name = key.rpartition(".")
        tables.setdefault(table, {})[name] = v
    lines = ["# overlap settings (written by overlap desktop; `overlap config` shows what is in effect)"]
    for table, entries in tables.items():
        lines.append("")
        if table:
            lines.append(f"[{table}]")
        for name, v in entries.items():
            lines.append(f"{name} = {_toml_value(v)}")
    # Atomic, and a full disk or a file-size limit is a plain error naming the file (no .tmp left).
    api.atomic_write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"), error_type=api.ConfigError,
                           open_message="cannot save the settings", write_message="cannot save the settings",
                           make_parents=True)
    return path


def _source_words(source: str) -> str:
    if source == "default":
        return "built-in default"
    if source == "environment":
        return "set by an environment variable (overrides this dialog)"
    if source == "command line":
        return "set on the command line (overrides this dialog)"
    if source.startswith("./overlap.toml"):
        return "set by overlap.toml in the current folder (overrides this dialog)"
    if source.startswith("user config"):
        return "your saved setting"
    return source


class SettingsDialog(QDialog):
    """Edit the settings a user is likely to change.

    Saving writes only values that differ from what is currently in effect, so an
    untouched default stays a default.
    """

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.state = state
        self.saved_to: Path | None = None
        try:
            self.config = api.load_config(state.overrides)
        except Exception as exc:  # show the problem but still allow fixing the user file
            show_error(parent, "Your settings have a problem", exc)
            self.config = api.load_config(state.overrides, user_file=Path(os.devnull))
        lay = QVBoxLayout(self)
        intro = QLabel("Changes are saved to your settings file and used by this app and by the overlap "
                       "command alike. A setting marked \"overrides this dialog\" is controlled elsewhere.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        form = QFormLayout()
        self.sources: dict[str, QLabel] = {}
        self.editors: dict[str, QWidget] = {}
        c = self.config
        self._build_editors()
        for key, label in EDITABLE:
            src = QLabel(_source_words(c.source(key)))
            src.setToolTip(c.source(key))
            src.setEnabled(False)  # secondary text
            src.setAccessibleName(f"Where {label.lower()} comes from")
            self.sources[key] = src
            box = QVBoxLayout()
            box.setSpacing(1)
            box.addWidget(self.editors[key])
            box.addWidget(src)
            w = QWidget()
            w.setLayout(box)
            box.setContentsMargins(0, 0, 0, 4)
            form.addRow(label + ":", w)
        lay.addLayout(form)
        self.file_label = QLabel(f"Settings file: {user_config_file()}")
        self.file_label.setWordWrap(True)
        lay.addWidget(self.file_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.resize(620, self.sizeHint().height())

    def _build_editors(self) -> None:
        """One editor per setting in EDITABLE, filled with the values in effect."""
        c = self.config
        self.path_edit = QLineEdit(str(c["index.path"]))
        self.path_edit.setAccessibleName("Library folder")
        browse = QPushButton("Browse…")
        browse.setAccessibleName("Choose the library folder")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        holder = QWidget()
        holder.setLayout(row)
        row.setContentsMargins(0, 0, 0, 0)
        self.editors["index.path"] = holder

        self.preset = QComboBox()
        self.preset.setAccessibleName("Detection of cropped copies")
        for key, words in PRESET_WORDS.items():
            self.preset.addItem(words, key)
        self.preset.setCurrentIndex(max(0, self.preset.findData(c["index.preset"])))
        self.editors["index.preset"] = self.preset

        edges = QWidget()
        el = QHBoxLayout(edges)
        el.setContentsMargins(0, 0, 0, 0)
        self.edge_boxes: dict[str, QCheckBox] = {}
        for side in SIDES:
            cb = QCheckBox(side)
            cb.setAccessibleName(f"Catch copies with a strip cut off the {side}")
            cb.setToolTip(f"Also recognise copies whose {side} strip (e.g. a logo or overlay) was cut "
                          "off. Makes the library bigger; applies to footage indexed from now on.")
            cb.setChecked(side in tuple(c["index.crop_edges"] or ()))
            el.addWidget(cb)
            self.edge_boxes[side] = cb
        el.addStretch(1)
        self.editors["index.crop_edges"] = edges

        self.fps = QDoubleSpinBox()
        self.fps.setAccessibleName("Fingerprints per second")
        self.fps.setRange(0.25, 30.0)
        self.fps.setDecimals(2)
        self.fps.setSingleStep(0.5)
        self.fps.setValue(float(c["index.fps"]))
        self.fps.setSuffix(" per second")
        self.fps.setToolTip("How many frames per second of footage are fingerprinted when it is read. Below 4 "
                            "some trimmed or re-timed copies are missed. A manifest for a buyer keeps fewer "
                            "of them (1 per second by default: \u201cFingerprints kept in the manifest\u201d in "
                            "the vendor wizard).")
        self.editors["index.fps"] = self.fps

        self.floor = QDoubleSpinBox()
        self.floor.setAccessibleName("Shortest match that counts")
        self.floor.setRange(0.0, 3600.0)
        self.floor.setDecimals(1)
        self.floor.setValue(float(c["match.floor_seconds"]))
        self.floor.setSuffix(" s")
        self.floor.setToolTip("Matches shorter than this are listed as evidence but not counted "
                              "(the evidence floor).")
        self.editors["match.floor_seconds"] = self.floor

        self.threads = QSpinBox()
        self.threads.setAccessibleName("Decoding threads")
        self.threads.setRange(0, api.MAX_THREADS)  # the config refuses more
        self.threads.setSpecialValueText("automatic")
        self.threads.setValue(int(c["index.threads"]))
        self.editors["index.threads"] = self.threads

    def _browse(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Folder for the library's fingerprints",
                                             self.path_edit.text())
        if d:
            self.path_edit.setText(d)

    def values(self) -> dict[str, Any]:
        """The values currently in the editors, parsed like the config parses them."""
        return {
            "index.path": Path(os.path.expanduser(self.path_edit.text().strip())),
            "index.preset": self.preset.currentData(),
            "index.crop_edges": tuple(s for s in SIDES if self.edge_boxes[s].isChecked()),
            "index.fps": float(self.fps.value()),
            "match.floor_seconds": float(self.floor.value()),
            "index.threads": int(self.threads.value()),
        }

    def changed(self) -> dict[str, Any]:
        """Values that differ from those in effect when the dialog opened."""
        out: dict[str, Any] = {}
        for k, v in self.values().items():
            cur = self.config[k]
            if k == "index.crop_edges":
                cur = tuple(cur or ())
            if k == "index.path":
                cur = Path(cur)
            if isinstance(v, float) and isinstance(cur, (int, float)):
                if abs(v - float(cur)) < 1e-9:
                    continue
            elif v == cur:
                continue
            out[k] = v
        return out

    def save(self) -> None:
        """Write changed values to the user file, reload the configuration and close."""
        changes = self.changed()
        try:
            if changes:
                self.saved_to = write_user_config(changes)
            self.state.reload()
            self.state.config()  # re-parse now so a bad value is reported here, not later
        except Exception as exc:
            show_error(self, "The settings could not be saved", exc)
            return
        self.accept()
