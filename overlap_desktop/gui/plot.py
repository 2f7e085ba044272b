"""The match plot: offered time × owned time for one offered file (pyqtgraph).

Each matched frame pair is a dot; a copy played at normal speed lies on a
45-degree line, a slowed copy on a flatter one, a reversed copy on a falling one.
Fitted segments are drawn as lines over the dots, below-floor evidence dashed and
grey, time that could not be judged shaded. "Can't tell" time is shaded amber, and its
near-identical frames (the report's ``near_frames``) are amber diamonds where they lie.

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
from overlap_desktop.gui.result_parts import YOUR_WORDS, OwnerWords, short_names

__all__ = ["BAND_COLOUR", "BAND_WORDS", "CANT_TELL_COLOUR", "CANT_TELL_WORDS", "MAX_POINTS", "NEAR_COLOUR",
           "NEAR_WORDS", "MatchPlot"]

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
#: Shapes for "owned file and change" colouring (cycled with the colours): two copies of the same
#: footage put their dots on the same spot, and a cross over a circle still shows both.
_GROUP_SYMBOLS = ("o", "x", "t", "s", "d", "+", "star", "h")
#: The same shapes as text, for the legend under the plot.
_SYMBOL_GLYPHS = {"o": "\u25cf", "x": "\u2716", "t": "\u25bc", "s": "\u25a0", "d": "\u25c6", "+": "\u271a",
                  "star": "\u2605", "h": "\u2b22"}
#: Larger shapes for earlier groups, drawn first: a later group's smaller shape sits inside them.
_GROUP_SIZES = (10, 8, 7, 7, 6, 6, 6, 6)
#: The shading of offered time that could not be judged (plot and legend).
BAND_COLOUR = (128, 128, 128, 50)
BAND_WORDS = "could not be judged (static or featureless): counted neither way"
#: The shading of offered time that can't be told: some evidence of being owned, not enough.
CANT_TELL_COLOUR = (230, 150, 0, 70)
CANT_TELL_WORDS = "can't tell: some evidence of being owned, not enough to prove it (counted neither way)"
#: Near-identical frames behind "can't tell" time, at (offered, owned) time: amber diamonds ringed
#: in grey, apart from the round distance-coloured dots of counted evidence.
NEAR_COLOUR = "#e69600"
_NEAR_RING = "#707070"
NEAR_WORDS = "near-identical, not shown to be a copy (can't tell)"


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
        #: How the owned side is named (the demo's sample library is not "yours"); see set_owner_words.
        self.words: OwnerWords = YOUR_WORDS
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        pg.setConfigOptions(antialias=True)
        self.widget = pg.PlotWidget()
        self.widget.setAccessibleName("Match plot")
        self.plot = self.widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMenuEnabled(False)
        # pyqtgraph's auto-range button is an unlabelled "A" glyph: the results view has a labelled
        # "Show all" button instead (reset_zoom).
        self.plot.hideButtons()
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
        # The near-identical frames of "can't tell" time (FileResult.near_frames): evidence of no
        # stretch, so not clickable; just under the counted dots where the two meet.
        self.near_dots = pg.ScatterPlotItem(size=8, pen=pg.mkPen(QColor(_NEAR_RING), width=1), symbol="d",
                                            brush=pg.mkBrush(QColor(NEAR_COLOUR)), pxMode=True, hoverable=True,
                                            hoverSize=9, tip=self._near_tip)
        self.near_dots.setZValue(9)
        self.plot.addItem(self.near_dots)
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
        # The stretch chosen in the match table, drawn as a wide translucent band over its line.
        self.highlight = pg.PlotDataItem(pen=pg.mkPen(QColor(255, 200, 0, 150), width=12))
        self.highlight.setZValue(5)
        self.plot.addItem(self.highlight)
        self.highlighted: Any = None
        # The dot last clicked: a ring in data coordinates, so zooming and panning keep it on its dot.
        self.marker = pg.ScatterPlotItem(size=16, symbol="o", brush=pg.mkBrush(None),
                                         pen=pg.mkPen(QColor(0, 0, 0), width=2))
        self.marker.setZValue(30)
        self.plot.addItem(self.marker)
        self.selected_point: tuple[float, float] | None = None
        self._regions: list[Any] = []
        self.cant_tell_regions: list[Any] = []
        self.segments: list[tuple[Any, bool]] = []
        self.near_frames: list[Any] = []
        self.colour_mode = "distance"
        self._file: Any = None
        self.point_count = 0
        self._apply_palette()

    def _apply_palette(self) -> None:
        """Match the plot to the window's light or dark palette."""
        pal = self.palette()
        fg = pal.text().color()
        self.widget.setBackground(pal.base().color())
        for side in ("bottom", "left"):
            ax = self.plot.getAxis(side)
            ax.setPen(fg)
            ax.setTextPen(fg)
        self._label_axes()
        self.lines.setPen(self._line_pen())
        self.marker.setPen(pg.mkPen(fg, width=2))
        if hasattr(self, "no_match"):
            self.no_match.setColor(fg)

    def y_axis_words(self) -> str:
        """The y axis title: one owned file is "your file"; lines from several are told apart by colour."""
        owned = {s.corpus_file for s, _below in self.segments} | {n.corpus_file for n in self.near_frames}
        # Short: the axis is only as long as the plot is high (about 116 px on a laptop with a long
        # summary, where "Time in your file (s)" was cut off); the x axis says what is measured.
        return "Each file (s)" if len(owned) > 1 else self.words.axis

    def set_owner_words(self, words: OwnerWords) -> None:
        """Name the owned side with ``words`` (call before :meth:`set_file`)."""
        self.words = words
        self._label_axes()

    def _label_axes(self) -> None:
        fg = self.palette().text().color().name()
        self.plot.getAxis("bottom").setLabel("Time in the offered file (s)", color=fg)
        self.plot.getAxis("left").setLabel(self.y_axis_words(), color=fg)

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
        self._regions, self.cant_tell_regions = [], []
        self.no_match.hide()
        self.set_highlight(None)
        self.set_selected_point(None)
        self.near_frames = list(getattr(file_result, "near_frames", None) or [])
        self._update_near_dots()
        if file_result is None:
            self.segments = []
            self._label_axes()
            self.scatter.setData([], [])
            self.lines.setData([], [])
            self.below_lines.setData([], [])
            self.point_count = 0
            return
        # Counted stretches in colour; below-floor and weak evidence, and the same motion as several
        # owned episodes, grey and dashed (not counted).
        self.segments = ([(s, False) for s in file_result.segments]
                         + [(s, True) for s in file_result.below_floor]
                         + [(s, True) for s in getattr(file_result, "weak", [])]
                         + [(s, True) for s in getattr(file_result, "ambiguous", [])])
        self._update_points()
        self._update_lines()
        self._label_axes()
        duration = max(1.0, float(file_result.duration_s or 1.0))
        cant_tell = list(getattr(file_result, "cant_tell", []) or [])
        if not self.segments:
            # Nothing counted: say so on this file's own axes, never the previous file's; with
            # "can't tell" time it is not "no match" (that time is shaded below).
            self.no_match.setText(self._nothing_counted_words(cant_tell))
            self.no_match.setPos(duration / 2.0, duration / 2.0)
            self.no_match.show()
            self.plot.setXRange(0, duration, padding=0.02)
            self.plot.setYRange(0, duration, padding=0.02)
            if self.near_frames:  # the owned times of the dots, wherever they are
                owned_s = [n.corpus_s for n in self.near_frames]
                self.plot.setYRange(min(owned_s), max(owned_s), padding=0.1)
                self.no_match.setPos(duration / 2.0, 0.5 * (min(owned_s) + max(owned_s)))
        for span in file_result.indeterminate:
            self._regions.append(self._band(
                span, BAND_COLOUR, -10, f"Could not be judged ({span.reason or 'static or featureless'})", ""))
        for span in cant_tell:
            self.cant_tell_regions.append(self._band(
                span, CANT_TELL_COLOUR, -9, f"Can't tell ({span.reason or 'some evidence of ownership'})",
                ", not counted"))
        self._regions.extend(self.cant_tell_regions)
        self.plot.setXRange(0, duration, padding=0.02)
        if self.segments:
            self.plot.enableAutoRange(axis="y")


    def _band(self, span: Any, colour: tuple[int, ...], z: int, what: str, after: str) -> pg.LinearRegionItem:
        """A shaded offered-time span on the plot, with ``what`` and its clock times as the tip."""
        region = pg.LinearRegionItem(values=(span.start_s, span.end_s), movable=False,
                                     brush=pg.mkBrush(*colour), pen=pg.mkPen(None))
        region.setZValue(z)
        region.setToolTip(f"{what}: {api.format_clock(span.start_s)}–{api.format_clock(span.end_s)}{after}")
        self.plot.addItem(region)
        return region
    def _nothing_counted_words(self, cant_tell: list[Any]) -> str:
        seconds = sum(sp.duration_s for sp in cant_tell)
        if seconds <= 0:
            return self.words.no_match
        dots = "; amber dots: its near-identical frames" if self.near_frames else ""
        return (f"Can't tell: {api.format_duration(seconds)} of this file has some evidence of matching "
                f"{self.words.footage}\n(near-identical frames that cannot be placed in time, or too little "
                f"to prove it), shaded{dots}; counted neither way")

    def _update_near_dots(self) -> None:
        if not self.near_frames:
            self.near_dots.setData([], [])
            return
        self.near_dots.setData(x=[n.query_s for n in self.near_frames], y=[n.corpus_s for n in self.near_frames],
                               data=list(range(len(self.near_frames))))

    def near_dot_positions(self) -> list[tuple[float, float]]:
        """``(offered s, owned s)`` of the near-identical dots drawn."""
        x, y = self.near_dots.getData()
        return [(float(a), float(b)) for a, b in zip(x, y, strict=True)]

    def _near_tip(self, x: float, y: float, data: Any) -> str:
        try:
            n = self.near_frames[int(data)]
        except (TypeError, IndexError, ValueError):
            return f"offered {api.format_clock(x)}, owned {api.format_clock(y)}"
        owned = api.safe_text(n.corpus_file, max_len=60)
        return (f"Offered {api.format_clock(x)} ↔ {self.words.side} {api.format_clock(y)}\n"
                f"in {owned}\nNear-identical ({n.distance} bits apart), but not shown to be a copy: "
                "too still, too short or too few frames (can't tell)")

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
        symbols: Any = "o"
        sizes: Any = 6
        if self.colour_mode == "distance":
            brushes = [self._dist_brushes[int(b)] for b in api.distance_level_indices(d)]
        else:
            groups = self._groups()
            g_arr = np.array([groups[(self.segments[int(k)][0].corpus_file, self.segments[int(k)][0].variant)]
                              for k in sid], dtype=np.int64)
            # Earlier groups first (drawn below) with larger shapes: two copies on the same spot
            # show as a cross inside a circle, not one dot hiding the other.
            order = np.argsort(g_arr, kind="stable")
            x, y, d, sid, below, g_arr = x[order], y[order], d[order], sid[order], below[order], g_arr[order]
            brushes = [self._group_brushes[g % len(self._group_brushes)] for g in g_arr]
            symbols = [_GROUP_SYMBOLS[g % len(_GROUP_SYMBOLS)] for g in g_arr]
            sizes = [_GROUP_SIZES[g % len(_GROUP_SIZES)] for g in g_arr]
        brushes = [self._below_brush if b else br for b, br in zip(below, brushes)]
        data = [(int(k), float(dd)) for k, dd in zip(sid, d)]
        self.scatter.setData(x=x, y=y, brush=brushes, symbol=symbols, size=sizes, data=data)
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

    def group_symbol(self, corpus_file: str, variant: Any) -> str:
        """The dot shape of one owned file and change in "owned file" colouring."""
        return _GROUP_SYMBOLS[self._groups()[(corpus_file, variant)] % len(_GROUP_SYMBOLS)]

    def has_bands(self) -> bool:
        """True when the shown file has time that could not be judged (grey bands)."""
        return len(self._regions) > len(self.cant_tell_regions)

    def has_cant_tell(self) -> bool:
        """True when the shown file has "can't tell" time (amber bands)."""
        return bool(self.cant_tell_regions)

    def legend_entries(self) -> list[tuple[str, str]]:
        """``(colour, words)`` for the current colouring (shown under the plot by the results view)."""
        return [(colour, words) for colour, words, _glyph in self.legend_items()]

    def legend_items(self) -> list[tuple[str, str, str]]:
        """``(colour, words, glyph)``: the legend with each group's dot shape as a character."""
        dot = _SYMBOL_GLYPHS["o"]
        if self.colour_mode == "distance":
            out = [(c, w, dot) for c, w in zip(_DIST_COLOURS, _DIST_WORDS)]
        else:
            out = []
            groups = self._groups()
            names = short_names([f for f, _v in groups])
            for (corpus_file, variant), g in groups.items():
                how = variant.describe() or "unchanged"
                out.append((_GROUP_COLOURS[g % len(_GROUP_COLOURS)], f"{names[corpus_file]} ({how})",
                            _SYMBOL_GLYPHS[_GROUP_SYMBOLS[g % len(_GROUP_SYMBOLS)]]))
        out.append((_BELOW_COLOUR, "not counted: below the evidence floor, weak, or the same motion as several "
                    "owned episodes", dot))
        if self.near_frames:
            out.append((NEAR_COLOUR, NEAR_WORDS, _SYMBOL_GLYPHS["d"]))  # a diamond: apart from the distance dots
        return out

    # ------------------------------------------------------------------ interaction
    def _tip(self, x: float, y: float, data: Any) -> str:
        try:
            seg, _below = self.segments[int(data[0])]
            dist = float(data[1])
        except (TypeError, IndexError, ValueError):
            return f"offered {api.format_clock(x)}, owned {api.format_clock(y)}"
        owned = api.safe_text(seg.corpus_file, max_len=60)
        return (f"Offered {api.format_clock(x)} ↔ {self.words.side} {api.format_clock(y)}\n"
                f"in {owned}\nHow alike the two frames are: {api.distance_words(dist)}\n"
                f"{self.words.click}")

    def _on_clicked(self, _item: Any, points: Any, _ev: Any = None) -> None:
        if points is None or len(points) == 0:
            return
        pt = points[0]
        self.click_point(pt.pos().x(), pt.pos().y(), pt.data())

    def click_point(self, x: float, y: float, data: Any) -> None:
        """Act as if the dot at ``(x, y)`` carrying ``data`` was clicked (also used by tests)."""
        seg_idx, dist = int(data[0]), float(data[1])
        seg, _below = self.segments[seg_idx]
        self.set_selected_point((float(x), float(y)))
        self.point_clicked.emit(seg, float(x), float(y), dist)

    def set_selected_point(self, xy: tuple[float, float] | None) -> None:
        """Ring the dot at ``xy`` (``None`` removes the ring)."""
        self.selected_point = xy
        if xy is None:
            self.marker.setData([], [])
        else:
            self.marker.setData([xy[0]], [xy[1]])

    def set_highlight(self, seg: Any | None) -> None:
        """Draw a wide band over the stretch ``seg`` (a segment of the shown file), or remove it."""
        self.highlighted = seg
        if seg is None:
            self.highlight.setData([], [])
        else:
            self.highlight.setData([seg.query_start, seg.query_end], [seg.corpus_start, seg.corpus_end])

    def reset_zoom(self) -> None:
        """Show the whole file again after zooming or panning."""
        self.plot.enableAutoRange()
