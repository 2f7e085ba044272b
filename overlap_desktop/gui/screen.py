""""Screen an offer": open a manifest, see what it covers, compare it with the library."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import SealField, count_of, fmt_hours, fmt_size, headline_label, show_error
from overlap_desktop.gui.state import AppState
from overlap_desktop.gui.workers import EtaEstimator, Job

__all__ = ["ScreenOfferPage", "preload_plot_library"]

#: The next step when the library is empty (the button beside it goes there).
ADD_FOOTAGE_FIRST = "Add your footage first: the folders of videos you own, in My library."


def preload_plot_library() -> threading.Thread | None:
    """Import the match plot (and pyqtgraph, about a second) in a background thread, once.

    Started when a comparison or the demo starts, so the import is done by the time the
    results appear instead of freezing the window then. Only modules are loaded there; every
    widget is still made on the UI thread.
    """
    global _PRELOAD
    if _PRELOAD is None and "overlap_desktop.gui.plot" not in sys.modules:
        _PRELOAD = threading.Thread(target=importlib.import_module, args=("overlap_desktop.gui.plot",),
                                    name="overlap-preload-plot", daemon=True)
        _PRELOAD.start()
    return _PRELOAD


_PRELOAD: threading.Thread | None = None


#: Shown under the offer before comparing.
COMPARE_HINT = ("Click “Compare with my library” to find out how much of this offer you already own. "
                "Only fingerprints are compared; nothing leaves this computer.")


def api_tip(term: str) -> str:
    """The glossary's explanation of ``term`` (the same words as docs/glossary.md and the HTML report)."""
    return api.glossary_tip(term)


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d and d[k] not in (None, ""):
            return d[k]
    return None


