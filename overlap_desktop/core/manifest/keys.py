"""A vendor's signing key: made once, kept in the user data folder, readable by the user only.

One key per user account: ``vendor-key.json`` in the user data folder holds the vendor's
name, the public key and the PKCS#8 private key (PEM; encrypted with the ``cryptography``
package's ``BestAvailableEncryption`` when a passphrase is given). The file is created
with mode 0600 (no moment when others could read it); on Windows, where the mode bits do
not apply, inheritance is removed from its access list and only the current user is
granted access (``icacls``). Losing the file means manifests can no longer be signed with
that key (buyers would see a new key); anyone who copies it can sign as the vendor.

Public key files (what a vendor gives a buyer to pin, and what ``overlap key show``
prints) are three lines of text, see :func:`public_key_text`.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from overlap_desktop.core.fsutil import NotRegularFileError, atomic_write_bytes, loads_json_limited, read_regular
from overlap_desktop.core.manifest.edpoints import key_problem
from overlap_desktop.core.manifest.signature import MAX_VENDOR_BYTES, fingerprint, sign_section
from overlap_desktop.errors import ConfigError, InputError
from overlap_desktop.paths import user_data_folder

__all__ = [
    "KEY_FILE_NAME",
    "PASSPHRASE_ENV",
    "PUBLIC_KEY_HEADER",
    "SigningKey",
    "VendorKey",
    "create_signing_key",
    "load_signing_key",
    "parse_public_key_text",
    "public_key_text",
    "restrict_to_owner",
    "signing_key_file",
    "signing_key_info",
]

KEY_FILE_NAME = "vendor-key.json"
KEY_FORMAT = "overlap-vendor-key/1"
#: Environment variable a pipeline sets to unlock a passphrase-protected key without a prompt.
PASSPHRASE_ENV = "OVERLAP_KEY_PASSPHRASE"
PUBLIC_KEY_HEADER = "overlap vendor public key v1"
_MAX_KEY_FILE = 64 * 1024


@dataclass(frozen=True, slots=True)
class VendorKey:
    """A vendor's public key as the buyer sees it.

    Attributes:
        name: The vendor's name.
        public_key: Raw 32-byte Ed25519 public key.
    """

    name: str
    public_key: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(self.public_key).decode("ascii")


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The vendor's unlocked private key and its name (what an export signs with)."""

    name: str
    private_key: Ed25519PrivateKey

    @property
    def public(self) -> VendorKey:
        return VendorKey(self.name, self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))

    def signer(self, created: str | None = None) -> Callable[[bytes, str], bytes]:
        """The ``signer`` callable :func:`~overlap_desktop.core.manifest.encode.encode_manifest` takes."""
        when = created or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

        def sign(root: bytes, label: str) -> bytes:
            return sign_section(self.private_key, self.name, label, root, when)

        return sign


def signing_key_file(folder: str | os.PathLike[str] | None = None) -> Path:
    """Where the signing key is kept (``folder`` or the user data folder)."""
    return Path(folder) if folder is not None else user_data_folder() / KEY_FILE_NAME


def check_vendor_name(name: str) -> str:
    """The name, trimmed, if a manifest can carry it.

    Raises:
        ConfigError: empty, too long, or with control characters.
    """
    name = (name or "").strip()
    raw = name.encode("utf-8", "surrogatepass")
    if not name or len(raw) > MAX_VENDOR_BYTES or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        raise ConfigError(f"the vendor name must be one line of 1-{MAX_VENDOR_BYTES} bytes (got {name!r})")
    try:
        name.encode("utf-8", "strict")
    except UnicodeEncodeError:
        raise ConfigError("the vendor name is not valid text") from None
    return name


