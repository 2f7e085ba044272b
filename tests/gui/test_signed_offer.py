"""Signed quotes in the app (issue 37): the offer screen names the signer and warns loudly on a
changed key; the vendor wizard makes a key and signs; the verify wizard states the signer.

The user data folder (keys, known vendors) is this test's temporary folder (tests/gui/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from overlap_desktop import api
from overlap_desktop.gui.main_window import MainWindow
from overlap_desktop.gui.signing import SigningBlock, SigningKeyDialog
from overlap_desktop.gui.state import AppState
from tests.gui.conftest import isolated_config


def _export(vendor_index: Path, out: Path, **kw: Any) -> Path:
    api.export_manifest(vendor_index, out, label="Signed offer", **kw)
    return out


@pytest.fixture(scope="module")
def vendor_index(footage: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("signed-vendor")
    idx = home / "index"
    api.index_paths([footage["offer"]], index=idx, config=isolated_config(idx, home))
    return idx


def _open(qtbot: Any, state: AppState, manifest: Path) -> Any:
    w = MainWindow(state)
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.screen.inspected, timeout=120_000):
        w.open_manifest(manifest)
    return w


def test_the_offer_screen_shows_the_signer_then_warns_on_a_changed_key(
        qtbot: Any, tmp_path: Path, lab_index: Path, vendor_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = api.create_signing_key("Acme Robotics")
    genuine = _export(vendor_index, tmp_path / "genuine.ovlm")
    unsigned = _export(vendor_index, tmp_path / "unsigned.ovlm", sign=False)
    state = AppState({"index.path": str(lab_index)})
    w = _open(qtbot, state, genuine)
    text = w.screen.signature.text()
    assert text.startswith(f"Signed by Acme Robotics, key {key.fingerprint}") and "first manifest seen" in text
    assert "bold" not in w.screen.signature.styleSheet()
    w.close()

    # The same content without its signature: a downgrade, warned about as loudly as a changed key.
    w = _open(qtbot, state, unsigned)
    text = w.screen.signature.text()
    assert text.startswith("WARNING: unsigned, but this exact content was seen signed by Acme Robotics"), text
    assert "bold" in w.screen.signature.styleSheet()
    w.close()
    other_content = tmp_path / "other.ovlm"
    api.export_manifest(vendor_index, other_content, label="Another offer", sign=False)
    w = _open(qtbot, state, other_content)
    assert w.screen.signature.text().startswith("Unsigned")
    assert "bold" not in w.screen.signature.styleSheet()
    w.close()

    # Another key under the same name, made in another user data folder.
    buyer = os.environ["XDG_DATA_HOME"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "impostor"))
    other = api.create_signing_key("Acme Robotics")
    impostor = _export(vendor_index, tmp_path / "impostor.ovlm")
    monkeypatch.setenv("XDG_DATA_HOME", buyer)
    w = _open(qtbot, state, impostor)
    label = w.screen.signature
    assert label.text().startswith("WARNING: signed as Acme Robotics") and other.fingerprint in label.text()
    assert key.fingerprint in label.text()  # the key the buyer knew
    assert "bold" in label.styleSheet() and label.isVisibleTo(w)
    assert label.textFormat().name == "PlainText"  # the vendor's name is never rendered as markup


def test_the_vendor_wizard_makes_a_key_and_the_export_is_signed(qtbot: Any, tmp_path: Path,
                                                                 vendor_index: Path) -> None:
    block = SigningBlock()
    qtbot.addWidget(block)
    assert block.export_arguments() == {}  # not looked up yet: the api's default (sign when a key exists)
    block.refresh()
    qtbot.waitUntil(lambda: block.loaded, timeout=10_000)
    assert block.info is None and block.create_button.isVisibleTo(block) and not block.sign.isVisibleTo(block)
    assert "no signing key yet" in block.state.text()
    assert block.export_arguments() == {"sign": False}
    block.show()
    qtbot.waitExposed(block)
    qtbot.mouseClick(block.create_button, Qt.MouseButton.LeftButton)  # as a user does: clicked's bool must not leak
    qtbot.waitUntil(lambda: block.dialog is not None and block.dialog.isVisible(), timeout=5_000)
    dialog = block.dialog
    assert dialog is not None and dialog.name.text() == ""  # not "False"
    qtbot.keyClicks(dialog.name, "Acme Robotics")
    qtbot.mouseClick(dialog.protect, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(dialog.pass1, "correct horse")
    qtbot.keyClicks(dialog.pass2, "battery")
    assert not dialog.create_button.isEnabled() and "differ" in dialog.result_text.text()
    dialog.pass2.clear()
    qtbot.keyClicks(dialog.pass2, "correct horse")
    assert dialog.create_button.isEnabled()
    with qtbot.waitSignal(dialog.created, timeout=10_000) as got:
        qtbot.mouseClick(dialog.create_button, Qt.MouseButton.LeftButton)
    key = got.args[0]
    assert key.fingerprint in dialog.result_text.text()
    qtbot.waitUntil(lambda: block.info is not None and bool(block.info[1]), timeout=10_000)
    assert block.sign.isChecked() and block.passphrase.isVisibleTo(block)
    assert key.fingerprint in block.state.text()
    block.passphrase.setText("correct horse")
    args = block.export_arguments()
    assert args == {"sign": True, "passphrase": "correct horse"}
    s = api.export_manifest(vendor_index, tmp_path / "o.ovlm", label="x", **args)
    assert s.signed_by == "Acme Robotics" and s.key_fingerprint == key.fingerprint
    block.sign.setChecked(False)
    assert block.export_arguments() == {"sign": False}


def test_the_backup_advice_is_in_the_key_dialog(qtbot: Any) -> None:
    from overlap_desktop.gui.signing import BACKUP_ADVICE

    dialog = SigningKeyDialog(None, "")
    qtbot.addWidget(dialog)
    texts = [lbl.text() for lbl in dialog.findChildren(type(dialog.result_text))]
    assert BACKUP_ADVICE in texts and "lost" in BACKUP_ADVICE and "copies it" in BACKUP_ADVICE
    assert not dialog.create_button.isEnabled()  # no name yet


def test_the_verify_wizard_states_signer_fingerprint_and_root(qtbot: Any, tmp_path: Path, vendor_index: Path,
                                                              footage: dict[str, Path]) -> None:
    from overlap_desktop.gui import verify_wizard as vw

    key = api.create_signing_key("Acme Robotics")
    manifest = _export(vendor_index, tmp_path / "signed.ovlm")
    signed_root = api.inspect_manifest(manifest, record_vendor=False)["signature"]["signed_root"]
    wiz = vw.VerifyWizard(AppState({"index.path": str(tmp_path / "index")}))
    qtbot.addWidget(wiz)
    wiz.show()
    wiz.manifest_page.edit.setText(str(manifest))
    wiz.next()
    wiz.folder_page.edit.setText(str(footage["offer"]))
    wiz.next()
    qtbot.waitUntil(lambda: wiz.currentId() == vw.PAGE_RESULT, timeout=60_000)
    text = wiz.result_page.signature.text()
    assert text.startswith(f"Signature: signed by Acme Robotics, key {key.fingerprint}")
    assert f"content root {signed_root}" in text
