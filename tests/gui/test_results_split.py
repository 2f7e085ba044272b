"""The results page at laptop size: the plot gets at least a third of the height by default, and the
splitter handles stay where the user drags them (for the next report and the next start)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from overlap_desktop.gui.results import ResultsView

LEFT = Qt.MouseButton.LeftButton


@pytest.fixture(scope="module")
def short_report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests import verdict_suites as vs

    return vs.run(vs.short(), tmp_path_factory.mktemp("short-suite-split"))


def _view(qtbot: Any, report: Any, height: int) -> ResultsView:
    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1340, height)
    view.show()
    qtbot.waitExposed(view)
    view.set_report(report)
    view.file_table.selectRow(0)
    qtbot.waitUntil(lambda: view.split.height() > 0 and view.plot.height() > 0, timeout=5_000)
    return view


def _drag(handle: Any, dy: int) -> None:
    """Press on a splitter handle, move with the button held, release (real mouse events)."""
    start = handle.rect().center()
    for kind, at, buttons in ((QEvent.Type.MouseButtonPress, start, LEFT),
                              (QEvent.Type.MouseMove, start + QPoint(0, dy // 2), LEFT),
                              (QEvent.Type.MouseMove, start + QPoint(0, dy), LEFT),
                              (QEvent.Type.MouseButtonRelease, start + QPoint(0, dy), Qt.MouseButton.NoButton)):
        local = QPointF(at)
        event = QMouseEvent(kind, local, QPointF(handle.mapToGlobal(at)), LEFT, buttons,
                            Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(handle, event)


@pytest.mark.parametrize("height", [480, 560, 700])
def test_the_plot_gets_a_third_of_the_height(qtbot: Any, short_report: Any, height: int) -> None:
    """480: what is left of a maximised 1366x768 window under the offer's facts and the headline."""
    view = _view(qtbot, short_report, height)
    assert view.plot.height() >= view.split.height() / 3 - 2, (view.plot.height(), view.split.height())
    assert view.file_table.height() >= view.file_table.minimumHeight()
    assert view.seg_table.height() >= view.seg_table.minimumHeight()


def test_the_splitters_are_remembered(qtbot: Any, short_report: Any) -> None:
    view = _view(qtbot, short_report, 600)
    before = view.split.sizes()
    _drag(view.split.handle(1), 60)
    moved = view.split.sizes()
    assert moved[0] > before[0] + 30  # the file table grew by the drag
    _drag(view.plot_split.handle(1), -20)
    inner = view.plot_split.sizes()
    again = _view(qtbot, short_report, 600)
    assert again.split.sizes() == moved and again.plot_split.sizes() == inner
