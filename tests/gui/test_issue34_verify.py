"""Issue 34, item 13: the delivery check shows the quote's label and seal on its first page, gives
Missing rows their details, names the delivered file behind each hidden name, and verifies
another folder against the same quote."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QWizard

from overlap_desktop import api
from overlap_desktop.gui import verify_wizard as vw
from tests.gui.conftest import isolated_config


@pytest.fixture(scope="module")
def hidden_manifest(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offer's manifest with file names replaced by numbers."""
    home = tmp_path_factory.mktemp("hidden")
    idx = home / "index"
    api.index_paths([footage["offer"]], index=idx, config=isolated_config(idx, home))
    out = home / "hidden.ovlm"
    api.export_manifest(idx, out, label="Hidden names", anonymize=True)
    return out


def _run_to_result(qtbot: Any, wiz: Any, folder: Path) -> None:
    wiz.folder_page.edit.setText(str(folder))
    wiz.next()
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=60_000)


def test_first_page_shows_the_quote_then_missing_rows_say_what_was_quoted(
        qtbot: Any, state: Any, offer_manifest: Path, footage: dict[str, Path], tmp_path: Path) -> None:
    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    page = wiz.manifest_page
    with qtbot.waitSignal(page.described, timeout=60_000) as got:
        page.edit.setText(str(offer_manifest))
    info = got.args[0]
    assert "Test offer" in page.quote.text() and "2 files" in page.quote.text()
    assert page.seal.isVisible() and page.seal.text() == info["root"] and len(info["root"]) >= 32
    wiz.next()

    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(footage["offer"] / "offer-copy.mp4", partial)
    _run_to_result(qtbot, wiz, partial)
    table = wiz.result_page.table
    rows = {table.item(r, 0).text(): (table.item(r, 1).text(), table.item(r, 2).text())
            for r in range(table.rowCount())}
    status, detail = rows["offer-new.mp4"]
    assert status == "Missing" and "not in the delivery folder" in detail
    quoted = next(e for e in wiz.verify_result().entries if e.name == "offer-new.mp4")
    assert quoted.sha256[:12] in detail

    # The result is final: Finish, no Cancel beside it.
    assert not wiz.button(QWizard.WizardButton.CancelButton).isVisible()
    # Verify another folder against the same quote.
    assert wiz.result_page.again_button.text() == "Verify another folder…"
    wiz.result_page.again_button.click()
    assert wiz.currentId() == vw.PAGE_FOLDER and wiz.folder_page.edit.text() == ""
    full = shutil.copytree(footage["offer"], tmp_path / "full")
    _run_to_result(qtbot, wiz, full)
    assert wiz.verify_result().ok and wiz.verify_result().data_dir == str(full)


def test_hidden_names_say_which_delivered_file_matched(qtbot: Any, state: Any, hidden_manifest: Path,
                                                       footage: dict[str, Path], tmp_path: Path) -> None:
    delivery = shutil.copytree(footage["offer"], tmp_path / "delivery")
    wiz = vw.VerifyWizard(state, manifest=hidden_manifest)
    qtbot.addWidget(wiz)
    wiz.show()
    wiz.next()
    _run_to_result(qtbot, wiz, delivery)
    r = wiz.verify_result()
    assert r.anonymized and r.ok
    table = wiz.result_page.table
    details = [table.item(i, 2).text() for i in range(table.rowCount())]
    names = [table.item(i, 0).text() for i in range(table.rowCount())]
    assert not any("offer-copy" in n or "offer-new" in n for n in names)  # the quote hides them
    assert any("delivered as offer-copy.mp4" in d for d in details)
    assert any("delivered as offer-new.mp4" in d for d in details)


def test_a_one_file_quote_reads_one_file(qtbot: Any, state: Any, footage: dict[str, Path], tmp_path: Path) -> None:
    """Seen under Xvfb: the first page said "One-file offer — 1 files"."""
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(footage["offer"] / "offer-copy.mp4", one)
    idx = tmp_path / "index"
    api.index_paths([one], index=idx, config=isolated_config(idx, tmp_path))
    manifest = tmp_path / "one.ovlm"
    api.export_manifest(idx, manifest, label="One-file offer")
    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    page = wiz.manifest_page
    with qtbot.waitSignal(page.described, timeout=60_000):
        page.edit.setText(str(manifest))
    assert "One-file offer — 1 file\n" in page.quote.text()


def test_from_home_the_wizard_offers_the_offers_screened_before(
        qtbot: Any, window: Any, offer_manifest: Path, tmp_path: Path) -> None:
    gone = tmp_path / "moved-away.ovlm"
    window.state.add_recent(gone)
    window.state.add_recent(offer_manifest)
    window.go("verify")
    wiz = next(w for w in window.findChildren(QWizard) if isinstance(w, vw.VerifyWizard))
    qtbot.addWidget(wiz)
    page = wiz.manifest_page
    assert page.edit.text() == "" and not page.isComplete()
    listed = [page.recent.item(r).data(vw.Qt.ItemDataRole.UserRole) for r in range(page.recent.count())]
    assert listed == [str(offer_manifest), str(gone)]

    with qtbot.waitSignal(page.described, timeout=60_000):
        page.recent.itemClicked.emit(page.recent.item(0))
    assert page.isComplete() and "Test offer" in page.quote.text()

    page.recent.setCurrentRow(1)
    page.recent.itemClicked.emit(page.recent.item(1))
    assert not page.isComplete() and "moved-away.ovlm is no longer there" in page.note.text()


def test_with_nothing_screened_before_no_empty_list_is_shown(qtbot: Any, state: Any) -> None:
    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    assert not wiz.manifest_page.recent.isVisible() and not wiz.manifest_page.recent_label.isVisible()
