"""The library page's offer to rebuild search shards written by an earlier version.

Shards written by an earlier version are slower (bench/RESULTS.md) and, before seeds were taken
at turning phases, can miss short copies of fast-moving footage (``shards.SEED_STAGGER``): a
result already saved stays what it was, so this is an offer on the library page, not a warning
on reports. The rebuild reads the index database, not the footage, and runs in a worker;
comparisons keep working meanwhile (streams without a shard are searched from temporary ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from overlap_desktop import api
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.workers import Job

__all__ = ["ShardUpgradeBanner", "rebuild_search_shards"]

_TIP = "Rebuilds the search index from the stored fingerprints: no video is read"


def rebuild_search_shards(index_path: Path, config: api.Config, *, progress: Any = None,
                          cancel: Any = None) -> int:
    """Rebuild every search shard of the index from its database (runs in a worker thread).

    Returns:
        The number of shards built.

    Raises:
        IndexBusyError: another process (an indexing job) is writing to the index.
    """
    with api.open_index(Path(index_path), config=config, create=False) as idx:
        return int(idx.rebuild_shards(cancel=cancel, progress=progress))


class ShardUpgradeBanner(QFrame):
    """Shown while the index holds shards in an older layout; its button rebuilds them.

    Signals:
        rebuilt(int): the rebuild finished (number of shards built); the page reloads its totals.
    """

    rebuilt = Signal(int)

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.job: Job | None = None
        self.setFrameShape(QFrame.Shape.StyledPanel)
        outer = QVBoxLayout(self)
        row = QHBoxLayout()
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QPushButton("Rebuild now")
        self.button.setAccessibleName("Rebuild the library's search index")
        self.button.setToolTip(_TIP)
        self.button.clicked.connect(self.start)
        row.addWidget(self.label, 1)
        row.addWidget(self.button)
        outer.addLayout(row)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy until the first report
        self.bar.setAccessibleName("Rebuilding the search index")
        self.bar.hide()
        outer.addWidget(self.bar)
        self.hide()

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.running

    def update_from(self, stats: dict[str, Any], *, indexing: bool = False) -> None:
        """Show or hide the offer for the index's totals (``stats`` of ``Index.stats()``)."""
        if self.running:
            return
        older, total = int(stats.get("shards_older_layout", 0)), int(stats.get("shards", 0))
        if older <= 0:
            self.hide()
            return
        which = ("your library's search index was" if older >= total else
                 f"{older} of the {total} parts of your library's search index were")
        took = api.format_estimate(float(stats.get("shards_rebuild_estimate_s", 0.0)))
        self.label.setText(
            f"Comparisons can be faster and find more: {which} built by an earlier version of overlap, "
            "which can miss short copies of fast-moving footage. Rebuilding reads no video; for this "
            f"library it should take {took}.")
        self.button.setEnabled(not indexing)
        self.button.setToolTip("Wait until indexing has finished" if indexing else _TIP)
        self.show()

    def start(self) -> Job | None:
        """Rebuild in a worker; returns the job (``None`` when one is running or settings are bad)."""
        if self.running:
            return None
        try:
            config = self.state.config()
        except Exception as exc:
            self.label.setText("Your settings have a problem: " + str(exc))
            return None
        job = Job(rebuild_search_shards, self.state.index_path, config, parent=self, with_cancel=True)
        job.progress.connect(self._on_progress)
        job.succeeded.connect(self._on_done)
        job.failed.connect(self._on_failed)
        job.cancelled.connect(lambda _exc: self._on_failed(None))
        self.job = job
        self.button.setEnabled(False)
        self.bar.show()
        self.label.setText("Rebuilding the search index… Comparisons still work meanwhile.")
        job.start()
        return job

    def _on_progress(self, p: Any) -> None:
        """The share of the fingerprints read into new shards, and which shard is being built."""
        if p.total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(1000 * max(0.0, min(1.0, float(p.done) / float(p.total)))))
        if p.message:
            self.label.setText("Rebuilding the search index… Comparisons still work meanwhile. "
                               f"({p.message})")

    def _on_done(self, built: Any) -> None:
        self.bar.hide()
        self.hide()
        self.rebuilt.emit(int(built))

    def _on_failed(self, exc: Any) -> None:
        self.bar.hide()
        self.button.setEnabled(True)
        if isinstance(exc, api.IndexBusyError):
            self.label.setText("The library is being indexed right now. Rebuild the search index when "
                               "indexing has finished.")
        elif exc is None:
            self.label.setText("The rebuild was stopped. Parts already rebuilt are kept; click "
                               "\"Rebuild now\" to finish.")
        else:
            self.label.setText(f"The search index could not be rebuilt: {exc}. Nothing was lost; "
                               "try again, or run `overlap index --rebuild-shards`.")