class ScreenOfferPage(QWidget):
    """Open a manifest → summary → Compare (worker) → results.

    Signals:
        inspected(object): the manifest summary is shown (its ``api.OfferCheck``).
        compared(object): a comparison finished (the report).
        failed(str): opening or comparing failed (the message shown).
    """

    inspected = Signal(object)
    compared = Signal(object)
    failed = Signal(str)

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.manifest_path: Path | None = None
        self.summary: api.OfferCheck | None = None
        self.report: Any = None
        self.inspect_job: Job | None = None
        self.compare_job: Job | None = None
        self.demo_job: Job | None = None
        self.results: Any = None
        #: Index and config the shown report was made against (the demo uses its own).
        self.report_index: Path | None = None

        lay = QVBoxLayout(self)
        lay.setContentsMargins(16, 10, 16, 10)
        lay.setSpacing(6)
        # The title row shows while nothing is open; with an offer open, the offer's own box
        # is the title and "Open manifest…" moves into it (height goes to the results).
        self.title_row = QWidget()
        head = QHBoxLayout(self.title_row)
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(headline_label("Screen an offer"), 1)
        self.open_button = QPushButton("Open manifest…")
        self.open_button.setAccessibleName("Open manifest")
        self.open_button.clicked.connect(self._choose)
        head.addWidget(self.open_button)
        lay.addWidget(self.title_row)

        self.stack = QStackedWidget()
        self.stack.currentChanged.connect(lambda i: self.title_row.setVisible(i == 0))
        lay.addWidget(self.stack, 1)

        self._build_empty_page()
        self._build_offer_page()

    def _build_empty_page(self) -> None:
        """Page 0: nothing open yet (drop hint and recently opened manifests)."""
        empty = QWidget()
        el = QVBoxLayout(empty)
        drop = QLabel("Drop the seller's manifest file (.ovlm) anywhere on this window, "
                      "or click \"Open manifest…\".\n\nA manifest holds fingerprints of the offered "
                      "footage, not the footage itself: the seller keeps the video until you buy.")
        drop.setAlignment(Qt.AlignmentFlag.AlignCenter)
        drop.setWordWrap(True)
        drop.setFrameShape(QFrame.Shape.StyledPanel)
        drop.setMinimumHeight(160)
        el.addWidget(drop)
        el.addWidget(QLabel("Recently opened:"))
        self.recent_list = QListWidget()
        self.recent_list.setAccessibleName("Recently opened manifests")
        self.recent_list.itemActivated.connect(
            lambda it: self.open_manifest(Path(it.data(Qt.ItemDataRole.UserRole))))
        el.addWidget(self.recent_list, 1)
        self.stack.addWidget(empty)
        self.state.recent_changed.connect(self._fill_recent)
        self._fill_recent()

    def _build_offer_page(self) -> None:
        """Page 1: an offer's summary box, its buttons, the progress line and the results below."""
        # Page 1: an offer. The summary is a compact box (each value right beside its label),
        # so the results below get the height.
        offer = QWidget()
        ol = QVBoxLayout(offer)
        ol.setContentsMargins(0, 0, 0, 0)
        self.summary_frame = QFrame()
        self.summary_frame.setFrameShape(QFrame.Shape.StyledPanel)
        self.summary_frame.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        sl = QHBoxLayout(self.summary_frame)
        sl.setContentsMargins(10, 6, 10, 6)
        self.form = QGridLayout()
        self.form.setHorizontalSpacing(10)
        self.form.setVerticalSpacing(4)
        self.form.setColumnStretch(1, 2)
        self.form.setColumnStretch(3, 3)
        self.form.setColumnStretch(5, 3)
        self.fields: dict[str, QLabel] = {}
        # Two rows, not three: at 1366x768 every line of height goes to the results below.
        layout_rows = ((0, 0, "label", "Offer"), (0, 2, "amount", "Footage"), (0, 4, "made", "Made"),
                       (1, 4, "compat", "Can be compared"))
        for row, col, key, label in layout_rows:
            v = QLabel("–")
            # Values come from the seller's manifest: never let Qt render them as rich text.
            v.setTextFormat(Qt.TextFormat.PlainText)
            v.setWordWrap(True)
            v.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            v.setAccessibleName(label)
            v.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
            name = QLabel(label + ":")
            name.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            self.form.addWidget(name, row, col, Qt.AlignmentFlag.AlignTop)
            self.form.addWidget(v, row, col + 1, Qt.AlignmentFlag.AlignTop)
            self.fields[key] = v
        seal_name = QLabel("Seal:")
        seal_name.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        seal_name.setToolTip(api_tip("seal"))
        self.seal = SealField()
        self.form.addWidget(seal_name, 1, 0)
        self.form.addWidget(self.seal, 1, 1, 1, 3)
        self._build_signature_row(2)
        self.form.setRowStretch(3, 1)  # extra height (a tall button column) goes below the facts
        sl.addLayout(self.form, 1)
        self._build_buttons(sl)

        ol.addWidget(self.summary_frame)
        self.progress_label = QLabel("")
        self.progress_label.setTextFormat(Qt.TextFormat.PlainText)  # names offered files
        self.progress_bar = QProgressBar()
        self.progress_bar.setAccessibleName("Comparison progress")
        self.progress_bar.hide()
        self.progress_label.hide()
        ol.addWidget(self.progress_label)
        ol.addWidget(self.progress_bar)
        self.results_holder = QVBoxLayout()
        ol.addLayout(self.results_holder, 1)
        # Before any results the space below the summary stays empty instead of stretching the box.
        self.filler = QLabel(COMPARE_HINT)
        self.filler.setWordWrap(True)
        self.filler.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        # Enabled: a disabled label is drawn too faint to read (below 4.5:1 contrast; seen under Xvfb).
        self.filler.setAccessibleName("What to do next")
        self.results_holder.addWidget(self.filler, 1)
        self.stack.addWidget(offer)

    def _build_signature_row(self, row: int) -> None:
        """Who signed the offer (issue 37): "signed by ..., key ...", "unsigned", or a warning."""
        name = QLabel("Signature:")
        name.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        self.signature = QLabel("–")
        self.signature.setTextFormat(Qt.TextFormat.PlainText)  # the vendor's name is the vendor's text
        self.signature.setWordWrap(True)
        self.signature.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.signature.setAccessibleName("Signature")
        self.form.addWidget(name, row, 0, Qt.AlignmentFlag.AlignTop)
        self.form.addWidget(self.signature, row, 1, 1, 3)

    def _show_signature(self, info: dict[str, Any] | None) -> None:
        """The signer line; a changed vendor key is shown in bold red, the way it deserves."""
        facts = (info or {}).get("signature")
        text = api.signature_sentence(facts) if info is not None else ""
        self.signature.setText(text[:1].upper() + text[1:] if text else "–")
        changed = api.signature_changed(facts)
        self.signature.setStyleSheet("color: #b3261e; font-weight: bold;" if changed else "")
        self.signature.setToolTip("Compare the key fingerprint with the one the vendor gave you (e.g. in the "
                                  "contract); `overlap vendors trust KEYFILE` pins it." if info else "")

    def _build_buttons(self, sl: QHBoxLayout) -> None:
        """The summary box's buttons, and the next step when comparing is not possible yet."""
        btns = QVBoxLayout()
        self.compare_button = QPushButton("Compare with my library")
        self.compare_button.setAccessibleName("Compare with my library")
        self.compare_button.setDefault(True)
        self.compare_button.clicked.connect(self.compare)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Cancel comparison")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        # When comparing is not possible yet: the next step in plain words, and a way there.
        self.next_step = QLabel("")
        self.next_step.setWordWrap(True)
        self.next_step.setTextFormat(Qt.TextFormat.PlainText)
        self.next_step.setAccessibleName("Next step")
        self.next_step.setMaximumWidth(240)
        self.next_step.hide()
        self.library_button = QPushButton("Go to My library")
        self.library_button.setAccessibleName("Go to My library")
        self.library_button.clicked.connect(self._go_library)
        self.library_button.hide()
        self.open_other_button = QPushButton("Open another…")
        self.open_other_button.setAccessibleName("Open another manifest")
        self.open_other_button.clicked.connect(self._choose)
        btns.addWidget(self.compare_button)
        btns.addWidget(self.cancel_button)
        btns.addWidget(self.open_other_button)
        btns.addWidget(self.next_step)
        btns.addWidget(self.library_button)
        btns.addStretch(1)
        sl.addLayout(btns)

    def _say(self, text: str) -> None:
        """Progress text under the summary; the line takes no height while there is nothing to say."""
        self.progress_label.setText(text)
        self.progress_label.setVisible(bool(text))

    def jobs(self) -> list[Job | None]:
        extra = self.results.jobs() if self.results is not None else []
        return [self.inspect_job, self.compare_job, self.demo_job, *extra]

    def _fill_recent(self) -> None:
        self.recent_list.clear()
        for p in self.state.recent_manifests():
            it = QListWidgetItem(f"{Path(p).name}    ({Path(p).parent})")
            it.setData(Qt.ItemDataRole.UserRole, p)
            it.setToolTip(p)
            self.recent_list.addItem(it)

    def _choose(self) -> None:
        win = self.window()
        if hasattr(win, "choose_manifest"):
            win.choose_manifest()

    # ------------------------------------------------------------------ open / inspect
    def open_manifest(self, path: Path) -> Job | None:
        """Read ``path``'s summary in a worker and show it; a bad file gives a clear message."""
        path = Path(path)
        try:
            config = self.state.config()
        except Exception as exc:
            self._fail("Your settings have a problem", exc)
            return None
        self.manifest_path = path
        self.report = None
        self._clear_results()
        self.stack.setCurrentIndex(1)
        self.fields["label"].setText(f"Reading {path.name}…")
        for k in ("amount", "made", "compat"):
            self.fields[k].setText("")
        self.seal.set_seal("")
        self._show_signature(None)
        self._set_next_step(None)
        self.compare_button.setEnabled(False)
        self._say("")
        job = Job(api.check_offer, path, self.state.index_path, parent=self, with_progress=False, config=config)
        job.succeeded.connect(self._on_inspected)
        job.failed.connect(lambda exc: self._on_open_failed(path, exc))
        self.inspect_job = job
        job.start()
        return job

    def _on_open_failed(self, path: Path, exc: BaseException) -> None:
        self.manifest_path = None
        self.stack.setCurrentIndex(0)
        self._fail(f"{path.name} cannot be screened", exc)

    def _fail(self, title: str, exc: BaseException) -> None:
        box = show_error(self.window(), title, exc)
        self.failed.emit(box.text())

    def _on_inspected(self, summary: api.OfferCheck, *, remember: bool = True) -> None:
        self.summary = summary
        info = summary.info
        assert self.manifest_path is not None
        if remember:
            self.state.add_recent(self.manifest_path)
        label = _first(info, "label") or self.manifest_path.name
        self.fields["label"].setText(api.safe_text(label, max_len=120))
        n_files = _first(info, "files", "n_files", "file_count")
        if isinstance(n_files, list):
            n_files = len(n_files)
        seconds = _first(info, "duration_s", "seconds", "total_seconds")
        hours = _first(info, "hours")
        if seconds is None and hours is not None:
            seconds = float(hours) * 3600.0
        size = _first(info, "bytes")
        parts = []
        if seconds is not None:
            parts.append(fmt_hours(float(seconds)) + " of video")
        if n_files is not None:
            parts.append(f"in {count_of(n_files, 'file')}")
        text = " ".join(parts) or "–"
        if size:
            text += f" (the manifest itself is {fmt_size(float(size))})"
        self.fields["amount"].setText(text)
        root = _first(info, "root", "merkle_root") or "–"
        self.seal.set_seal(str(root))
        self._show_signature(info)
        made = []
        if _first(info, "created"):
            made.append(api.format_date(str(info["created"])))
        else:
            # The CLI leaves the date out unless asked (--stamp-time): say so rather than nothing.
            made.append("date not recorded (exported without --stamp-time)")
        if _first(info, "creator"):
            made.append(f"with {info['creator']}")
        self.fields["made"].setText(api.safe_text(" ".join(made)) if made else "–")
        compat = summary.compatible
        if compat is True:
            self.fields["compat"].setText(f"Yes: made with the same fingerprint settings as your library "
                                          f"({count_of(summary.library_files, 'file')}).")
        elif compat is False:
            self.fields["compat"].setText("No: " + summary.why + " Ask the seller for a manifest made "
                                          "with a current version of overlap.")
        elif summary.library_empty:
            self.fields["compat"].setText("Not yet: your library is empty.")
        else:
            self.fields["compat"].setText(f"Not now: {summary.why}.")
        self.compare_button.setEnabled(compat is True)
        self._set_next_step(summary)
        self.inspected.emit(summary)

    def _set_next_step(self, summary: api.OfferCheck | None) -> None:
        """Say why "Compare" is disabled and what to do, with a button to get there."""
        empty = summary is not None and summary.library_empty
        self.next_step.setText(ADD_FOOTAGE_FIRST if empty else "")
        self.next_step.setVisible(empty)
        self.filler.setText("" if empty else COMPARE_HINT)
        self.library_button.setVisible(empty)
        self.compare_button.setToolTip(ADD_FOOTAGE_FIRST if empty else
                                       "Check the offer's fingerprints against the footage you own")

    def _go_library(self) -> None:
        win = self.window()
        if hasattr(win, "go"):
            win.go("library")

    # ------------------------------------------------------------------ compare
    def compare(self) -> Job | None:
        """Compare the open manifest with the library in a worker."""
        if self.manifest_path is None:
            return None
        if self.summary is not None and self.summary.compatible is not True:
            self._set_next_step(self.summary)
            return None
        try:
            config = self.state.config()
        except Exception as exc:
            self._fail("Your settings have a problem", exc)
            return None
        job = Job(api.compare, self.manifest_path, self.state.index_path, parent=self, config=config)
        preload_plot_library()
        self._start_long(job, "Comparing with your library…")
        job.succeeded.connect(lambda rep: self.show_report(rep, self.state.index_path))
        self.compare_job = job
        job.start()
        return job

    def _start_long(self, job: Job, text: str) -> None:
        job.progress.connect(lambda p: self._on_progress(job, p))
        job.failed.connect(lambda exc: self._long_failed("The comparison stopped", exc))
        job.cancelled.connect(lambda _e: self._say("Cancelled."))
        job.finished.connect(self._long_done)
        self._eta = EtaEstimator()
        self._say(text)
        self.progress_bar.setRange(0, 0)
        self.progress_bar.show()
        self.compare_button.setEnabled(False)
        self.open_button.setEnabled(False)
        self.open_other_button.setEnabled(False)
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)

    def _on_progress(self, job: Job, p: Any) -> None:
        frac = None
        if p.total:
            frac = max(0.0, min(1.0, float(p.done) / float(p.total)))
            self.progress_bar.setRange(0, 1000)
            self.progress_bar.setValue(int(frac * 1000))
        eta = self._eta.update(frac)
        msg = p.message or {"compare": "Comparing with your library", "index": "Fingerprinting",
                            "search": "Searching your library"}.get(p.stage, "Working")
        if p.current:
            msg += f" — {Path(p.current).name}"
        self._say(msg + (f" ({eta})" if eta else ""))

    def _long_failed(self, title: str, exc: BaseException) -> None:
        self._say("Stopped because of a problem.")
        self._fail(title, exc)

    def _long_done(self) -> None:
        self.progress_bar.hide()
        self.cancel_button.hide()
        self.open_button.setEnabled(True)
        self.open_other_button.setEnabled(True)
        self.compare_button.setEnabled(self.manifest_path is not None
                                      and self.summary is not None and self.summary.compatible is True)

    def cancel(self) -> None:
        for job in (self.compare_job, self.demo_job):
            if job is not None and job.running:
                job.cancel()
        self.cancel_button.setEnabled(False)
        self._say("Cancelling…")

    # ------------------------------------------------------------------ results
    def _clear_results(self) -> None:
        if self.results is not None:
            self.results.hide()
        self.filler.show()

    def show_report(self, report: Any, index_path: Path | None = None) -> None:
        """Show a finished comparison."""
        self.report = report
        self.report_index = index_path
        if self.results is None:
            from overlap_desktop.gui.results import ResultsView

            self.results = ResultsView(self)
            self.results_holder.addWidget(self.results, 1)
        self.filler.hide()
        self.results.show()
        self.results.set_report(report)
        self._say("")
        self.compared.emit(report)

    # ------------------------------------------------------------------ demo
    def run_demo(self, out_dir: Path | None = None) -> Job | None:
        """Run the bundled demo (its own footage, index and manifest) and show its report."""
        try:
            run = api.run_demo
            default_demo_dir = api.default_demo_dir
        except Exception as exc:
            self._fail("The demo is not available", exc)
            return None
        out = Path(out_dir) if out_dir is not None else default_demo_dir()
        self.stack.setCurrentIndex(1)
        self._clear_results()
        self.fields["label"].setText("Demo: making sample footage and a sample offer…")
        for k in ("amount", "made", "compat"):
            self.fields[k].setText("")
        self.seal.set_seal("")
        try:
            config: Any = self.state.config()
        except Exception:  # a settings problem shows when comparing; the demo still runs
            config = None
        job = Job(_demo_then_check, run, out, self.state.index_path, config, parent=self)
        preload_plot_library()
        self._start_long(job, "Running the demo…")
        job.succeeded.connect(self._on_demo_done)
        self.demo_job = job
        job.start()
        return job

    def _on_demo_done(self, done: tuple[Any, api.OfferCheck, Any]) -> None:
        result, mine, report = done
        self.manifest_path = Path(result.manifest)
        self._on_inspected(mine, remember=False)
        self.fields["compat"].setText("The demo compared the offer with its own sample library (not yours).")
        self.show_report(report, Path(result.index))


def _demo_then_check(run: Any, out: Path, index_path: Path, config: Any, **callbacks: Any
                     ) -> tuple[Any, api.OfferCheck, Any]:
    """Run the demo, then read its offer and check it against *your* library, in the worker.

    "Compare with my library" must reflect your library (empty after a first demo), not the
    demo's sample library its report was made with; opening that library is database work,
    which stays off the UI thread.
    """
    result = run(out, **callbacks)
    manifest = Path(result.manifest)
    try:
        info = api.inspect_manifest(manifest)
    except Exception:  # the summary is a nicety; the report is what matters
        info = {"label": "Demo offer"}
    try:
        if config is None:
            raise ValueError("your settings could not be read")
        mine = api.check_offer(manifest, index_path, config=config)
    except Exception as exc:  # a library problem is reported when comparing; the demo still shows
        mine = api.OfferCheck(info, None, f"the offer cannot be checked ({exc})")
    report = result.report if result.report is not None else api.load_report_json(result.report_json)
    return result, dataclasses.replace(mine, info=info), report
