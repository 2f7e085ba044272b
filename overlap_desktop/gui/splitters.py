"""The results page's splitters: the plot's default share of the height, and the user's choice kept.

At 1366x768 the offer's facts and the headline take half the window; what is left was split so the
match plot got about 80 px. :class:`ResultsSplit` gives the plot at least a third of the results'
height by default (the file table and the stretches table keep their few rows), and remembers
where the user drags the handles (``QSettings``), for the next report and the next start.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QSplitter

__all__ = ["PLOT_SHARE", "ResultsSplit"]

#: The plot's least share of the results' height by default.
PLOT_SHARE = 1.0 / 3.0
_KEY = "results/splitters"


class ResultsSplit:
    """The two splitters of the results page: files above the rest, the plot above its stretches.

    Args:
        outer: Vertical: the file table, then the plot side.
        inner: Vertical: the plot (with its title and legend), then the stretches table.
    """

    def __init__(self, outer: QSplitter, inner: QSplitter) -> None:
        self.outer, self.inner = outer, inner
        self.restored = self._restore()
        self._placing = False
        for s in (outer, inner):
            s.splitterMoved.connect(self._moved)

    def _restore(self) -> bool:
        raw = QSettings().value(_KEY)
        if not isinstance(raw, (list, tuple)) or len(raw) != 2:
            return False
        return all(isinstance(r, (QByteArray, bytes)) and s.restoreState(QByteArray(r))
                   for s, r in zip((self.outer, self.inner), raw, strict=True))

    def _moved(self, _pos: int, _index: int) -> None:
        if self._placing:
            return
        self.restored = True  # the user's choice from now on
        QSettings().setValue(_KEY, [self.outer.saveState(), self.inner.saveState()])

    def place(self, total: int, above_plot: int, below_min: int, files_wanted: int) -> None:
        """Default sizes for a results area ``total`` px high (unless the user chose them).

        First the plot's third of ``total``, then the file table up to ``files_wanted`` (never below
        its least height), the stretches table its least; what is left goes two thirds to the plot,
        a third to the stretches.

        Args:
            total: Height of both splitters' space (the file table and everything below it).
            above_plot: Height on the plot side that is not the plot (its title, legend, margins).
            below_min: The stretches table's least height.
            files_wanted: The file table's height when there is room (a few rows).
        """
        if self.restored or total <= 0:
            return
        files = self.outer.widget(0)
        if files is None:
            return
        files_min = max(files.minimumSizeHint().height(), files.minimumHeight())
        handles = self.outer.handleWidth() + self.inner.handleWidth()
        plot = int(total * PLOT_SHARE)
        room = total - handles - plot - above_plot - below_min
        files_h = max(files_min, min(files_wanted, room))
        extra = max(0, room - files_h)
        plot_side = plot + above_plot + (2 * extra) // 3
        below = total - handles - files_h - plot_side
        self._placing = True
        try:
            self.outer.setSizes([files_h, plot_side + below + self.inner.handleWidth()])
            self.inner.setSizes([plot_side, max(below, below_min)])
        finally:
            self._placing = False
