"""The vendor export wizard and the delivery verification wizard, stepped end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QWizard

from overlap_desktop import api
from overlap_desktop.gui import export_wizard as ew
from overlap_desktop.gui import verify_wizard as vw


def _wait_complete(qtbot: Any, page: Any, timeout: int = 120_000) -> None:
    qtbot.waitUntil(page.isComplete, timeout=timeout)


def test_export_wizard_end_to_end(qtbot: Any, state: Any, footage: dict[str, Path], tmp_path: Path) -> None:
    vendor = tmp_path / "vendor-offer"
    vendor.mkdir()
    shutil.copy(footage["offer"] / "offer-copy.mp4", vendor / "take-1.mp4")
    shutil.copy(footage["offer"] / "offer-copy.mp4", vendor / "take-1-again.mp4")  # an internal duplicate
    shutil.copy(footage["offer"] / "offer-new.mp4", vendor / "take-2.mp4")
    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    assert wiz.currentId() == ew.PAGE_FOLDERS
    assert not wiz.currentPage().isComplete()
    wiz.folders_page.add_folder(vendor)
    # The folder is checked for footage in a worker; the page is complete once it was found.
    qtbot.waitUntil(wiz.currentPage().isComplete, timeout=60_000)

    wiz.next()
    assert wiz.currentId() == ew.PAGE_FINGERPRINT
    _wait_complete(qtbot, wiz.fingerprint)
    assert "3 fingerprinted" in wiz.fingerprint.status.text()

    wiz.next()
    assert wiz.currentId() == ew.PAGE_DEDUPE
    _wait_complete(qtbot, wiz.dedupe)
    assert wiz.dedupe.duplicates >= 1
    assert "review before quoting" in wiz.dedupe.status.text()
    assert wiz.dedupe.dupes.rowCount() == wiz.dedupe.duplicates
    names = {wiz.dedupe.dupes.item(0, 0).text(), wiz.dedupe.dupes.item(0, 2).text()}
    assert names == {"take-1.mp4", "take-1-again.mp4"}  # named as the vendor knows them

    wiz.next()
    assert wiz.currentId() == ew.PAGE_OPTIONS
    opts = wiz.options_page
    assert opts.label.text() == "vendor-offer"  # a sensible default
    assert opts.fps.value() == float(state.config()["export.fps"])
    opts.label.setText("")
    assert not opts.isComplete()
    opts.label.setText("Q3 kitchen teleop")
    opts.anonymize.setChecked(True)
    out = tmp_path / "out" / "q3"
    opts.out.setText(str(out))
    assert opts.isComplete()

    with qtbot.waitSignal(wiz.save.done, timeout=60_000) as got:
        wiz.next()
    assert wiz.currentId() == ew.PAGE_SAVE
    summary = got.args[0]
    saved = tmp_path / "out" / "q3.ovlm"
    assert Path(summary.path) == saved and saved.is_file()
    info = api.inspect_manifest(saved)
    assert info["label"] == "Q3 kitchen teleop" and info["anonymized"] and info["files"] == 3
    assert wiz.save.seal.text() == summary.root
    assert "does not contain" in wiz.save.contains.text()
    assert wiz.save.isComplete() and wiz.save.isFinalPage()
    assert wiz.button(QWizard.WizardButton.FinishButton).isEnabled()


def test_verify_wizard_exact_and_altered_delivery(qtbot: Any, state: Any, offer_manifest: Path,
                                                  footage: dict[str, Path], tmp_path: Path) -> None:
    exact = shutil.copytree(footage["offer"], tmp_path / "delivery-exact")
    wiz = vw.VerifyWizard(state)
    qtbot.addWidget(wiz)
    wiz.show()
    assert wiz.currentId() == vw.PAGE_MANIFEST and not wiz.currentPage().isComplete()
    wiz.manifest_page.edit.setText(str(offer_manifest))
    assert wiz.currentPage().isComplete()
    wiz.next()
    assert wiz.currentId() == vw.PAGE_FOLDER and not wiz.currentPage().isComplete()
    wiz.folder_page.edit.setText(str(exact))
    assert wiz.currentPage().isComplete()
    wiz.next()
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=60_000)
    assert wiz.verify_result().ok
    assert wiz.result_page.verdict.text().startswith("Every quoted file is present and exact")
    statuses = {wiz.result_page.table.item(r, 1).text() for r in range(wiz.result_page.table.rowCount())}
    assert statuses == {"As quoted"}

    # A second delivery: one file altered, one missing, one extra.
    bad = shutil.copytree(footage["offer"], tmp_path / "delivery-bad")
    (bad / "offer-new.mp4").unlink()
    with open(bad / "offer-copy.mp4", "r+b") as fh:
        fh.seek(200)
        fh.write(b"\xff\xfe\xfd")
    (bad / "bonus.mp4").write_bytes(b"not quoted")
    wiz2 = vw.VerifyWizard(state, manifest=offer_manifest)
    qtbot.addWidget(wiz2)
    wiz2.show()
    wiz2.next()
    wiz2.folder_page.edit.setText(str(bad))
    wiz2.next()
    qtbot.waitUntil(lambda: wiz2.currentId() == vw.PAGE_RESULT, timeout=60_000)
    r = wiz2.verify_result()
    assert not r.ok
    assert wiz2.result_page.verdict.text().startswith("Quoted files are altered or missing")
    table = wiz2.result_page.table
    by_name = {table.item(i, 0).text(): table.item(i, 1).text() for i in range(table.rowCount())}
    assert by_name == {"offer-copy.mp4": "Altered", "offer-new.mp4": "Missing", "bonus.mp4": "Not quoted"}
    out = wiz2.result_page.export(tmp_path / "verify.json", "json")
    assert out is not None
    data = json.loads(out.read_text())
    assert data["ok"] is False and data["summary"]["missing"] == 1
    # A destination that cannot be written: a message naming it, not an exception in a slot.
    (tmp_path / "a-file").write_text("x")
    for kind in ("json", "html"):
        assert wiz2.result_page.export(tmp_path / "a-file" / f"verify.{kind}", kind) is None
        assert "a-file" in str(wiz2.result_page.property("last_message"))


def test_verify_wizard_refuses_a_bad_manifest(qtbot: Any, state: Any, tmp_path: Path) -> None:
    bad = tmp_path / "x.ovlm"
    bad.write_bytes(b"garbage")
    wiz = vw.VerifyWizard(state, manifest=bad)
    qtbot.addWidget(wiz)
    wiz.show()
    wiz.next()
    assert wiz.currentId() == vw.PAGE_MANIFEST  # stays, with the reason on the page
    assert "cannot be used" in wiz.manifest_page.note.text()


def test_a_short_result_sits_under_the_progress_row_and_a_table_takes_the_page(qtbot: Any, state: Any) -> None:
    """Seen under Xvfb: "No internal duplicates" floated mid-page once the (hidden) table left
    its height to the layout; the spare height now goes below the content."""
    from types import SimpleNamespace as NS

    wiz = ew.ExportWizard(state)
    qtbot.addWidget(wiz)
    page = wiz.dedupe
    page.setParent(None)
    qtbot.addWidget(page)
    page.resize(900, 600)
    page.show()
    page.on_result((NS(files=[], overlap_percent=0.0, matched_seconds=0.0, offered_seconds=10.0), False))
    qtbot.waitUntil(lambda: not page.dupes.isVisible())
    page.lay.activate()  # the layout as the event loop lays it out next
    assert "No internal duplicates" in page.status.text()
    assert page.status.geometry().bottom() < page.bar.geometry().top() < 100

    seg = NS(query_start=1.0, query_end=12.0, corpus_start=3.0, corpus_end=14.0, speed=1.0, speed_low=1.0,
             speed_high=1.0, corpus_file="b.mp4", variant=NS(describe=lambda: ""))
    page.on_result((NS(files=[NS(query_file="a.mp4", segments=[seg])], overlap_percent=50.0,
                       matched_seconds=11.0, offered_seconds=22.0), False))
    qtbot.waitUntil(page.dupes.isVisible)
    page.lay.activate()
    assert page.dupes.geometry().bottom() > page.height() - 40  # the table, not empty space, fills the page
