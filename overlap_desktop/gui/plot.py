"""The match plot: offered time × owned time for one offered file (pyqtgraph).

Each matched frame pair is a dot; a copy played at normal speed lies on a
45-degree line, a slowed copy on a flatter one, a reversed copy on a falling one.
Fitted segments are drawn as lines over the dots, below-floor evidence dashed and
grey, time that could not be judged shaded.

Imported only when a report is shown, so pyqtgraph does not slow start-up.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QVBoxLayout, QWidget

from overlap_desktop import api

__all__ = ["MatchPlot", "MAX_POINTS"]

#: Dots drawn per file; larger sets are thinned in numpy first (ScatterPlotItem has no downsampling).
MAX_POINTS = 20_000

#: The one colour scale for match distances, shared with the HTML report (defined once in the
#: core, :mod:`overlap_desktop.core.report.scale`; which level a distance falls in is decided there
#: too, by ``api.distance_level_indices``).
_DIST_COLOURS = tuple(level.colour for level in api.DISTANCE_SCALE)
_DIST_WORDS = tuple(level.words for level in api.DISTANCE_SCALE)
#: Colours for "which owned file / transformation" (cycled).
_GROUP_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_BELOW_COLOUR = "#9e9e9e"


def _brushes(colours: tuple[str, ...]) -> list[Any]:
    # Shared brush objects: one per colour, not per point (much faster setData).
    return [pg.mkBrush(QColor(c)) for c in colours]


class MatchPlot(QWidget):
    """Scatter of matched frame pairs with fitted lines, zoom/pan and hover tips.

    Signals:
        point_clicked(object, float, float, float): ``(segment, offered_s, owned_s, distance)``
            of the dot the user clicked.
    """

    point_clicked = Signal(object, float, float, float)

    COLOUR_MODES = ("distance", "group")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Match plot: offered time against owned time")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        pg.setConfigOptions(antialias=True)
        self.widget = pg.PlotWidget()
        self.widget.setAccessibleName("Match plot")
        self.plot = self.widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMenuEnabled(False)
        lay.addWidget(self.widget)
        self._dist_brushes = _brushes(_DIST_COLOURS)
        self._group_brushes = _brushes(_GROUP_COLOURS)
        self._below_brush = pg.mkBrush(QColor(_BELOW_COLOUR))
        self.scatter = pg.ScatterPlotItem(size=6, pen=None, pxMode=True, hoverable=True,
                                          hoverSize=10, tip=self._tip)
        self.scatter.sigClicked.connect(self._on_clicked)
        # Dots above the fitted lines: a line is a summary, the dots are the evidence.
        self.scatter.setZValue(10)
        self.plot.addItem(self.scatter)
        self.lines = pg.PlotDataItem(pen=self._line_pen(), connect="pairs")
        self.below_lines = pg.PlotDataItem(pen=pg.mkPen(_BELOW_COLOUR, width=1,
                                                        style=Qt.PenStyle.DashLine), connect="pairs")
        for item in (self.lines, self.below_lines):
            item.setZValue(0)
            self.plot.addItem(item)
        # Shown instead of empty axes when the file has no match at all.
        self.no_match = pg.TextItem("", anchor=(0.5, 0.5))
        self.no_match.setZValue(20)
        self.plot.addItem(self.no_match, ignoreBounds=True)
        self.no_match.hide()
        self._regions: list[Any] = []
        self.segments: list[tuple[Any, bool]] = []
        self.colour_mode = "distance"
        self._file: Any = None
        self.point_count = 0
        self._apply_palette()

    def _apply_palette(self) -> None:
        """Match the plot to the window's light or dark palette."""
        pal = self.palette()
        fg = pal.text().color()
        self.widget.setBackground(pal.base().color())
        for side, text in (("bottom", "Time in the offered file (s)"),
                           ("left", "Time in your file (s)")):
            ax = self.plot.getAxis(side)
            ax.setPen(fg)
            ax.setTextPen(fg)
            ax.setLabel(text, color=fg.name())
        self.lines.setPen(self._line_pen())
        if hasattr(self, "no_match"):
            self.no_match.setColor(fg)

    def _line_pen(self) -> Any:
        # Thin and half transparent: the line shows the fitted stretch without hiding its dots.
        c = QColor(self.palette().text().color())
        c.setAlpha(110)
        return pg.mkPen(c, width=1)

    def changeEvent(self, event: Any) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    # ------------------------------------------------------------------ data
    def set_file(self, file_result: Any | None) -> None:
        """Show one offered file's matches (``None`` clears the plot)."""
        self._file = file_result
        for r in self._regions:
            self.plot.removeItem(r)
        self._regions = []
        self.no_match.hide()
        if file_result is None:
            self.segments = []
            self.scatter.setData([], [])
            self.lines.setData([], [])
            self.below_lines.setData([], [])
            self.point_count = 0
            return
        # Counted stretches in colour; below-floor and weak evidence grey and dashed (not counted).
        self.segments = ([(s, False) for s in file_result.segments]
                         + [(s, True) for s in file_result.below_floor]
                         + [(s, True) for s in getattr(file_result, "weak", [])])
        self._update_points()
        self._update_lines()
        duration = max(1.0, float(file_result.duration_s or 1.0))
        if not self.segments:
            # Nothing matched: say so on this file's own axes, never the previous file's.
            self.no_match.setText("No match: none of this file matches your footage")
            self.no_match.setPos(duration / 2.0, duration / 2.0)
            self.no_match.show()
            self.plot.setXRange(0, duration, padding=0.02)
            self.plot.setYRange(0, duration, padding=0.02)
        for span in file_result.indeterminate:
            region = pg.LinearRegionItem(values=(span.start_s, span.end_s), movable=False,
                                         brush=pg.mkBrush(128, 128, 128, 50), pen=pg.mkPen(None))
            region.setZValue(-10)
            region.setToolTip(f"Could not be judged ({span.reason or 'static or featureless'}): "
                              f"{api.format_clock(span.start_s)}–{api.format_clock(span.end_s)}")
            self.plot.addItem(region)
            self._regions.append(region)
        self.plot.setXRange(0, duration, padding=0.02)
        if self.segments:
            self.plot.enableAutoRange(axis="y")

    def set_colour_mode(self, mode: str) -> None:
        """``"distance"`` (how close each frame match is) or ``"group"`` (owned file and transformation)."""
        if mode not in self.COLOUR_MODES:
            raise ValueError(mode)
        self.colour_mode = mode
        if self._file is not None:
            self._update_points()

    def _groups(self) -> dict[tuple[str, Any], int]:
        groups: dict[tuple[str, Any], int] = {}
        for s, _below in self.segments:
            groups.setdefault((s.corpus_file, s.variant), len(groups))
        return groups

    def _update_points(self) -> None:
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        ds: list[np.ndarray] = []
        seg_ids: list[np.ndarray] = []
        for i, (s, _below) in enumerate(self.segments):
            pairs = s.pairs
            if pairs is None or len(pairs) == 0:
                # No frame pairs kept: show the segment's end points so it is still clickable.
                pairs = np.array([[s.query_start, s.corpus_start, s.mean_distance],
                                  [s.query_end, s.corpus_end, s.mean_distance]], dtype=np.float64)
            pairs = np.asarray(pairs, dtype=np.float64).reshape(-1, 3)
            xs.append(pairs[:, 0])
            ys.append(pairs[:, 1])
            ds.append(pairs[:, 2])
            seg_ids.append(np.full(len(pairs), i, dtype=np.int64))
        if not xs:
            self.scatter.setData([], [])
            self.point_count = 0
            return
        x, y, d, sid = (np.concatenate(a) for a in (xs, ys, ds, seg_ids))
        if len(x) > MAX_POINTS:
            keep = np.linspace(0, len(x) - 1, MAX_POINTS).astype(np.int64)
            x, y, d, sid = x[keep], y[keep], d[keep], sid[keep]
        below = np.array([self.segments[int(k)][1] for k in sid], dtype=bool)
        if self.colour_mode == "distance":
            brushes = [self._dist_brushes[int(b)] for b in api.distance_level_indices(d)]
        else:
            groups = self._groups()
            gidx = [groups[(self.segments[int(k)][0].corpus_file, self.segments[int(k)][0].variant)]
                    for k in sid]
            brushes = [self._group_brushes[g % len(self._group_brushes)] for g in gidx]
        brushes = [self._below_brush if b else br for b, br in zip(below, brushes)]
        data = [(int(k), float(dd)) for k, dd in zip(sid, d)]
        self.scatter.setData(x=x, y=y, brush=brushes, data=data)
        self.point_count = int(len(x))

    def _update_lines(self) -> None:
        seg_xy: list[float] = []
        seg_yy: list[float] = []
        below_xy: list[float] = []
        below_yy: list[float] = []
        for s, below in self.segments:
            xs, ys = (below_xy, below_yy) if below else (seg_xy, seg_yy)
            xs.extend([s.query_start, s.query_end])
            ys.extend([s.corpus_start, s.corpus_end])
        self.lines.setData(seg_xy, seg_yy, connect="pairs")
        self.below_lines.setData(below_xy, below_yy, connect="pairs")

    def legend_entries(self) -> list[tuple[str, str]]:
        """``(colour, words)`` for the current colouring (shown under the plot by the results view)."""
        if self.colour_mode == "distance":
            out = list(zip(_DIST_COLOURS, _DIST_WORDS))
        else:
            out = []
            for (corpus_file, variant), g in self._groups().items():
                name = api.safe_text(corpus_file.replace("\\", "/").rsplit("/", 1)[-1], max_len=40)
                how = variant.describe() or "unchanged"
                out.append((_GROUP_COLOURS[g % len(_GROUP_COLOURS)], f"{name} ({how})"))
        out.append((_BELOW_COLOUR, "not counted: below the evidence floor or weak evidence"))
        return out

    # ------------------------------------------------------------------ interaction
    def _tip(self, x: float, y: float, data: Any) -> str:
        try:
            seg, _below = self.segments[int(data[0])]
            dist = float(data[1])
        except (TypeError, IndexError, ValueError):
            return f"offered {api.format_clock(x)}, owned {api.format_clock(y)}"
        owned = api.safe_text(seg.corpus_file, max_len=60)
        return (f"Offered {api.format_clock(x)} ↔ yours {api.format_clock(y)}\n"
                f"in {owned}\nHow alike the two frames are: {api.distance_words(dist)}\n"
                "Click to see your own frame")

    def _on_clicked(self, _item: Any, points: Any, _ev: Any = None) -> None:
        if points is None or len(points) == 0:
            return
        pt = points[0]
        self.click_point(pt.pos().x(), pt.pos().y(), pt.data())

    def click_point(self, x: float, y: float, data: Any) -> None:
        """Act as if the dot at ``(x, y)`` carrying ``data`` was clicked (also used by tests)."""
        seg_idx, dist = int(data[0]), float(data[1])
        seg, _below = self.segments[seg_idx]
        self.point_clicked.emit(seg, float(x), float(y), dist)

    def reset_zoom(self) -> None:
        self.plot.enableAutoRange()
