"""Hostile strings from a seller's manifest are shown as plain text in the app.

A QLabel's default text format is ``Qt.AutoText``: text that *looks like* HTML
(``<b>``, ``<img src=...>``, ``<a href=...>``) would be rendered as rich text. Every
label that shows a manifest string must be ``Qt.PlainText`` so the markup shows as typed,
and bidirectional overrides are neutralised by ``safe_text``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.gui.screen import ScreenOfferPage

HOSTILE = '<b>bold</b><img src="file:///etc/passwd"><a href="https://evil.example">x</a>\u202egpj.exe'


def test_manifest_label_and_creator_are_plain_text(qtbot: Any, state: Any, tmp_path: Path) -> None:
    page = ScreenOfferPage(state)
    qtbot.addWidget(page)
    page.manifest_path = tmp_path / "offer.ovlm"
    summary = api.OfferCheck({"label": HOSTILE, "creator": HOSTILE, "files": 1, "root": "ab" * 32}, None,
                             "the library is empty")
    page._on_inspected(summary, remember=False)
    for key in ("label", "made"):
        label = page.fields[key]
        assert label.textFormat() == Qt.TextFormat.PlainText, key
        # The markup is shown as typed, the right-to-left override as a visible marker.
        assert "<b>bold</b>" in label.text() and "<img" in label.text(), label.text()
        assert "\u202e" not in label.text() and "[U+202E]" in label.text()
    # The results view shows offered and owned file names in labels too.
    from overlap_desktop.gui.results import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    for label in (view.plot_title, view.preview_caption):
        assert label.textFormat() == Qt.TextFormat.PlainText, label.accessibleName() or label.text()[:40]


def test_verify_wizard_labels_are_plain_text(qtbot: Any) -> None:
    from PySide6.QtWidgets import QLabel

    from overlap_desktop.gui import verify_wizard

    pages = [obj for obj in vars(verify_wizard).values() if isinstance(obj, type) and hasattr(obj, "isComplete")]
    found = 0
    for cls in pages:
        try:
            page = cls()
        except TypeError:
            continue
        qtbot.addWidget(page)
        for attr in ("note", "info"):
            label = getattr(page, attr, None)
            if isinstance(label, QLabel):
                assert label.textFormat() == Qt.TextFormat.PlainText, f"{cls.__name__}.{attr}"
                found += 1
    assert found >= 1


def test_library_progress_label_is_plain_text(qtbot: Any, state: Any) -> None:
    from overlap_desktop.gui.library import LibraryPage

    page = LibraryPage(state)
    qtbot.addWidget(page)
    assert page.file_label.textFormat() == Qt.TextFormat.PlainText  # shows local file names
