"""The results' table of offered files: a model that formats a row only when it is drawn.

An offer of a robot lab's episodes has tens of thousands of files. One ``QTableWidgetItem`` per
cell, each formatted up front on the UI thread, froze the window for about a second when a
10,000-file result appeared (issue 38 item 6, bench/bench_results_ui.py). Here the report's
files stay where they are; a row's words are made the first time the view asks for them (the
rows in sight, and a bounded sample when columns are fitted), and sorting orders row numbers by
a key per file without making any cell.

The words are the same as before, from the report module's helpers (``api.describe_flags``...),
so the window, the HTML report and the CLI still say the same thing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableView, QWidget

from overlap_desktop import api
from overlap_desktop.gui.common import fmt_hours
from overlap_desktop.gui.result_parts import YOUR_WORDS, OwnerWords

__all__ = ["FILE_COLUMNS", "FIT_ROWS", "SHOWN_S", "WHAT_COLUMN", "Cell", "FileRows", "FileTable", "cant_tell_words",
           "file_words", "repeat_row_words", "row_seconds"]

FILE_COLUMNS = ("Offered file", "Length", "You own", "Repeated in the offer", "New for you", "Can't tell",
                "Could not be judged", "What was done to it")
#: Columns ordered by their words; the others by the number behind them (seconds, percent).
TEXT_COLUMNS = (0, 7)
#: The column of "What was done to it" (the last one).
WHAT_COLUMN = 7
#: Seconds below this read "–" (rounding noise); every amount above it is shown, so a row's seconds
#: add up to its length as read (a hidden 0.5 s made 3.5 s + 5.6 s of a 9.6 s file).
SHOWN_S = 0.05
#: Rows whose text sets a column's width besides those in sight (Qt's default is 1,000: every one
#: of them would be formatted, in Python, when the result appears).
FIT_ROWS = 100

_Index = QModelIndex | QPersistentModelIndex


class _Words(NamedTuple):
    """One cell's text, its tooltip (``""``: none) and the number it sorts by (``None``: its text)."""

    text: str
    tip: str
    value: float | None


class Cell:
    """What one cell shows, read with ``QTableWidgetItem``'s names (``text()``, ``toolTip()``, ``data()``)."""

    __slots__ = ("_user", "_words")

    def __init__(self, words: _Words, user: Any = None) -> None:
        self._words, self._user = words, user

    def text(self) -> str:
        return self._words.text

    def toolTip(self) -> str:
        return self._words.tip

    def data(self, role: int) -> Any:
        if role == Qt.ItemDataRole.UserRole:
            return self._user
        if role == Qt.ItemDataRole.UserRole + 1:
            return self._words.value
        return self.text() if role == Qt.ItemDataRole.DisplayRole else None


def file_words(f: Any) -> str:
    """The "What was done to it" words of one offered file."""
    # A file whose only match is below the evidence floor, or the same motion as several owned
    # episodes, is not "no match" (its stretches are listed).
    flags = ", ".join(api.describe_flags(f))
    if flags or f.segments:
        cant = _seconds_of(f, "cant_tell_seconds")
        return (flags or "copied as is") + (f"; can't tell for {fmt_hours(cant)}" if cant > SHOWN_S else "")
    ambiguous = getattr(f, "ambiguous", [])
    if ambiguous:
        n = max(api.ambiguous_episodes(f, s) for s in ambiguous)
        return f"the same motion as {n} owned episodes: can't tell which, if any, was copied (not counted)"
    if f.below_floor:
        return "only a match below the evidence floor (not counted)"
    # Evidence of ownership that proves nothing either way is never "no match".
    return cant_tell_words(f) or "no match"


def cant_tell_words(f: Any) -> str:
    """``"can't tell: <why>"`` for a file with "can't tell" time (its longest reason first), else ``""``."""
    spans = list(getattr(f, "cant_tell", []) or [])
    if _seconds_of(f, "cant_tell_seconds") <= 0.0 or not spans:
        return ""
    by_reason: dict[str, float] = {}
    for sp in spans:
        reason = sp.reason or "some evidence of ownership"
        by_reason[reason] = by_reason.get(reason, 0.0) + sp.duration_s
    reasons = sorted(by_reason, key=lambda r: -by_reason[r])
    return f"can't tell: {'; '.join(reasons)} (not counted)"


