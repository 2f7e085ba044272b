"""The comparison results: headline, per-file table, match plot, owned-frame preview, export.

All sentences come from the report module's helpers (``api.headline``,
``api.describe_flags``...), so the window, the HTML report and the CLI say the
same thing in the same words.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import SavedNote, compact_rows, fmt_hours, headline_label, open_or_explain, show_error
from overlap_desktop.gui.workers import Job

__all__ = ["ResultsView", "rgb_to_pixmap"]

FILE_COLUMNS = ("Offered file", "Length", "You own", "Repeated in the offer", "New for you",
                "Could not be judged", "What was done to it")
SEG_COLUMNS = ("Offered", "Matches", "At", "Speed", "Picture changes", "Chance of a coincidence", "Counted")

#: The "Counted" column's words for each kind of row in the stretches table.
ROW_KINDS = {
    "owned": "yes: footage you own",
    "below": "no: shorter than the evidence floor",
    "weak": "no: weak evidence (could be a coincidence)",
    "repeat": "yes: repeats other offered footage",
}

EXPORT_KINDS = {
    "html": ("Report for people (*.html)", "write_report_html"),
    "json": ("Report for machines (*.json)", "write_report_json"),
    "csv": ("Spreadsheet (*.csv)", "write_report_csv"),
}


def rgb_to_pixmap(rgb: Any) -> QPixmap:
    """Convert an RGB ``uint8 (h, w, 3)`` array to a pixmap (UI thread only)."""
    h, w = rgb.shape[:2]
    img = QImage(rgb.data, w, h, int(rgb.strides[0]), QImage.Format.Format_RGB888)
    return QPixmap.fromImage(img.copy())  # copy: the array may be freed after return


def _item(text: str, tip: str = "", sort: Any = None) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if tip:
        it.setToolTip(tip)
    if sort is not None:
        it.setData(Qt.ItemDataRole.UserRole, sort)
    return it


def _speed_text(seg: Any) -> str:
    """Speed with its interval when it differs from normal ("0.5x (0.48–0.52x)"), else "normal"."""
    if api.speed_words(seg) is None:
        return "normal" + (", reversed" if seg.speed < 0 else "")
    return str(api.speed_text(seg)) + (", reversed" if seg.speed < 0 else "")


def _sorting_item(text: str, value: float, tip: str = "") -> QTableWidgetItem:
    """An item that sorts by ``value`` (seconds, percent) rather than by its text."""
    it = _NumItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    it.setData(Qt.ItemDataRole.UserRole + 1, float(value))
    if tip:
        it.setToolTip(tip)
    return it


class _NumItem(QTableWidgetItem):
    def __lt__(self, other: QTableWidgetItem) -> bool:
        a = self.data(Qt.ItemDataRole.UserRole + 1)
        b = other.data(Qt.ItemDataRole.UserRole + 1)
        if a is None or b is None:
            return super().__lt__(other)
        return float(a) < float(b)


#: Lines of evaluation examples and episode matches shown under the details (all are in the reports).
MAX_EXTRA_LINES = 8


def _extra_lines(report: Any) -> list[str]:
    """Matched evaluation examples and episode matches, one plain line each (capped)."""
    out: list[str] = []
    block = getattr(report, "text_overlap", None) or {}
    examples = [e for e in block.get("matched_examples", []) if isinstance(e, dict)]
    if block.get("status") == "checked" and examples:
        out.append("Your evaluation examples sharing an n-gram with the vendor's annotations:")
        out += [f"  • {api.safe_text(e.get('locator', ''), max_len=40)}: "
                f"{api.safe_text(e.get('text', ''), max_len=160)}" for e in examples[:MAX_EXTRA_LINES]]
    labels = [e.get("label", "") for f in report.files for e in f.episodes
              if isinstance(e, dict) and not e.get("below_floor")]
    if labels:
        out.append("Episodes:")
        out += [f"  • {api.safe_text(x, max_len=160)}" for x in labels[:MAX_EXTRA_LINES]]
    more = max(0, len(examples) - MAX_EXTRA_LINES) + max(0, len(labels) - MAX_EXTRA_LINES)
    if more:
        out.append(f"  … {more} more in the saved reports")
    return out


class _FrameLabel(QLabel):
    """Shows a frame scaled to fit, re-scaled when the label is resized."""

    def __init__(self, text: str = "") -> None:
        super().__init__(text)
        self._frame: QPixmap | None = None

    def set_frame(self, pm: QPixmap) -> None:
        self._frame = pm
        self._rescale()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self._frame is not None:
            self._rescale()

    def _rescale(self) -> None:
        assert self._frame is not None
        # Scale in device pixels so the frame stays sharp on high-DPI screens.
        dpr = self.devicePixelRatioF()
        box = self.contentsRect().size() * dpr
        pm = self._frame.scaled(box, Qt.AspectRatioMode.KeepAspectRatio,
                                Qt.TransformationMode.SmoothTransformation)
        pm.setDevicePixelRatio(dpr)
        self.setPixmap(pm)

    def sizeHint(self) -> Any:
        # Never ask for the pixmap's size: the frame follows the layout, not the other way round.
        return super().minimumSizeHint()


class ResultsView(QWidget):
    """Shows one :class:`~overlap_desktop.core.report.model.Report`.

    Signals:
        exported(str): a report file was written (its path).
        preview_ready(): the owned frame for the clicked point is displayed.
    """

    exported = Signal(str)
    preview_ready = Signal()
    preview_failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.report: Any = None
        self.last_export: Path | None = None
        self.preview_job: Job | None = None
        self._preview_seq = 0

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(4)
        self._build_summary(outer)

        # Files on top (full width so the plain-word flags are readable); below, the plot and
        # the matched stretches on the left, the owned-frame preview on the right.
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        self.file_table = QTableWidget(0, len(FILE_COLUMNS))
        self.file_table.setAccessibleName("Offered files")
        self.file_table.setHorizontalHeaderLabels(list(FILE_COLUMNS))
        self.file_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.file_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.file_table.verticalHeader().setVisible(False)
        self.file_table.horizontalHeader().setStretchLastSection(True)
        compact_rows(self.file_table)
        # Never fewer than four files in view (the laptop complaint was "3.5 rows").
        self.file_table.setMinimumHeight(self.file_table.horizontalHeader().sizeHint().height()
                                         + 4 * self.file_table.verticalHeader().defaultSectionSize() + 6)
        self.file_table.itemSelectionChanged.connect(self._on_file_selected)
        split.addWidget(self.file_table)

        lower = QWidget()
        hl = QHBoxLayout(lower)
        hl.setContentsMargins(0, 0, 0, 0)
        self._build_plot_side(hl)
        self._build_preview_side(hl)
        split.addWidget(lower)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 4)
        split.setSizes([175, 475])
        outer.addWidget(split, 1)
        self._update_legend()
        self._set_enabled(False)

    def _build_summary(self, outer: QVBoxLayout) -> None:
        """The result in sentences, with the save and open buttons beside them."""
        # The sentences on the left, the save buttons beside them (not on a row of their own:
        # at 1366x768 every line of height goes to the file table and the plot).
        top_row = QHBoxLayout()
        outer.addLayout(top_row)
        lay = QVBoxLayout()
        lay.setSpacing(2)
        top_row.addLayout(lay, 1)
        self.headline = headline_label()
        self.headline.setAccessibleName("Result")
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.headline)
        # The figure a buyer pays for: hours neither owned nor repeated inside the offer.
        self.new_footage = QLabel()
        self.new_footage.setWordWrap(True)
        self.new_footage.setTextFormat(Qt.TextFormat.PlainText)
        self.new_footage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.new_footage.setAccessibleName("New footage you would actually get")
        f = self.new_footage.font()
        f.setBold(True)
        self.new_footage.setFont(f)
        lay.addWidget(self.new_footage)
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setAccessibleName("Result details")
        lay.addWidget(self.details)
        # Annotation overlap (the lab's own evaluation examples) and episode matches; hidden
        # when the report has neither.
        self.extras = QLabel()
        self.extras.setWordWrap(True)
        self.extras.setTextFormat(Qt.TextFormat.PlainText)  # example text and names are untrusted
        self.extras.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.extras.setAccessibleName("Annotation overlap and episodes")
        self.extras.setVisible(False)
        lay.addWidget(self.extras)

        self.saved_note = SavedNote()
        lay.addWidget(self.saved_note)
        grid = QGridLayout()
        grid.setSpacing(4)
        self.export_buttons: dict[str, QPushButton] = {}
        for i, (kind, label) in enumerate((("html", "Save report (HTML)…"), ("json", "Save JSON…"),
                                           ("csv", "Save CSV…"))):
            b = QPushButton(label)
            b.setAccessibleName(label.rstrip("…"))
            b.clicked.connect(lambda _=False, k=kind: self.choose_export(k))
            grid.addWidget(b, i // 2, i % 2)
            self.export_buttons[kind] = b
        self.open_button = QPushButton("Open report")
        self.open_button.setAccessibleName("Open report")
        self.open_button.setToolTip("Open the last saved report (or a fresh HTML copy) in your browser")
        self.open_button.clicked.connect(self.open_report)
        grid.addWidget(self.open_button, 1, 1)
        top_row.addLayout(grid)
        top_row.setAlignment(grid, Qt.AlignmentFlag.AlignTop)

    def _build_plot_side(self, hl: QHBoxLayout) -> None:
        """The match plot with its colour choice and legend, and the matched stretches below it."""
        left = QWidget()
        rl = QVBoxLayout(left)
        rl.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.plot_title = QLabel("Select a file to see where it matches your footage.")
        self.plot_title.setWordWrap(True)
        self.plot_title.setTextFormat(Qt.TextFormat.PlainText)  # shows a manifest file name
        top.addWidget(self.plot_title, 1)
        top.addWidget(QLabel("Colour:"))
        self.colour_combo = QComboBox()
        self.colour_combo.setAccessibleName("Colour the dots by")
        self.colour_combo.addItem("How close each frame is", "distance")
        self.colour_combo.addItem("Owned file and change", "group")
        self.colour_combo.currentIndexChanged.connect(self._on_colour_mode)
        top.addWidget(self.colour_combo)
        rl.addLayout(top)
        from overlap_desktop.gui.plot import MatchPlot  # pyqtgraph loads here, not at start-up

        self.plot = MatchPlot()
        self.plot.point_clicked.connect(self.show_owned_frame)
        self.plot.setMinimumHeight(160)
        rl.addWidget(self.plot, 3)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)  # coloured dots; names are escaped
        self.legend.setAccessibleName("Plot legend")
        rl.addWidget(self.legend)
        self.seg_table = QTableWidget(0, len(SEG_COLUMNS))
        self.seg_table.setAccessibleName("Matched stretches of the selected file")
        self.seg_table.setHorizontalHeaderLabels(list(SEG_COLUMNS))
        self.seg_table.verticalHeader().setVisible(False)
        self.seg_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.seg_table.horizontalHeader().setStretchLastSection(True)
        compact_rows(self.seg_table)
        self.seg_table.setMinimumHeight(70)
        rl.addWidget(self.seg_table, 1)
        hl.addWidget(left, 1)

    def _build_preview_side(self, hl: QHBoxLayout) -> None:
        """The owned-frame preview and how to read the plot."""
        right = QWidget()
        right.setFixedWidth(340)
        pv = QVBoxLayout(right)
        pv.setContentsMargins(0, 0, 0, 0)
        pv.addWidget(QLabel("Your owned frame"))
        self.preview = _FrameLabel("Click a dot in the plot to see the frame of your own footage it "
                                   "matched.")
        self.preview.setAccessibleName("Owned frame preview")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumHeight(120)
        self.preview.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.preview.setWordWrap(True)
        self.preview.setFrameShape(QLabel.Shape.StyledPanel)
        self.preview_caption = QLabel("The manifest carries no pictures: frames are shown from your own "
                                      "copy of the footage.")
        self.preview_caption.setWordWrap(True)
        self.preview_caption.setTextFormat(Qt.TextFormat.PlainText)  # shows file names
        pv.addWidget(self.preview, 1)
        pv.addWidget(self.preview_caption)
        hint = QLabel("Each dot is a frame of the offer matched to a frame you own; a line is a matched "
                      "stretch (a flatter line: the copy was slowed down). Drag to pan, scroll to zoom, "
                      "hover for times, click a dot to see your own frame.")
        hint.setWordWrap(True)
        hint.setEnabled(False)
        pv.addWidget(hint)
        hl.addWidget(right)

    def jobs(self) -> list[Job | None]:
        return [self.preview_job]

    def _on_colour_mode(self, _i: int) -> None:
        self.plot.set_colour_mode(self.colour_combo.currentData())
        self._update_legend()

    def _update_legend(self) -> None:
        """A legend under the plot (inside it, it would hide dots)."""
        items = self.plot.legend_entries()
        self.legend.setText("&nbsp;&nbsp;".join(
            f'<span style="color:{colour}; font-size:large;">&#9679;</span>&nbsp;{html.escape(text)}'
            for colour, text in items))

    def _set_enabled(self, on: bool) -> None:
        for b in self.export_buttons.values():
            b.setEnabled(on)
        self.open_button.setEnabled(on)

    # ------------------------------------------------------------------ filling
    def set_report(self, report: Any) -> None:
        """Show ``report`` (a :class:`~overlap_desktop.core.report.model.Report`)."""
        self.report = report
        self.last_export = None
        self.headline.setText(api.headline(report))
        self.new_footage.setText(api.new_footage_sentence(report))
        self.new_footage.setVisible(bool(self.new_footage.text()))
        self.saved_note.hide()
        self.details.setText(" ".join(api.headline_details(report)))
        extras = _extra_lines(report)
        self.extras.setText("\n".join(extras))
        self.extras.setVisible(bool(extras))
        ft = self.file_table
        ft.setSortingEnabled(False)
        ft.setRowCount(len(report.files))
        for r, f in enumerate(report.files):
            name = api.safe_text(f.query_file)
            ft.setItem(r, 0, _item(name, tip=name, sort=r))  # the row's file, found again when selected
            ft.setItem(r, 1, _sorting_item(fmt_hours(f.duration_s), f.duration_s))
            pct = api.format_percent(f.matched_percent)
            below = len(f.below_floor)
            owned_text = pct + (f" (+{below} below floor)" if below else "")
            ft.setItem(r, 2, _sorting_item(owned_text, f.matched_percent,
                                           tip=f"{fmt_hours(f.matched_seconds)} of {fmt_hours(f.duration_s)} "
                                               "match footage you own"))
            rep = float(getattr(f, "repeated_seconds", 0.0) or 0.0)
            ft.setItem(r, 3, _sorting_item(fmt_hours(rep) if rep > 0.5 else "–", rep,
                                           tip="Offered time that repeats other footage of the same offer "
                                               "(you would pay for it twice)"))
            new = float(getattr(f, "new_seconds", 0.0) or 0.0)
            cant = float(getattr(f, "cant_tell_seconds", 0.0) or 0.0)
            # Issue 33: "new" only where shown not owned; evidence that proves neither way is named.
            tip = "Judged time shown not to be owned, and not repeated inside the offer"
            if cant > 0.5:
                tip += f". Can't tell for {fmt_hours(cant)} (some evidence of ownership, not enough): not counted"
            ft.setItem(r, 4, _sorting_item(fmt_hours(new) if new > 0.5 else "–", new, tip=tip))
            ind = f.indeterminate_seconds
            ft.setItem(r, 5, _sorting_item(fmt_hours(ind) if ind > 0.5 else "–", ind,
                                           tip="Static or featureless time: counted neither way"))
            words = ", ".join(api.describe_flags(f)) or ("copied as is" if f.segments else "no match")
            ft.setItem(r, 6, _item(words, tip=words))
        ft.resizeColumnsToContents()
        if ft.columnWidth(0) > 260:
            ft.setColumnWidth(0, 260)
        self._set_enabled(True)
        # Select the first file with a match so the plot is never empty when there is something to see.
        first = next((i for i, f in enumerate(report.files) if f.segments or f.below_floor
                      or getattr(f, "repeats", None)), 0)
        if report.files:
            ft.selectRow(first)
        else:
            self.plot.set_file(None)

    def selected_file(self) -> Any:
        rows = self.file_table.selectionModel().selectedRows()
        if not rows or self.report is None:
            return None
        item = self.file_table.item(rows[0].row(), 0)
        if item is None:
            return None
        return self.report.files[int(item.data(Qt.ItemDataRole.UserRole))]

    def _on_file_selected(self) -> None:
        f = self.selected_file()
        self.plot.set_file(f)
        self._update_legend()
        self._fill_segments(f)
        if f is None:
            return
        name = api.safe_text(f.query_file, max_len=70)
        if f.segments or f.below_floor or getattr(f, "weak", None):
            self.plot_title.setText(f"Where “{name}” matches your footage")
        elif getattr(f, "repeats", None):
            self.plot_title.setText(f"“{name}”: no match with your footage; it repeats other offered footage "
                                    "(listed below)")
        else:
            self.plot_title.setText(f"“{name}”: no match with your footage")

    @staticmethod
    def segment_rows(f: Any) -> list[tuple[Any, str]]:
        """``(segment, kind)`` for the stretches table: owned, below floor, weak evidence, repeats."""
        if f is None:
            return []
        return ([(s, "owned") for s in f.segments] + [(s, "below") for s in f.below_floor]
                + [(s, "weak") for s in getattr(f, "weak", [])]
                + [(s, "repeat") for s in getattr(f, "repeats", [])])

    def _fill_segments(self, f: Any) -> None:
        st = self.seg_table
        rows = self.segment_rows(f)
        st.setRowCount(len(rows))
        for r, (s, kind) in enumerate(rows):
            st.setItem(r, 0, _item(f"{api.format_clock(s.query_start)}–{api.format_clock(s.query_end)}"))
            other = api.safe_text(s.corpus_file)
            where = "offered " if kind == "repeat" else "yours: "
            st.setItem(r, 1, _item(where + Path(other).name, tip=other))
            st.setItem(r, 2, _item(f"{api.format_clock(s.corpus_start)}–{api.format_clock(s.corpus_end)}"))
            st.setItem(r, 3, _item(_speed_text(s)))
            st.setItem(r, 4, _item(s.variant.describe() or "none"))
            chance = api.chance_words(getattr(s, "chance", None))
            short = chance.removeprefix("chance of a coincidence like this: ") if chance else "not measured"
            st.setItem(r, 5, _item(short, tip=chance or "This report was made before chances were measured"))
            tip = (api.describe_repeat(s) if kind == "repeat"
                   else api.describe_segment(s, below_floor=(kind == "below")))
            st.setItem(r, 6, _item(ROW_KINDS[kind], tip=tip))
        st.resizeColumnsToContents()

    # ------------------------------------------------------------------ owned-frame preview
    def show_owned_frame(self, segment: Any, offered_s: float, owned_s: float, distance: float) -> Job:
        """Decode the owned frame at ``owned_s`` in a worker and show it."""
        if self.preview_job is not None and self.preview_job.running:
            self.preview_job.cancel()
        self._preview_seq += 1
        seq = self._preview_seq
        owned = api.safe_text(segment.corpus_file)
        self.preview.setText("Decoding your frame…")
        self.preview_caption.setText(
            f"Your file {Path(owned).name} at {api.format_clock(owned_s)}, matched to the offer at "
            f"{api.format_clock(offered_s)} ({api.distance_words(distance)} match). The manifest carries "
            "no pictures: this frame comes from your own copy.")
        job = Job(api.frame_at, segment.corpus_file, segment.corpus_stream, owned_s, parent=self,
                  with_progress=False, with_cancel=True, max_size=(480, 360))
        job.succeeded.connect(lambda rgb: self._on_frame(seq, rgb))
        job.failed.connect(lambda exc: self._on_frame_failed(seq, exc))
        self.preview_job = job
        job.start()
        return job

    def _on_frame(self, seq: int, rgb: Any) -> None:
        if seq != self._preview_seq:
            return
        self.preview.set_frame(rgb_to_pixmap(rgb))
        self.preview_ready.emit()

    def _on_frame_failed(self, seq: int, exc: BaseException) -> None:
        if seq != self._preview_seq:
            return
        self.preview.setText(f"Your frame could not be shown: {exc}")
        self.preview_failed.emit(str(exc))

    # ------------------------------------------------------------------ export
    def suggested_path(self, kind: str) -> Path:
        """Where a save dialog starts: the Documents folder, a name from the offer's label."""
        label = (self.report.manifest.get("label") if self.report is not None else None) or "offer"
        return api.documents_dir() / api.file_name_for(str(label), f"-report.{kind}", fallback="offer")

    def choose_export(self, kind: str) -> None:
        filt, _ = EXPORT_KINDS[kind]
        path, _ = QFileDialog.getSaveFileName(self, "Save the report", str(self.suggested_path(kind)), filt)
        if path:
            self.export(kind, Path(path))

    def export(self, kind: str, path: Path) -> Path | None:
        """Write the report as ``kind`` (``html``/``json``/``csv``) to ``path``."""
        if self.report is None:
            return None
        if path.suffix.lower() != "." + kind:
            path = path.with_name(path.name + "." + kind)
        try:
            written = getattr(api, EXPORT_KINDS[kind][1])(self.report, path)
        except Exception as exc:
            show_error(self, "The report could not be saved", exc)
            return None
        self.last_export = Path(written or path)
        self.saved_note.set_saved(self.last_export, "Saved")
        self.exported.emit(str(self.last_export))
        return self.last_export

    def open_report(self) -> Path | None:
        """Open the last saved report, or write an HTML copy to a temporary folder and open that."""
        target = self.last_export
        if target is None or not target.exists():
            import tempfile

            target = self.export("html", Path(tempfile.mkdtemp(prefix="overlap-report-")) / "report.html")
            if target is None:
                return None
        return target if open_or_explain(self.window(), target) else None
