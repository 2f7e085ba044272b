"""Signing in the vendor wizard (issue 37): the key's state, a way to create it, and whether to sign.

:class:`SigningBlock` sits on the wizard's options page; :class:`SigningKeyDialog` makes the
key. Both go through ``overlap_desktop.api`` only, and the key file is read and written in
workers, off the UI thread.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from overlap_desktop import api
from overlap_desktop.gui.common import show_error
from overlap_desktop.gui.workers import Job

__all__ = ["BACKUP_ADVICE", "SigningBlock", "SigningKeyDialog"]

BACKUP_ADVICE = (
    "Your signing key is a small file kept in your user data folder, readable only by you. Back it up "
    "(e.g. to an encrypted USB stick or your password manager): if it is lost, you cannot sign with it again "
    "and buyers will see a different key next time, which they are warned about. If someone copies it, they "
    "can sign manifests in your name: then make a new key and tell your buyers its fingerprint. A passphrase "
    "protects the file if it is copied; it cannot be recovered if forgotten.")


class SigningKeyDialog(QDialog):
    """Make the vendor's signing key: name, optional passphrase, backup and loss explained.

    Signals:
        created(object): the new public key (``api.VendorKey``).
    """

    created = Signal(object)

    def __init__(self, parent: QWidget | None = None, name: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Create your signing key")
        self.setAccessibleName("Create your signing key")
        lay = QVBoxLayout(self)
        intro = QLabel("A signed manifest tells the buyer it comes from you and was not changed on the way. "
                       "You need one key, once; every manifest you save afterwards is signed with it.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        form = QFormLayout()
        self.name = QLineEdit(name)
        self.name.setAccessibleName("Your company's name")
        self.name.setPlaceholderText("e.g. Acme Robotics")
        self.name.textChanged.connect(self._update)
        form.addRow("Your company's name:", self.name)
        self.protect = QCheckBox("Protect the key with a passphrase")
        self.protect.setAccessibleName("Protect the key with a passphrase")
        self.protect.toggled.connect(self._update)
        form.addRow("", self.protect)
        self.pass1, self.pass2 = QLineEdit(), QLineEdit()
        for w, what in ((self.pass1, "Passphrase"), (self.pass2, "Passphrase again")):
            w.setEchoMode(QLineEdit.EchoMode.Password)
            w.setAccessibleName(what)
            w.textChanged.connect(self._update)
            form.addRow(what + ":", w)
        lay.addLayout(form)
        advice = QLabel(BACKUP_ADVICE)
        advice.setWordWrap(True)
        advice.setAccessibleName("Backup and loss")
        lay.addWidget(advice)
        self.result_text = QLabel("")
        self.result_text.setWordWrap(True)
        self.result_text.setTextFormat(Qt.TextFormat.PlainText)
        self.result_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result_text.setAccessibleName("Your new key")
        lay.addWidget(self.result_text)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.create_button = self.buttons.addButton("Create key", QDialogButtonBox.ButtonRole.AcceptRole)
        self.create_button.setAccessibleName("Create key")
        self.create_button.clicked.connect(self.create_key)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self.job: Job | None = None
        self.key: Any = None
        self._update()

    def _problem(self) -> str:
        if not self.name.text().strip():
            return "Type your company's name."
        if self.protect.isChecked() and not self.pass1.text():
            return "Type a passphrase, or leave the key unprotected."
        if self.protect.isChecked() and self.pass1.text() != self.pass2.text():
            return "The two passphrases differ."
        return ""

    def _update(self) -> None:
        for w in (self.pass1, self.pass2):
            w.setEnabled(self.protect.isChecked())
        problem = self._problem()
        self.create_button.setEnabled(not problem and self.key is None)
        if self.key is None:
            self.result_text.setText(problem)

    def create_key(self) -> Job | None:
        """Make the key in a worker; the dialog then shows its fingerprint and stays open to read."""
        if self._problem() or self.key is not None:
            return None
        self.create_button.setEnabled(False)
        passphrase = self.pass1.text() if self.protect.isChecked() else None
        job = Job(api.create_signing_key, self.name.text().strip(), parent=self, with_progress=False,
                  passphrase=passphrase)
        job.succeeded.connect(self._created)
        job.failed.connect(self._failed)
        self.job = job
        job.start()
        return job

    def _created(self, key: Any) -> None:
        self.key = key
        self.result_text.setText(f"Key created for {api.safe_text(key.name)}.\nFingerprint: {key.fingerprint}\n"
                                 "Give buyers this fingerprint (e.g. in the contract). Back up the key file now.")
        self.buttons.clear()
        done = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        done.clicked.connect(self.accept)
        self.adjustSize()  # the fingerprint's lines must not squeeze the backup advice
        self.created.emit(key)

    def _failed(self, exc: BaseException) -> None:
        self._update()
        show_error(self, "The key could not be created", exc)


class SigningBlock(QWidget):
    """On the wizard's options page: who will sign, a "sign" choice, and the passphrase if needed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.state = QLabel("Looking for your signing key…")
        self.state.setWordWrap(True)
        self.state.setTextFormat(Qt.TextFormat.PlainText)  # the vendor's name
        self.state.setAccessibleName("Signing key")
        lay.addWidget(self.state)
        row = QHBoxLayout()
        self.sign = QCheckBox("Sign this manifest")
        self.sign.setAccessibleName("Sign this manifest")
        self.passphrase = QLineEdit()
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setAccessibleName("Passphrase of the signing key")
        self.passphrase.setPlaceholderText("passphrase of your key")
        self.create_button = QPushButton("Create a signing key…")
        self.create_button.setAccessibleName("Create a signing key")
        # Not connected to the method itself: Qt would hand clicked's ``checked`` (a bool) in as the name.
        self.create_button.clicked.connect(lambda: self.open_create_dialog())
        row.addWidget(self.sign)
        row.addWidget(self.passphrase, 1)
        row.addWidget(self.create_button)
        row.addStretch(1)
        lay.addLayout(row)
        self.info: tuple[Any, bool] | None = None
        self.loaded = False
        self.job: Job | None = None
        self.dialog: SigningKeyDialog | None = None
        self._show(None, loaded=False)

    def refresh(self) -> Job:
        """Read the key's public part in a worker and show it."""
        job = Job(api.signing_key_info, parent=self, with_progress=False)
        job.succeeded.connect(self._show)
        job.failed.connect(lambda exc: self.state.setText(f"Your signing key cannot be read: {exc}"))
        self.job = job
        job.start()
        return job

    def _show(self, info: tuple[Any, bool] | None, *, loaded: bool = True) -> None:
        self.info, self.loaded = info, loaded
        has = info is not None
        self.sign.setVisible(has)
        self.sign.setChecked(has)
        self.passphrase.setVisible(has and bool(info and info[1]))
        self.create_button.setVisible(not has)
        if info is None:
            self.state.setText("Not signed: you have no signing key yet. A signed manifest shows the buyer it "
                               "comes from you.")
        else:
            self.state.setText(f"Signed by {api.safe_text(info[0].name)}, key {info[0].fingerprint}.")

    def open_create_dialog(self, name: str = "") -> SigningKeyDialog:
        """Open the dialog that makes the key, its name field filled with ``name``."""
        dialog = SigningKeyDialog(self, name)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.created.connect(lambda key: self._show((key, False)))
        dialog.created.connect(lambda _key: self.refresh())
        self.dialog = dialog
        dialog.open()
        return dialog

    def export_arguments(self) -> dict[str, Any]:
        """``sign`` and ``passphrase`` for ``api.export_manifest`` (the api's default, "sign when a
        key exists", while the key has not been looked up yet)."""
        if not self.loaded:
            return {}
        if self.info is None or not self.sign.isChecked():
            return {"sign": False}
        return {"sign": True, "passphrase": self.passphrase.text() or None}
