"""The vendor's story with a robot dataset that stores no frame rate (ALOHA HDF5 episodes).

The wizard used to refuse both episodes, point at ``overlap index --frame-rate`` (no screen had
a field for it), say "3 files" and save a manifest without them. Now it asks for the rate per
folder, filled with ALOHA's 50 Hz, remembers it, and a manifest never leaves out a file the
vendor added without listing it and asking. Driven with the mouse and keyboard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog, QWizard

from overlap_desktop import api
from overlap_desktop.gui import export_wizard as ew
from tests.footage import make_clip
from tests.robotdata import write_aloha

LEFT = Qt.MouseButton.LeftButton


def _episode(seed: int, frames: int = 700) -> dict[str, np.ndarray]:
    """A camera panning over a random scene, a pixel a frame (never repeating itself)."""
    rng = np.random.default_rng(seed)
    scene = rng.integers(0, 255, (12, 16 + frames // 4, 3), dtype=np.uint8).repeat(4, axis=0).repeat(4, axis=1)
    return {"cam_high": np.stack([scene[:, i:i + 64] for i in range(frames)])}


@pytest.fixture()
def offer(tmp_path: Path) -> Path:
    folder = tmp_path / "aloha offer"
    make_clip(folder / "overview.mp4", 5, duration=6.0, fps=12.0, size=(160, 120))
    write_aloha(folder / "episode_0.hdf5", _episode(1))
    write_aloha(folder / "episode_1.hdf5", _episode(2))
    return folder


def _add_folder_by_mouse(qtbot: Any, wiz: ew.ExportWizard, folder: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, **_k: str(folder)))
    page = wiz.folders_page
    with qtbot.waitSignal(page.footage_checked, timeout=60_000):
        qtbot.mouseClick(page.add_button, LEFT)


def _next(qtbot: Any, wiz: ew.ExportWizard) -> None:
    button = wiz.button(QWizard.WizardButton.NextButton)
    qtbot.waitUntil(button.isEnabled, timeout=120_000)
    qtbot.mouseClick(button, LEFT)


def _to_options(qtbot: Any, wiz: ew.ExportWizard) -> None:
    _next(qtbot, wiz)
    qtbot.waitUntil(wiz.dedupe.isComplete, timeout=120_000)
    _next(qtbot, wiz)
    assert wiz.currentId() == ew.PAGE_OPTIONS


def _save(qtbot: Any, wiz: ew.ExportWizard, out: Path) -> Any:
    opts = wiz.options_page
    opts.out.clear()
    qtbot.keyClicks(opts.out, str(out))
    with qtbot.waitSignal(wiz.save.done, timeout=60_000):
        _next(qtbot, wiz)
    return api.inspect_manifest(out, record_vendor=False)


def test_the_wizard_asks_for_the_rate_per_folder_and_remembers_it(
        qtbot: Any, state: Any, offer: Path, tmp_path: Path, monkeypatch: Any) -> None:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    _add_folder_by_mouse(qtbot, wiz, offer, monkeypatch)
    _next(qtbot, wiz)
    fp = wiz.fingerprint
    qtbot.waitUntil(fp.isComplete, timeout=120_000)
    ask = fp.ask
    assert ask.isVisible()
    assert "2 items could not be read because they store no frame rate" in ask.intro.text()
    field = ask.fields[str(offer.resolve())]
    assert field.value() == 50.0  # ALOHA's usual rate, prefilled
    labels = [w.text() for w in ask.findChildren(type(ask.intro))]
    assert any("2 ALOHA HDF5 episodes in “aloha offer” store no frame rate" in t for t in labels)
    # The vendor's episodes were recorded at 25 Hz: typed over the suggestion.
    field.selectAll()
    qtbot.keyClicks(field, "25")
    qtbot.keyClick(field, Qt.Key.Key_Tab)
    assert field.value() == 25.0
    qtbot.mouseClick(ask.button, LEFT)
    qtbot.waitUntil(lambda: fp.isComplete() and fp.result is not None and not fp.result.failed, timeout=120_000)
    assert not ask.isVisible()
    assert state.folder_frame_rates() == {str(offer.resolve()): 25.0}
    _to_options(qtbot, wiz)
    assert not wiz.options_page.left_out.isVisible()
    info = _save(qtbot, wiz, tmp_path / "aloha.ovlm")
    assert info["files"] == 3
    assert wiz.save.summary.text().startswith("3 files") and "Left out" not in wiz.save.summary.text()
    # 700 frames at 25 Hz: 28 s each (at 50 Hz it would read as 14 s).
    episodes = [f for f in api.library_files(wiz.workspace(), config=state.config()) if f.path.endswith(".hdf5")]
    assert [f.frame_rate for f in episodes] == [25.0, 25.0]

    # Remembered: the next offer of the same folder reads them at 25 Hz without asking.
    again = ew.ExportWizard(state)
    qtbot.addWidget(again)
    again.show()
    _add_folder_by_mouse(qtbot, again, offer, monkeypatch)
    again.folders_page.name.setText("second offer")
    _next(qtbot, again)
    qtbot.waitUntil(again.fingerprint.isComplete, timeout=120_000)
    assert not again.fingerprint.result.failed and not again.fingerprint.ask.isVisible()


def test_a_manifest_never_leaves_out_files_silently(qtbot: Any, state: Any, offer: Path, tmp_path: Path,
                                                    monkeypatch: Any) -> None:
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    _add_folder_by_mouse(qtbot, wiz, offer, monkeypatch)
    _next(qtbot, wiz)
    qtbot.waitUntil(wiz.fingerprint.isComplete, timeout=120_000)
    assert wiz.fingerprint.ask.isVisible()
    _to_options(qtbot, wiz)  # no rate given
    block = wiz.options_page.left_out
    assert block.isVisible()
    text = block.text.text()
    assert text.startswith("2 files you added could not be read and will not be in the manifest")
    assert "episode_0.hdf5: stores no frame rate (give it on the fingerprinting page)" in text
    assert "episode_0.hdf5" in text and "episode_1.hdf5" in text
    assert not wiz.button(QWizard.WizardButton.NextButton).isEnabled()
    qtbot.mouseClick(block.agree, LEFT, pos=QPoint(8, block.agree.height() // 2))
    assert block.agree.isChecked()
    info = _save(qtbot, wiz, tmp_path / "without.ovlm")
    assert info["files"] == 1
    summary = wiz.save.summary.text()
    assert summary.startswith("1 file,") and "Left out (could not be read): 2 files, episode_0.hdf5" in summary


def _rows(page: Any) -> dict[str, int]:
    return {page.table.item(r, 0).text(): r for r in range(page.table.rowCount())}


def test_my_library_asks_for_the_rate_too(qtbot: Any, state: Any, offer: Path, tmp_path: Path,
                                          monkeypatch: Any) -> None:
    from overlap_desktop.gui.library import LibraryPage

    other = tmp_path / "zarr-like elsewhere"  # a second folder with no rate needed: never asked about
    make_clip(other / "clip.mp4", 9, duration=4.0, fps=12.0, size=(160, 120))
    page = LibraryPage(state)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    qtbot.waitUntil(lambda: page.load_job is not None and not page.load_job.running, timeout=60_000)
    for folder in (offer, other):
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, f=folder, **_k: str(f)))
        with qtbot.waitSignal(page.indexing_finished, timeout=120_000):
            qtbot.mouseClick(page.add_button, LEFT)
        qtbot.waitUntil(lambda: not page.indexing, timeout=60_000)
        if folder == offer:
            assert page.rate_ask.isVisible() and list(page.rate_ask.fields) == [str(offer)]
            assert page.rate_ask.fields[str(offer)].value() == 50.0
            qtbot.waitUntil(lambda: "episode_0.hdf5" in _rows(page), timeout=60_000)
            rows = _rows(page)
            assert page.table.item(rows["episode_0.hdf5"], 5).text().startswith("Stores no frame rate: give it")
        else:
            assert not page.rate_ask.isVisible()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, **_k: str(offer)))
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000):
        qtbot.mouseClick(page.add_button, LEFT)
    assert page.rate_ask.isVisible()
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000) as got:
        qtbot.mouseClick(page.rate_ask.button, LEFT)
    assert got.args[0].files_seen == 3 and not got.args[0].failed
    assert not page.rate_ask.isVisible()
    assert state.folder_frame_rates() == {str(offer): 50.0}
    files = {Path(f.path).name: f for f in api.library_files(state.index_path, config=state.config())}
    assert files["episode_0.hdf5"].status == "ok" and files["episode_0.hdf5"].frame_rate == 50.0
    # A re-scan keeps the remembered rate: nothing is refused again.
    qtbot.waitUntil(lambda: not page.indexing, timeout=60_000)
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000) as got:
        page.rescan_button.click()
    assert not got.args[0].failed and not page.rate_ask.isVisible()


def test_robot_dataset_story_vendor_signs_buyer_screens(qtbot: Any, state: Any, offer: Path, tmp_path: Path,
                                                        monkeypatch: Any) -> None:
    """The vendor's story with a robot dataset, then the buyer's: the vendor gives the rate, makes a
    signing key and saves a signed manifest; the buyer adds an owned copy of one episode to My
    library (giving its rate there), screens the offer and finds that episode owned, the other new."""
    import shutil

    from overlap_desktop.gui.main_window import MainWindow
    from overlap_desktop.gui.state import AppState

    # The vendor.
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    _add_folder_by_mouse(qtbot, wiz, offer, monkeypatch)
    _next(qtbot, wiz)
    qtbot.waitUntil(wiz.fingerprint.isComplete, timeout=120_000)
    qtbot.mouseClick(wiz.fingerprint.ask.button, LEFT)  # ALOHA's 50 Hz, as suggested
    qtbot.waitUntil(lambda: wiz.fingerprint.isComplete() and not wiz.fingerprint.result.failed, timeout=120_000)
    _to_options(qtbot, wiz)
    block = wiz.options_page.signing
    qtbot.waitUntil(lambda: block.loaded and block.create_button.isVisible(), timeout=10_000)
    qtbot.mouseClick(block.create_button, LEFT)
    qtbot.waitUntil(lambda: block.dialog is not None and block.dialog.isVisible(), timeout=5_000)
    qtbot.keyClicks(block.dialog.name, "Acme Robotics")
    with qtbot.waitSignal(block.dialog.created, timeout=10_000):
        qtbot.mouseClick(block.dialog.create_button, LEFT)
    qtbot.waitUntil(lambda: block.sign.isVisible() and block.sign.isChecked(), timeout=10_000)
    manifest = tmp_path / "aloha-signed.ovlm"
    info = _save(qtbot, wiz, manifest)
    assert info["files"] == 3 and "Signed by Acme Robotics" in wiz.save.summary.text()

    # The buyer, with a library of their own holding one of the two episodes.
    owned = tmp_path / "lab footage"
    owned.mkdir()
    shutil.copy(offer / "episode_0.hdf5", owned / "recorded-episode.hdf5")
    buyer = AppState({"index.path": str(tmp_path / "buyer-index")})
    w = MainWindow(buyer)
    qtbot.addWidget(w)
    w.resize(1366, 740)
    w.show()
    w.go("library")
    page = w.library
    qtbot.waitUntil(lambda: page.load_job is not None and not page.load_job.running, timeout=60_000)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, **_k: str(owned)))
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000):
        qtbot.mouseClick(page.add_button, LEFT)
    qtbot.waitUntil(lambda: not page.indexing and page.rate_ask.isVisible(), timeout=60_000)
    with qtbot.waitSignal(page.indexing_finished, timeout=120_000) as got:
        qtbot.mouseClick(page.rate_ask.button, LEFT)
    assert got.args[0].indexed == 1 and not got.args[0].failed
    qtbot.waitUntil(lambda: not page.indexing, timeout=60_000)
    with qtbot.waitSignal(w.screen.inspected, timeout=120_000):
        w.open_manifest(manifest)
    assert w.screen.signature.text().startswith("Signed by Acme Robotics")
    qtbot.waitUntil(w.screen.compare_button.isEnabled, timeout=60_000)
    with qtbot.waitSignal(w.screen.compared, timeout=180_000) as done:
        qtbot.mouseClick(w.screen.compare_button, LEFT)
    report = done.args[0]
    by_name = {Path(f.query_file).name: f for f in report.files}
    assert set(by_name) == {"episode_0.hdf5", "episode_1.hdf5", "overview.mp4"}
    ep0, ep1 = by_name["episode_0.hdf5"], by_name["episode_1.hdf5"]
    assert ep0.matched_percent > 90 and ep1.matched_seconds == 0.0
    ft = w.screen.results.file_table
    rows = {ft.item(r, 0).text(): r for r in range(ft.rowCount())}
    ep1_row = rows["episode_1.hdf5"]
    assert ft.item(ep1_row, 2).text() == "0%"