def restrict_to_owner(path: Path) -> None:
    """Make ``path`` readable by the current user only.

    POSIX: mode 0600. Windows: the access list loses inherited entries and grants only the
    current user full control (``icacls``); a failure is an error, never a silent pass.

    Raises:
        InputError: the permissions could not be set.
    """
    if sys.platform == "win32":
        user = os.environ.get("USERNAME") or getpass.getuser()
        cmd = ["icacls", str(path), "/inheritance:r", "/grant:r", f"{user}:F"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        except OSError as exc:
            raise InputError(f"cannot restrict who may read the key file ({exc})", path=path) from None
        if proc.returncode != 0:
            raise InputError(f"cannot restrict who may read the key file (icacls: "
                             f"{(proc.stderr or proc.stdout).strip()})", path=path)
        return
    os.chmod(path, 0o600)


def _owner_only(path: Path) -> bool:
    """POSIX: no group or other permission bits. Windows relies on :func:`restrict_to_owner`."""
    if sys.platform == "win32":
        return True
    return not stat.S_IMODE(os.stat(path).st_mode) & 0o077


def create_signing_key(name: str, *, passphrase: str | None = None,
                       path: str | os.PathLike[str] | None = None) -> VendorKey:
    """Make a new Ed25519 signing key for vendor ``name`` and keep it (mode 0600).

    Args:
        name: The vendor's name, as buyers will see it on every signed manifest.
        passphrase: Encrypts the private key (``BestAvailableEncryption``); ``None``: stored
            unencrypted, protected by the file's permissions only.
        path: The key file (default :func:`signing_key_file`).

    Returns:
        The new public key.

    Raises:
        ConfigError: a key already exists there, or the name is unusable.
        InputError: the file cannot be written or protected.
    """
    name = check_vendor_name(name)
    target = signing_key_file(path)
    if target.exists():
        raise ConfigError("a signing key already exists here; move it away first if you really want a new "
                          "one (buyers who know the old key will be warned that your key changed)", path=target)
    key = Ed25519PrivateKey.generate()
    enc = BestAvailableEncryption(passphrase.encode("utf-8")) if passphrase else NoEncryption()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, enc).decode("ascii")
    public = SigningKey(name, key).public
    doc = {"format": KEY_FORMAT, "name": name, "public_key": public.public_key_b64,
           "fingerprint": public.fingerprint, "encrypted": bool(passphrase),
           "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "private_key": pem}
    data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    # Written whole or not at all, created with mode 0600 (never readable by others, even
    # for a moment), then restricted on Windows too.
    atomic_write_bytes(target, data, error_type=InputError, open_message="cannot create the key file",
                       write_message="cannot write the key file", make_parents=True, mode=0o600)
    try:
        restrict_to_owner(target)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return public


def _read_key_doc(target: Path) -> dict[str, object]:
    try:
        raw = read_regular(target, _MAX_KEY_FILE + 1)
    except FileNotFoundError:
        raise ConfigError("no signing key yet: make one with `overlap key create --name \"Your company\"`",
                          path=target) from None
    except NotRegularFileError as exc:
        raise InputError(f"the key file is {exc.kind}, not a regular file; put your key file back there",
                         path=target) from None
    except OSError as exc:
        raise InputError(f"cannot read the key file ({exc.strerror or exc})", path=target) from None
    try:
        doc = loads_json_limited(raw.decode("utf-8")) if len(raw) <= _MAX_KEY_FILE else None
    except (UnicodeDecodeError, ValueError):
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != KEY_FORMAT or not isinstance(doc.get("name"), str) \
            or not isinstance(doc.get("private_key"), str) or not isinstance(doc.get("public_key"), str):
        raise InputError("this is not an overlap signing key file (damaged? restore it from your backup)",
                         path=target)
    return doc


def signing_key_info(path: str | os.PathLike[str] | None = None) -> tuple[VendorKey, bool] | None:
    """The stored key's public part and whether it needs a passphrase, or ``None`` without a key.

    Raises:
        InputError: the key file is damaged.
    """
    target = signing_key_file(path)
    if not target.exists():
        return None
    doc = _read_key_doc(target)
    try:
        pub = base64.b64decode(str(doc["public_key"]), validate=True)
    except (binascii.Error, ValueError):
        pub = b""
    if len(pub) != 32 or key_problem(pub):
        raise InputError("the key file's public key is damaged; restore it from your backup", path=target)
    return VendorKey(str(doc["name"]), pub), bool(doc.get("encrypted"))


def load_signing_key(passphrase: str | None = None, *, path: str | os.PathLike[str] | None = None) -> SigningKey:
    """Unlock the stored signing key.

    Args:
        passphrase: The key's passphrase (default: the ``OVERLAP_KEY_PASSPHRASE`` variable).
        path: The key file (default :func:`signing_key_file`).

    Raises:
        ConfigError: no key, a passphrase is needed or wrong, or the file is readable by others.
        InputError: the key file is damaged.
    """
    target = signing_key_file(path)
    doc = _read_key_doc(target)
    if not _owner_only(target):
        raise ConfigError("the signing key file can be read by other users; restrict it (chmod 600) and "
                          "consider making a new key if others may have copied it", path=target)
    if passphrase is None:
        passphrase = os.environ.get(PASSPHRASE_ENV) or None
    if doc.get("encrypted") and not passphrase:
        raise ConfigError(f"the signing key is protected by a passphrase: type it when asked, or set "
                          f"{PASSPHRASE_ENV} (or export with --no-sign)", path=target)
    try:
        key = load_pem_private_key(str(doc["private_key"]).encode("ascii"),
                                   passphrase.encode("utf-8") if doc.get("encrypted") and passphrase else None)
    except (TypeError, ValueError, UnicodeEncodeError):
        raise ConfigError("cannot unlock the signing key: wrong passphrase, or the key file is damaged",
                          path=target) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError("the key file does not hold an Ed25519 key", path=target)
    signing = SigningKey(str(doc["name"]), key)
    if signing.public.public_key_b64 != doc["public_key"]:
        raise InputError("the key file's public and private keys do not belong together; restore it from "
                         "your backup", path=target)
    return signing


def public_key_text(key: VendorKey) -> str:
    """The public key file a vendor hands out (and ``overlap key show`` prints)::

        overlap vendor public key v1
        name: Acme Robotics
        ed25519: <base64 of the raw 32-byte key>
        fingerprint: 3F2A-91C0-5B7E-0D14
    """
    return (f"{PUBLIC_KEY_HEADER}\nname: {key.name}\ned25519: {key.public_key_b64}\n"
            f"fingerprint: {key.fingerprint}\n")


def parse_public_key_text(text: str, *, source: str | os.PathLike[str] | None = None) -> VendorKey:
    """Read a public key file (:func:`public_key_text`); the fingerprint line, if any, must match.

    Raises:
        InputError: not a public key file, or its fingerprint does not match its key.
    """
    fields: dict[str, str] = {}
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or lines[0] != PUBLIC_KEY_HEADER:
        raise InputError(f"not an overlap public key file (it must start with {PUBLIC_KEY_HEADER!r}; "
                         "the vendor makes it with `overlap key show`)", path=source)
    for ln in lines[1:]:
        k, sep, v = ln.partition(":")
        if not sep or k.strip() in fields:
            raise InputError(f"unexpected line in the public key file: {ln[:80]!r}", path=source)
        fields[k.strip()] = v.strip()
    try:
        pub = base64.b64decode(fields.get("ed25519", ""), validate=True)
        Ed25519PublicKey.from_public_bytes(pub)
    except (binascii.Error, ValueError):
        raise InputError("the public key file's ed25519 line is not a 32-byte key in base64", path=source) from None
    weak = key_problem(pub)
    if weak:
        raise InputError(f"refused: {weak}; no key made by `overlap key create` looks like this, so it "
                         "cannot stand for a vendor; ask the vendor for their real public key file", path=source)
    try:
        name = check_vendor_name(fields.get("name", ""))
    except ConfigError as exc:
        raise InputError(exc.message, path=source) from None
    key = VendorKey(name, pub)
    if "fingerprint" in fields and fields["fingerprint"].upper() != key.fingerprint:
        raise InputError(f"the file says fingerprint {fields['fingerprint']} but its key's is {key.fingerprint}",
                         path=source)
    return key
