"""The settings dialog: provenance shown per value, saved to the user's overlap.toml."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from overlap_desktop import api
from overlap_desktop.gui.settings_dialog import SettingsDialog, write_user_config
from overlap_desktop.gui.state import AppState
from overlap_desktop.paths import user_config_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_sources_are_shown_and_saving_writes_the_user_file(qtbot: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OVERLAP_INDEX_THREADS", "3")
    state = AppState()
    dlg = SettingsDialog(state)
    qtbot.addWidget(dlg)
    assert dlg.sources["index.fps"].text() == "built-in default"
    assert "environment variable" in dlg.sources["index.threads"].text()
    assert dlg.threads.value() == 3
    assert dlg.changed() == {}

    changes: list[int] = []
    state.config_changed.connect(lambda: changes.append(1))
    dlg.fps.setValue(6.0)
    dlg.floor.setValue(15.0)
    dlg.edge_boxes["bottom"].setChecked(True)
    dlg.preset.setCurrentIndex(dlg.preset.findData("balanced"))
    dlg.save()
    assert dlg.result() == SettingsDialog.DialogCode.Accepted and changes == [1]
    data = tomllib.loads(user_config_file().read_text())
    assert data["index"]["fps"] == 6.0 and data["index"]["crop_edges"] == ["bottom"]
    assert data["match"]["floor_seconds"] == 15.0 and data["index"]["preset"] == "balanced"
    assert "threads" not in data["index"]  # untouched values stay where they come from
    cfg = api.load_config()
    assert cfg["index.fps"] == 6.0 and cfg.source("index.fps").startswith("user config")

    again = SettingsDialog(state)
    qtbot.addWidget(again)
    assert again.sources["index.fps"].text() == "your saved setting"


def test_write_user_config_keeps_other_keys_and_removes_none(tmp_path: Path) -> None:
    f = tmp_path / "overlap.toml"
    f.write_text('[export]\nanonymize_paths = true\n[index]\nfps = 2.0\n')
    write_user_config({"index.fps": None, "index.path": tmp_path / 'we"ird'}, f)
    data = tomllib.loads(f.read_text())
    assert data == {"export": {"anonymize_paths": True}, "index": {"path": str(tmp_path / 'we"ird')}}
