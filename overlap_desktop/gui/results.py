"""The comparison results: headline, per-file table, match plot, owned-frame preview, export.

All sentences come from the report module's helpers (``api.headline``,
``api.describe_flags``...), so the window, the HTML report and the CLI say the
same thing in the same words.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import (
    SavedNote,
    compact_rows,
    fit_columns,
    headline_label,
    open_or_explain,
    show_error,
)
from overlap_desktop.gui.result_parts import (
    YOUR_WORDS,
    FrameLabel,
    extra_lines,
    owner_words,
    rgb_to_pixmap,
    short_names,
    table_item,
)
from overlap_desktop.gui.result_streams import StreamBreakdown
from overlap_desktop.gui.result_table import FileTable, repeat_row_words
from overlap_desktop.gui.splitters import ResultsSplit
from overlap_desktop.gui.workers import Job

__all__ = ["ResultsView", "rgb_to_pixmap"]

SEG_COLUMNS = ("Offered", "Matches", "At", "Speed", "Picture changes", "Chance of a coincidence", "Counted")

#: The "Counted" column's words for each kind of row in the stretches table.
ROW_KINDS = {
    "owned": "yes: footage you own",
    "below": "no: shorter than the evidence floor",
    "weak": "no: weak evidence (could be a coincidence)",
    "ambiguous": "no: the same motion as several owned episodes (can't tell which)",
    "repeat": "yes: repeats other offered footage",
}

#: What the owned-frame panel says when no frame is shown, and the line under it.
PREVIEW_PROMPT = YOUR_WORDS.prompt
PREVIEW_NOTE = YOUR_WORDS.note

EXPORT_KINDS = {
    "html": ("Report for people (*.html)", "write_report_html"),
    "json": ("Report for machines (*.json)", "write_report_json"),
    "csv": ("Spreadsheet (*.csv)", "write_report_csv"),
}


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
        self._seg_rows: list[tuple[Any, str]] = []
        self.last_export: Path | None = None
        self.last_html: Path | None = None  # "Open report" opens this one, not a CSV saved later
        self.preview_job: Job | None = None
        self._preview_seq = 0
        #: How the owned side is named: your footage, or the demo's sample library (set_report).
        self.words = YOUR_WORDS

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(4)
        self._build_summary(outer)

        # Files on top (full width so the plain-word flags are readable); below, the plot and
        # the matched stretches on the left, the owned-frame preview on the right.
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        self.file_table = FileTable()
        self.file_table.setAccessibleName("Offered files")
        # Rows one text line high plus a little air (as compact_rows does for the other tables).
        self.file_table.verticalHeader().setDefaultSectionSize(self.file_table.fontMetrics().height() + 8)
        # Never fewer than three files in view; the plot's third of the height comes first at 1366x768
        # (it was 80 px tall), and the splitter gives the table more when dragged (remembered).
        self.file_table.setMinimumHeight(self.file_table.horizontalHeader().sizeHint().height()
                                         + 3 * self.file_table.verticalHeader().defaultSectionSize() + 6)
        self._filling = False
        self.file_table.selectionModel().selectionChanged.connect(self._on_file_selection_changed)
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
        self.split = split
        # The plot's default share of the height, and where the user drags the handles, kept.
        self.split_memory = ResultsSplit(split, self.plot_split)
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
            grid.addWidget(b, 0, i)
            self.export_buttons[kind] = b
        self.open_button = QPushButton("Open report")
        self.open_button.setAccessibleName("Open report")
        self.open_button.setToolTip("Open the last saved report (or a fresh HTML copy) in your browser")
        self.open_button.clicked.connect(self.open_report)
        grid.addWidget(self.open_button, 1, 0)
        # Buyers forward reports while negotiating: the lab's folder names are its own business.
        self.hide_folders = QCheckBox("Hide my folder names")
        self.hide_folders.setAccessibleName("Hide my folder names in saved reports")
        self.hide_folders.setToolTip("Saved reports name your files without the folders they are in (for "
                                     "reports you forward to a seller). The window keeps showing full paths.")
        grid.addWidget(self.hide_folders, 1, 1, 1, 2)
        top_row.addLayout(grid)
        top_row.setAlignment(grid, Qt.AlignmentFlag.AlignTop)

    def _build_plot_side(self, hl: QHBoxLayout) -> None:
        """The match plot with its colour choice and legend, and the matched stretches below it
        (a splitter between them)."""
        self.plot_box = left = QWidget()
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
        self.fit_button = QPushButton("Show all")
        self.fit_button.setAccessibleName("Show the whole file in the plot")
        self.fit_button.setToolTip("Zoom back out to the whole file after zooming or panning")
        top.addWidget(self.fit_button)
        rl.addLayout(top)
        from overlap_desktop.gui.plot import MatchPlot  # pyqtgraph loads here, not at start-up

        self.plot = MatchPlot()
        self.plot.point_clicked.connect(self.show_owned_frame)
        self.fit_button.clicked.connect(self.plot.reset_zoom)
        # 120: the least that keeps three ticks readable, so a laptop window with a long summary still
        # fits the plot, its legend and four stretches without squeezing one over another.
        self.plot.setMinimumHeight(120)
        rl.addWidget(self.plot, 3)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)  # coloured dots; names are escaped
        self.legend.setAccessibleName("Plot legend")
        rl.addWidget(self.legend)
        self.seg_table = QTableWidget(0, len(SEG_COLUMNS))
        self.seg_table.setAccessibleName("Matched stretches of the selected file")
        self.seg_table.setHorizontalHeaderLabels(list(SEG_COLUMNS))
        for c, title in enumerate(SEG_COLUMNS):  # a narrowed column's title is elided: the tip has it all
            head = self.seg_table.horizontalHeaderItem(c)
            if head is not None:
                head.setToolTip(title)
        self.seg_table.verticalHeader().setVisible(False)
        self.seg_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.seg_table.horizontalHeader().setStretchLastSection(True)
        self.seg_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        compact_rows(self.seg_table)
        # Two stretches in view at least (more where the height allows, after the plot's third), never
        # a horizontal scroll bar.
        self.seg_table.setMinimumHeight(self.seg_table.horizontalHeader().sizeHint().height()
                                        + 2 * self.seg_table.verticalHeader().defaultSectionSize() + 4)
        self.seg_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Its share of the height by stretch, not by the scroll area's generous size hint.
        self.seg_table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        self.seg_table.itemSelectionChanged.connect(self._on_stretch_selected)
        self.seg_table.installEventFilter(self)  # columns re-fitted to its width when it is resized
        self.streams_view = StreamBreakdown()  # each camera of each episode of the selected file
        below = QWidget()  # the stretches and the per-camera breakdown share the splitter's lower pane
        bl = QVBoxLayout(below)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.seg_table, 1)
        bl.addWidget(self.streams_view)
        self.plot_split = QSplitter(Qt.Orientation.Vertical)
        self.plot_split.setChildrenCollapsible(False)
        self.plot_split.addWidget(left)
        self.plot_split.addWidget(below)
        self.plot_split.setStretchFactor(0, 3)
        self.plot_split.setStretchFactor(1, 1)
        hl.addWidget(self.plot_split, 1)

    def _build_preview_side(self, hl: QHBoxLayout) -> None:
        """The owned-frame preview and how to read the plot."""
        right = QWidget()
        # Narrower on a small screen, so the stretches table keeps its columns; never wider than 340.
        right.setMinimumWidth(270)
        right.setMaximumWidth(340)
        pv = QVBoxLayout(right)
        pv.setContentsMargins(0, 0, 0, 0)
        self.preview_title = QLabel(YOUR_WORDS.frame_title)
        pv.addWidget(self.preview_title)
        self.preview = FrameLabel(PREVIEW_PROMPT)
        self.preview.setAccessibleName("Owned frame preview")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumHeight(120)
        self.preview.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.preview.setWordWrap(True)
        self.preview.setFrameShape(QLabel.Shape.StyledPanel)
        self.preview_caption = QLabel(PREVIEW_NOTE)
        self.preview_caption.setWordWrap(True)
        self.preview_caption.setTextFormat(Qt.TextFormat.PlainText)  # shows file names
        pv.addWidget(self.preview, 1)
        pv.addWidget(self.preview_caption)
        hint = QLabel("Each dot is a frame of the offer matched to an owned frame; a line is a matched "
                      "stretch (a flatter line: the copy was slowed down). Drag to pan, scroll to zoom, "
                      "hover for times, click a dot to see the owned frame.")
        hint.setWordWrap(True)
        # Full contrast (a disabled label was too faint to read) and room for all of its lines.
        hint.setAccessibleName("How to read the plot")
        hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.hint = hint
        pv.addWidget(hint)
        hl.addWidget(right)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.place_splitters()

    def place_splitters(self) -> None:
        """The plot at least a third of the results' height, until the user drags a handle."""
        ft = self.file_table
        four = ft.horizontalHeader().sizeHint().height() + 4 * ft.verticalHeader().defaultSectionSize() + 6
        self.split_memory.place(self.split.height(), self.plot_box.height() - self.plot.height(),
                                self.seg_table.minimumHeight(), four)

    def eventFilter(self, obj: Any, event: Any) -> bool:
        if obj is self.seg_table and event.type() == QEvent.Type.Resize:
            fit_columns(self.seg_table)
        return super().eventFilter(obj, event)

    def jobs(self) -> list[Job | None]:
        return [self.preview_job]

    def _on_colour_mode(self, _i: int) -> None:
        self.plot.set_colour_mode(self.colour_combo.currentData())
        self._update_legend()

    def _update_legend(self) -> None:
        """A legend under the plot (inside it, it would hide dots)."""
        from overlap_desktop.gui.plot import BAND_COLOUR, BAND_WORDS, CANT_TELL_COLOUR, CANT_TELL_WORDS

        parts = [f'<span style="color:{colour}; font-size:large;">{glyph}</span>&nbsp;{html.escape(text)}'
                 for colour, text, glyph in self.plot.legend_items()]
        if self.plot.has_bands():
            r, g, b, _a = BAND_COLOUR
            parts.append(f'<span style="color:rgb({r},{g},{b}); font-size:large;">&#9632;</span>&nbsp;'
                         f"{html.escape(BAND_WORDS)}")
        if self.plot.has_cant_tell():
            r, g, b, _a = CANT_TELL_COLOUR
            parts.append(f'<span style="color:rgb({r},{g},{b}); font-size:large;">&#9632;</span>&nbsp;'
                         f"{html.escape(CANT_TELL_WORDS)}")
        self.legend.setText("&nbsp;&nbsp;".join(parts))

    def _set_enabled(self, on: bool) -> None:
        for b in self.export_buttons.values():
            b.setEnabled(on)
        self.open_button.setEnabled(on)

    # ------------------------------------------------------------------ filling
    def set_report(self, report: Any) -> None:
        """Show ``report`` (a :class:`~overlap_desktop.core.report.model.Report`)."""
        self.report = report
        self.last_export = self.last_html = None
        self._set_owner_words(owner_words(report))
        self.headline.setText(api.headline(report))
        self.new_footage.setText(api.new_footage_sentence(report))
        self.new_footage.setVisible(bool(self.new_footage.text()))
        self.saved_note.hide()
        self.details.setText(" ".join(api.headline_details(report)))
        extras = extra_lines(report)
        self.extras.setText("\n".join(extras))
        self.extras.setVisible(bool(extras))
        ft = self.file_table
        # A new report replaces the old one entirely: no selection (and so no plot, table or frame)
        # of the previous offer may survive, even when the new offer selects the same row number.
        self._filling = True
        try:
            ft.clearSelection()
            ft.rows.set_files(report.files, self.words)
            ft.resizeColumnsToContents()
            if ft.columnWidth(0) > 260:
                ft.setColumnWidth(0, 260)
            self._set_enabled(True)
            # Select the first file with a match so the plot is never empty when there is something to see.
            first = next((i for i, f in enumerate(report.files) if f.segments or f.below_floor
                          or getattr(f, "repeats", None)), 0)
            if report.files:
                ft.selectRow(ft.rows.row_of(first))
        finally:
            self._filling = False
        # Always show the selected row: selectRow emits nothing when the row number did not change.
        self._on_file_selected()

    def _set_owner_words(self, words: Any) -> None:
        """Name the owned side in the titles, column, captions and plot (the demo's is not yours)."""
        self.words = words
        self.preview_title.setText(words.frame_title)
        self.plot.set_owner_words(words)
        self.clear_preview()

    def selected_file(self) -> Any:
        rows = self.file_table.selectionModel().selectedRows()
        if not rows or self.report is None:
            return None
        return self.file_table.rows.file_at(rows[0].row())

    def _on_file_selection_changed(self, *_args: Any) -> None:
        if not self._filling:
            self._on_file_selected()

    def _on_file_selected(self) -> None:
        f = self.selected_file()
        # The frame of another file (or of the previous offer) never stays beside this plot.
        self.clear_preview()
        self.plot.set_file(f)
        self._update_legend()
        self._fill_segments(f)
        self.streams_view.set_file(f)
        if f is None:
            self.plot_title.setText(f"Select a file to see where it matches {self.words.footage}.")
            return
        name = api.safe_text(f.query_file, max_len=70)
        if f.segments or f.below_floor or getattr(f, "weak", None) or getattr(f, "ambiguous", None):
            self.plot_title.setText(f"Where “{name}” matches {self.words.footage}")
        elif getattr(f, "repeats", None):
            self.plot_title.setText(f"“{name}”: no match with {self.words.footage}; it repeats other offered footage "
                                    "(listed below)")
        elif getattr(f, "cant_tell", None):
            dots = "; dots: its near-identical frames" if getattr(f, "near_frames", None) else ""
            self.plot_title.setText(f"“{name}”: can't tell whether it matches {self.words.footage} (shaded{dots})")
        else:
            self.plot_title.setText(f"“{name}”: no match with {self.words.footage}")

    @staticmethod
    def segment_rows(f: Any) -> list[tuple[Any, str]]:
        """``(segment, kind)`` for the stretches table: owned, below floor, weak evidence, the same
        motion as several owned episodes, repeats."""
        if f is None:
            return []
        return ([(s, "owned") for s in f.segments] + [(s, "below") for s in f.below_floor]
                + [(s, "weak") for s in getattr(f, "weak", [])]
                + [(s, "ambiguous") for s in getattr(f, "ambiguous", [])]
                + [(s, "repeat") for s in getattr(f, "repeats", [])])

    def _fill_segments(self, f: Any) -> None:
        st = self.seg_table
        rows = self.segment_rows(f)
        self._seg_rows = rows
        # Two owned files can share a name (a backup copy): then their folders tell them apart.
        names = short_names([s.corpus_file for s, _kind in rows])
        st.blockSignals(True)
        st.clearSelection()
        st.setRowCount(len(rows))
        st.blockSignals(False)
        for r, (s, kind) in enumerate(rows):
            st.setItem(r, 0, table_item(f"{api.format_clock(s.query_start)}–{api.format_clock(s.query_end)}"))
            where = "offered " if kind == "repeat" else f"{self.words.side}: "
            st.setItem(r, 1, table_item(where + names[s.corpus_file], tip=api.safe_text(s.corpus_file)))
            st.setItem(r, 2, table_item(f"{api.format_clock(s.corpus_start)}–{api.format_clock(s.corpus_end)}"))
            # The same speed words as the HTML report ("normal (0.9–1.02x)", "0.5x (0.48–0.52x)").
            st.setItem(r, 3, table_item(api.speed_cell(s)))
            identical = kind == "repeat" and api.identical_files(self.report, f.query_file, s.corpus_file)
            st.setItem(r, 4, table_item("none: byte-identical file" if identical else (s.variant.describe() or "none")))
            chance = api.chance_words(getattr(s, "chance", None))
            short = chance.removeprefix("chance of a coincidence like this: ") if chance else "not measured"
            tip = chance or "This report was made before chances were measured"
            if identical:
                # Same sha256: the same bytes, so the repeat is certain whatever the fitted line says.
                short, tip = "none: same checksum", ("The two offered files are byte-identical (same "
                                                     "sha256 in the manifest): a certain repeat.")
            elif not chance and kind == "ambiguous":
                # A twin's line that is not a copy's (a rival): no figure is claimed for it.
                short, tip = "none claimed", ("The same motion in another owned episode, not shown to be the "
                                              "same moment: no chance of a coincidence is claimed for it.")
            st.setItem(r, 5, table_item(short, tip=tip))
            tip = (api.describe_repeat(s) if kind == "repeat"
                   else api.describe_segment(s, ambiguous=api.ambiguous_episodes(f, s)) if kind == "ambiguous"
                   else api.describe_segment(s, below_floor=(kind == "below")))
            counted = (self.words.counted if kind == "owned" else repeat_row_words(f, s) if kind == "repeat"
                       else ROW_KINDS[kind])
            st.setItem(r, 6, table_item(counted, tip=tip))
        fit_columns(st)

    def selected_stretch(self) -> tuple[Any, str] | None:
        """``(segment, kind)`` of the row selected in the stretches table, or ``None``."""
        rows = self.seg_table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self._seg_rows):
            return None
        return self._seg_rows[rows[0].row()]

    def _on_stretch_selected(self) -> None:
        """A row of the stretches table: its line is highlighted and its owned frame shown (middle)."""
        chosen = self.selected_stretch()
        if chosen is None:
            self.plot.set_highlight(None)
            return
        seg, kind = chosen
        if kind == "repeat":
            # A repeat's other side is offered footage: it is not on this plot and has no owned frame.
            self.plot.set_highlight(None)
            return
        self.plot.set_highlight(seg)
        q = 0.5 * (seg.query_start + seg.query_end)
        c = 0.5 * (seg.corpus_start + seg.corpus_end)
        self.plot.set_selected_point((q, c))
        self.show_owned_frame(seg, q, c, float(seg.mean_distance))

    # ------------------------------------------------------------------ owned-frame preview
    def clear_preview(self) -> None:
        """Back to "click a dot" (a pending decode is dropped: its frame would belong elsewhere)."""
        if self.preview_job is not None and self.preview_job.running:
            self.preview_job.cancel()
        self._preview_seq += 1
        self.preview.clear_frame(self.words.prompt)
        self.preview_caption.setText(self.words.note)

    def show_owned_frame(self, segment: Any, offered_s: float, owned_s: float, distance: float) -> Job:
        """Decode the owned frame at ``owned_s`` in a worker and show it."""
        if self.preview_job is not None and self.preview_job.running:
            self.preview_job.cancel()
        self._preview_seq += 1
        seq = self._preview_seq
        # Named as in the table: with the folder when two owned files share a name (a backup copy).
        owned = short_names([s.corpus_file for s, _k in self._seg_rows] + [segment.corpus_file])[segment.corpus_file]
        self.preview.setText("Decoding the frame…")
        self.preview_caption.setText(
            f"{self.words.caption_file} {owned} at {api.format_clock(owned_s)}, matched to the offer at "
            f"{api.format_clock(offered_s)} ({api.distance_words(distance)} match). The manifest carries "
            f"no pictures: this frame comes from {self.words.caption_copy}.")
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

    def save_report(self) -> None:
        """Ask where to save the HTML report and save it (File > Save report, Ctrl+S)."""
        if self.report is not None:
            self.choose_export("html")

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
        report = api.hide_folder_names(self.report) if self.hide_folders.isChecked() else self.report
        try:
            written = getattr(api, EXPORT_KINDS[kind][1])(report, path)
        except Exception as exc:
            show_error(self, "The report could not be saved", exc)
            return None
        self.last_export = Path(written or path)
        if kind == "html":
            self.last_html = self.last_export
        self.saved_note.set_saved(self.last_export, "Saved")
        self.exported.emit(str(self.last_export))
        return self.last_export

    def open_report(self) -> Path | None:
        """Open the last saved HTML report, or write an HTML copy to a temporary folder and open that."""
        target = self.last_html
        if target is None or not target.exists():
            import tempfile

            target = self.export("html", Path(tempfile.mkdtemp(prefix="overlap-report-")) / "report.html")
            if target is None:
                return None
        return target if open_or_explain(self.window(), target) else None
