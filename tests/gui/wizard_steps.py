"""Steps of the vendor wizard that several GUI tests walk through the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from overlap_desktop.gui import export_wizard as ew


def fingerprinted_wizard(qtbot: Any, state: Any, folder: Path) -> ew.ExportWizard:
    """A shown vendor wizard with ``folder`` added (its footage check waited for), moved on to the
    fingerprint page and waited until that page is complete."""
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    with qtbot.waitSignal(wiz.folders_page.footage_checked, timeout=60_000):
        wiz.folders_page.add_folder(folder)
    wiz.next()
    qtbot.waitUntil(wiz.fingerprint.isComplete, timeout=120_000)
    return wiz