def repeat_row_words(f: Any, seg: Any) -> str:
    """The "Counted" words of one repeat row of file ``f``, agreeing with its Repeated column: "yes"
    only for seconds that column counts (a repeat over owned, can't-tell or unjudged time adds none)."""
    what = "repeats itself" if seg.corpus_file == f.query_file else "repeats other offered footage"
    taken = [(s.query_start, s.query_end) for s in f.segments]
    taken += [(sp.start_s, sp.end_s) for sp in [*f.indeterminate, *getattr(f, "cant_tell", [])]]
    free = _uncovered(seg.query_start, seg.query_end, taken)
    if free > SHOWN_S and _seconds_of(f, "repeated_seconds") > SHOWN_S:
        return f"yes: {what} ({fmt_hours(free)} counted as repeated)"
    return f"no: {what}, over time already counted as owned, can't tell or not judged"


def _uncovered(a: float, b: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of ``[a, b]`` outside every span of ``spans``."""
    covered, cursor = 0.0, a
    for lo, hi in sorted((max(a, lo), min(b, hi)) for lo, hi in spans if hi > a and lo < b):
        if hi > cursor:
            covered += hi - max(lo, cursor)
            cursor = hi
    return max(0.0, (b - a) - covered)


def row_seconds(f: Any) -> tuple[float, float, float, float, float]:
    """``(owned, repeated, new, can't tell, not judged)`` seconds of one row: together they are the
    file's length (the columns a buyer adds up)."""
    return (float(f.matched_seconds), _seconds_of(f, "repeated_seconds"), _seconds_of(f, "new_seconds"),
            _seconds_of(f, "cant_tell_seconds"), float(f.indeterminate_seconds))


def _seconds(value: float, tip: str) -> _Words:
    return _Words(fmt_hours(value) if value > SHOWN_S else "–", tip, value)


def _cells(f: Any, words: OwnerWords) -> tuple[_Words, ...]:
    """The eight cells of one offered file's row."""
    name = api.safe_text(f.query_file)
    pct = api.format_percent(f.matched_percent)
    below = len(f.below_floor)
    _, _, rep, new, cant, _ = _amounts(f)
    # The owned seconds are shown too, so the row's seconds add up to its length.
    owned = pct + (f" ({fmt_hours(f.matched_seconds)})" if f.matched_seconds > SHOWN_S else "")
    what = file_words(f)
    cant_tip = ("Some evidence of being owned that does not prove it (below the evidence floor, weak, the same "
                "motion as several owned episodes, or near-identical frames too still or too short to place "
                "in time): counted neither owned nor new")
    reasons = cant_tell_words(f)
    return (_Words(name, name, None),
            _Words(fmt_hours(f.duration_s), "", f.duration_s),
            _Words(owned + (f" (+{below} below floor)" if below else ""),
                   f"{fmt_hours(f.matched_seconds)} of {fmt_hours(f.duration_s)} {words.owns}", f.matched_percent),
            _seconds(rep, "Offered time that repeats other footage of the same offer (you would pay for it twice)"),
            _seconds(new, "Judged time shown not to be owned, and not repeated inside the offer"),
            _seconds(cant, cant_tip + (f".\n{reasons[0].upper()}{reasons[1:]}" if reasons else "")),
            _seconds(f.indeterminate_seconds, "Static or featureless time: counted neither way"),
            _Words(what, what, None))


def _sort_key(f: Any, column: int) -> Any:
    """What column ``column`` sorts ``f`` by, without making its cells."""
    if column == 0:
        return api.safe_text(f.query_file)
    if column == WHAT_COLUMN:
        return file_words(f)
    return _amounts(f)[column - 1]


def _seconds_of(f: Any, name: str) -> float:
    """A seconds field that reports written before it existed lack (0 there)."""
    return float(getattr(f, name, 0.0) or 0.0)


def _amounts(f: Any) -> tuple[float, float, float, float, float, float]:
    """The numbers behind columns 1-6 (length, percent owned, repeated, new, can't tell, not judged):
    what their cells show and what they sort by."""
    return (f.duration_s, f.matched_percent, _seconds_of(f, "repeated_seconds"), _seconds_of(f, "new_seconds"),
            _seconds_of(f, "cant_tell_seconds"), f.indeterminate_seconds)


class FileRows(QAbstractTableModel):
    """The offered files of one report, a row each, in the order the user sorted them.

    ``Qt.UserRole`` of column 0 is the file's position in ``report.files``; ``Qt.UserRole + 1``
    of the other number columns is the number the column sorts by.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.files: list[Any] = []
        self.words = YOUR_WORDS
        #: Row -> position in ``files`` (the sorted order).
        self.order: list[int] = []
        self._cells: dict[int, tuple[_Words, ...]] = {}
        #: Column -> its sort key per file (made once per report: clicking a title again only flips).
        self._keys: dict[int, list[Any]] = {}
        self._sorted: tuple[int, Qt.SortOrder] = (-1, Qt.SortOrder.AscendingOrder)

    def set_files(self, files: list[Any], words: OwnerWords) -> None:
        """Show ``files`` (kept in the order last chosen by clicking a column's title)."""
        self.beginResetModel()
        self.files, self.words, self._cells, self._keys = list(files), words, {}, {}
        self.order = self._ordered(list(range(len(self.files))), *self._sorted)
        self.endResetModel()
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(FILE_COLUMNS) - 1)

    def file_at(self, row: int) -> Any:
        return self.files[self.order[row]]

    def row_of(self, position: int) -> int:
        """The row showing ``files[position]``."""
        return self.order.index(position)

    def cell(self, row: int, column: int) -> _Words:
        """The words of one cell (made for its whole row the first time one is asked for)."""
        k = self.order[row]
        cells = self._cells.get(k)
        if cells is None:
            cells = self._cells[k] = _cells(self.files[k], self.words)
        return cells[column]

    # ------------------------------------------------------------------ QAbstractTableModel
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 (Qt's own default)
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(FILE_COLUMNS)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.cell(row, column).text
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.cell(row, column).tip or None
        if role == Qt.ItemDataRole.UserRole and column == 0:
            return self.order[row]  # the row's file, found again when selected
        if role == Qt.ItemDataRole.UserRole + 1:
            return self.cell(row, column).value
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(FILE_COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.words.column if section == 2 else FILE_COLUMNS[section]
        if role == Qt.ItemDataRole.InitialSortOrderRole:
            # Names A to Z; amounts largest first (the files that matter to a buyer on top).
            return (Qt.SortOrder.AscendingOrder if section in TEXT_COLUMNS else Qt.SortOrder.DescendingOrder).value
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Order the rows by ``column`` (``-1``: the report's order); ties keep their order."""
        self._sorted = (column, order)
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        positions = [self.order[i.row()] for i in before]
        self.order = self._ordered(self.order, column, order)
        rows = {k: r for r, k in enumerate(self.order)} if before else {}
        self.changePersistentIndexList(before, [self.index(rows[k], i.column())
                                                for k, i in zip(positions, before, strict=True)])
        self.layoutChanged.emit()

    def _ordered(self, order: list[int], column: int, how: Qt.SortOrder) -> list[int]:
        if not 0 <= column < len(FILE_COLUMNS):
            return sorted(order)
        keys = self._keys.get(column)
        if keys is None:
            keys = self._keys[column] = [_sort_key(f, column) for f in self.files]
        # Python's sort is stable, reversed too: equal rows keep the order they had.
        return sorted(order, key=keys.__getitem__, reverse=how == Qt.SortOrder.DescendingOrder)


class FileTable(QTableView):
    """The table of offered files, sortable by clicking a column's title, one row selected at a time.

    ``rowCount``, ``item`` and ``horizontalHeaderItem`` read what a cell shows with
    ``QTableWidget``'s names, so scripts and tests read this table like the others.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows = FileRows(self)
        self.setModel(self.rows)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
        self.horizontalHeader().setStretchLastSection(True)
        # No column chosen yet: the report's order until a title is clicked.
        self.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.setSortingEnabled(True)

    def rowCount(self) -> int:
        return self.rows.rowCount()

    def columnCount(self) -> int:
        return self.rows.columnCount()

    def item(self, row: int, column: int) -> Cell | None:
        if not (0 <= row < self.rows.rowCount() and 0 <= column < len(FILE_COLUMNS)):
            return None
        return Cell(self.rows.cell(row, column), self.rows.order[row] if column == 0 else None)

    def horizontalHeaderItem(self, column: int) -> Cell | None:
        text = self.rows.headerData(column, Qt.Orientation.Horizontal)
        return None if text is None else Cell(_Words(str(text), "", None))
