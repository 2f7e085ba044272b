"""Which vendor keys a buyer knows: trust on first use, pinned keys, loud warnings on change.

Like OpenSSH's ``known_hosts``: the first signed manifest seen under a vendor name records
that name's key (``first-use``); a later manifest under the same name with the same key is
``known`` (or ``pinned`` when the buyer pinned it from a contract with ``overlap vendors
trust KEYFILE``); another key under a known name is ``changed`` and is flagged wherever the
offer is shown. Names are compared by their look-alike skeleton
(:func:`~overlap_desktop.core.manifest.names.name_skeleton`: NFKC, case folding, invisible
characters and spaces dropped, Unicode's confusable letters mapped to the ASCII they look like),
so "ACME  Robotics", "Acme\u200bRobotics" or "Аcme Robotics" (Cyrillic А) cannot pass as a new
vendor next to "Acme Robotics": another key under such a name reads as that vendor's key changing.

The list is ``known-vendors.json`` in the user data folder, replaced atomically, and changed by one
process at a time (an OS lock on ``known-vendors.json.lock``), so concurrent first uses never lose
an entry.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.fsutil import (
    NotRegularFileError,
    atomic_write_bytes,
    exclusive_lock,
    read_json_regular,
    read_regular,
)
from overlap_desktop.core.manifest.edpoints import key_problem
from overlap_desktop.core.manifest.keys import VendorKey, parse_public_key_text
from overlap_desktop.core.manifest.names import mixed_scripts, name_skeleton
from overlap_desktop.core.manifest.signature import SEC_SIGNATURE, Signature, fingerprint
from overlap_desktop.errors import InputError, ManifestError, OverlapError
from overlap_desktop.paths import user_data_folder

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.manifest.format import Manifest

__all__ = ["KnownVendor", "check_signed", "downgrade_facts", "forget_vendor", "known_vendors", "known_vendors_file",
           "manifest_signature_facts", "signature_facts", "trust_key_file", "vendor_trust"]

log = logging.getLogger(__name__)

KNOWN_FILE_NAME = "known-vendors.json"
KNOWN_FORMAT = "overlap-known-vendors/1"
_MAX_FILE = 16 << 20
#: Signed manifests remembered (newest kept), so a copy with its signature removed is recognised.
_MAX_SIGNED = 20_000
_SIGNED_KEYS = ("root", "label", "vendor", "fingerprint", "signed_at")


@dataclass(frozen=True, slots=True)
class KnownVendor:
    """A vendor name and the key recorded for it.

    Attributes:
        name: The name as first seen or pinned.
        public_key: Raw 32-byte key.
        source: ``first-use`` (recorded from a manifest) or ``pinned`` (from a key file).
        since: When it was recorded, ``YYYY-MM-DDTHH:MM:SSZ``.
    """

    name: str
    public_key: bytes
    source: str
    since: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    @property
    def mixed_scripts(self) -> list[str]:
        """The scripts the name's letters come from when more than one (a look-alike's usual sign)."""
        return mixed_scripts(self.name)

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "public_key": base64.b64encode(self.public_key).decode("ascii"),
                "fingerprint": self.fingerprint, "source": self.source, "since": self.since}


def known_vendors_file() -> Path:
    return user_data_folder() / KNOWN_FILE_NAME


def _fold(name: str) -> str:
    """The name as compared (:func:`~overlap_desktop.core.manifest.names.name_skeleton`)."""
    return name_skeleton(name)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def known_vendors(path: str | os.PathLike[str] | None = None) -> list[KnownVendor]:
    """The recorded vendors, in name order (empty when none are recorded yet).

    Raises:
        InputError: the file is damaged (it names the file; it is never silently replaced).
    """
    return _load(path)[0]


def _load(path: str | os.PathLike[str] | None) -> tuple[list[KnownVendor], list[dict[str, str]]]:
    """The vendors and the signed manifests recorded (see :func:`_signed_record`)."""
    target = Path(path) if path is not None else known_vendors_file()
    damaged = InputError("the known-vendors file is damaged; fix or remove it (you will then be asked to "
                         "trust vendors' keys afresh)", path=target)
    try:
        doc = read_json_regular(target, _MAX_FILE)
    except FileNotFoundError:
        return [], []
    except NotRegularFileError as exc:
        raise InputError(f"the known-vendors file is {exc.kind}, not a regular file; remove it", path=target) from None
    except OSError as exc:
        raise InputError(f"cannot read the known vendors ({exc.strerror or exc})", path=target) from None
    except ValueError as exc:
        raise InputError(f"{damaged.message} ({exc})", path=target) from None
    if not isinstance(doc, dict) or doc.get("format") != KNOWN_FORMAT or not isinstance(doc.get("vendors"), list):
        raise damaged
    out: list[KnownVendor] = []
    for v in doc["vendors"]:
        try:
            pub = base64.b64decode(v["public_key"], validate=True)
            item = KnownVendor(str(v["name"]), pub, str(v["source"]), str(v.get("since", "")))
        except (KeyError, TypeError, binascii.Error, ValueError):
            raise damaged from None
        if len(pub) != 32 or item.source not in ("first-use", "pinned") or key_problem(pub):
            raise damaged
        out.append(item)
    signed = doc.get("signed", [])  # optional; files written before it have none
    if not isinstance(signed, list) or not all(
            isinstance(r, dict) and all(isinstance(r.get(k), str) for k in _SIGNED_KEYS) for r in signed):
        raise damaged
    return sorted(out, key=lambda k: _fold(k.name)), [{k: r[k] for k in _SIGNED_KEYS} for r in signed]


def _save(vendors: list[KnownVendor], path: str | os.PathLike[str] | None,
          signed: list[dict[str, str]] | None = None) -> None:
    target = Path(path) if path is not None else known_vendors_file()
    doc: dict[str, Any] = {"format": KNOWN_FORMAT,
                           "vendors": [v.to_dict() for v in sorted(vendors, key=lambda k: _fold(k.name))]}
    if signed:
        doc["signed"] = signed[-_MAX_SIGNED:]
    atomic_write_bytes(target, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
                       error_type=InputError, open_message="cannot save the known vendors",
                       write_message="cannot save the known vendors", make_parents=True, mode=0o600)


def _store_lock(path: str | os.PathLike[str] | None) -> AbstractContextManager[None]:
    """One process at a time reads, changes and replaces the list (a lock file beside it), so
    concurrent first uses never lose an entry; readers need no lock (the file is replaced whole)."""
    target = Path(path) if path is not None else known_vendors_file()
    return exclusive_lock(target.with_name(target.name + ".lock"))


def vendor_trust(sig: Signature, *, record: bool = True, path: str | os.PathLike[str] | None = None,
                 label: str | None = None) -> dict[str, Any]:
    """How the buyer knows the key that signed a manifest.

    Args:
        sig: A verified signature.
        record: Record the key when the name is new (trust on first use).
        path: The known-vendors file (default in the user data folder).
        label: The signed manifest's label: given, the manifest (its content root and label)
            is remembered too, so a copy with the signature removed is recognised
            (:func:`downgrade_facts`).

    Returns:
        ``{"trust": "first-use" | "known" | "pinned" | "changed", "known_fingerprint": ...,
        "known_since": ..., "also_known_as": [...]}``; ``known_fingerprint`` is the recorded
        key's when it differs (``changed``), and ``also_known_as`` lists other names this
        same key was recorded under.
    """
    if not record:
        return _trust(known_vendors(path), sig)[0]
    with _store_lock(path):
        vendors, signed = _load(path)
        out, new = _trust(vendors, sig)
        entry = _signed_record(sig, label)
        fresh = out["trust"] != "changed" and label is not None and entry not in signed
        if new is not None:
            _save([*vendors, new], path, [*signed, entry] if fresh else signed)
        elif fresh:
            try:
                _save(vendors, path, [*signed, entry])
            except OverlapError as exc:  # remembering this content helps later; never fail this offer over it
                log.warning("could not remember this signed manifest in the known-vendors file: %s", exc)
    return out


def _signed_record(sig: Signature, label: str | None) -> dict[str, str]:
    """What is remembered of a signed manifest, so the same content met again without its
    signature can be recognised as a downgrade."""
    return {"root": sig.root.hex(), "label": label or "", "vendor": sig.vendor, "fingerprint": sig.fingerprint,
            "signed_at": sig.created}


def downgrade_facts(root: str, *, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """For an unsigned manifest: ``{"stripped": record}`` when this exact content (its root,
    which is the content root a signature signs) was seen signed, else ``{}`` (``record``:
    vendor, fingerprint, signed_at, root, label of the newest match). Only the exact content
    counts: a label or a vendor's habits are no evidence of who made an unsigned file."""
    try:
        signed = _load(path)[1]
    except InputError as exc:  # an unsigned offer is still shown; the check is named as not done
        log.warning("%s", exc)
        return {"note": "could not be checked against the signed manifests seen before (the known-vendors file "
                        "cannot be read)"}
    same_root = [r for r in signed if r["root"] == root]
    return {"stripped": same_root[-1]} if same_root else {}


def _trust(vendors: list[KnownVendor], sig: Signature) -> tuple[dict[str, Any], KnownVendor | None]:
    """:func:`vendor_trust`'s answer, and the entry to record when the name is new."""
    folded = _fold(sig.vendor)
    same = next((v for v in vendors if _fold(v.name) == folded), None)
    others = sorted({v.name for v in vendors if v.public_key == sig.public_key and _fold(v.name) != folded})
    out: dict[str, Any] = {"also_known_as": others}
    if same is not None and same.name != sig.vendor:
        out["looks_like"] = same.name  # another spelling that looks the same (or differs in case/spaces)
    scripts = mixed_scripts(sig.vendor)
    if scripts:
        out["mixed_scripts"] = scripts
    if same is None:
        out.update(trust="first-use", known_fingerprint=None, known_since=None)
        return out, KnownVendor(sig.vendor, sig.public_key, "first-use", _now())
    if same.public_key == sig.public_key:
        out.update(trust=same.source if same.source == "pinned" else "known", known_fingerprint=None,
                   known_since=same.since)
    else:
        out.update(trust="changed", known_fingerprint=same.fingerprint, known_since=same.since,
                   known_source=same.source)
    return out, None


def signature_facts(sig: Signature | None, *, record: bool = True, unread_signature: bool = False,
                    root: str | None = None, label: str | None = None) -> dict[str, Any]:
    """The report/inspect block for a manifest's signature (JSON-ready).

    ``{"status": "unsigned"}``, or ``{"status": "signed", vendor, fingerprint, public_key,
    signed_at, signed_root, algorithm, trust, ...}`` (see :func:`vendor_trust`).
    ``unread_signature``: the manifest carries a signature section of a version this
    reader does not understand (it then counts as unsigned). ``root``/``label``: the
    manifest's root (hex) and label; an unsigned manifest then also says when its content
    was seen signed (:func:`downgrade_facts`), and a signed one is remembered.
    """
    if sig is None:
        out: dict[str, Any] = {"status": "unsigned"}
        if unread_signature:
            out["note"] = "carries a signature of a newer kind this version cannot check"
        if root is not None:
            seen = downgrade_facts(root)
            if "note" in seen and "note" in out:
                seen["note"] = f"{out['note']}; it {seen['note']}"
            out.update(seen)
        return out
    return {"status": "signed", **sig.facts(), **vendor_trust(sig, record=record, label=label)}


def manifest_signature_facts(m: Manifest, *, record: bool = True) -> dict[str, Any]:
    """:func:`signature_facts` of a parsed manifest (its signature is verified by the reader)."""
    return signature_facts(m.signature, record=record, root=m.root, label=m.label,
                           unread_signature=any(s.type == SEC_SIGNATURE for s in m.optional_sections))


def check_signed(m: Manifest, source: str | os.PathLike[str] | None, required: bool) -> None:
    """Refuse an offer that is unsigned, or signed with a key other than the one recorded for
    its vendor, when signed offers are ``required`` (``compare --require-signed``).

    Nothing is recorded here (the report's own facts record a first use).

    Raises:
        ManifestError: the offer does not meet the requirement (exit status 4).
    """
    if not required:
        return
    facts = manifest_signature_facts(m, record=False)
    if facts["status"] != "signed":
        raise ManifestError("manifest refused: it is not signed, and signed offers are required "
                            "(--require-signed or compare.require_signed); ask the vendor for a signed manifest",
                            path=source)
    if facts["trust"] == "changed":
        raise ManifestError(f"manifest refused: it is signed by {facts['vendor']!r} with key {facts['fingerprint']}, "
                            f"but the key recorded for that vendor is {facts['known_fingerprint']}; check with the "
                            "vendor, then `overlap vendors trust KEYFILE` if the new key is theirs", path=source)


def trust_key_file(keyfile: str | os.PathLike[str], *, path: str | os.PathLike[str] | None = None
                   ) -> tuple[KnownVendor, KnownVendor | None]:
    """Pin the key in a vendor's public key file (replacing any key recorded for that name).

    Returns:
        ``(pinned, replaced)``: the new entry and the one it replaced (or ``None``).

    Raises:
        InputError: the key file cannot be read or is not a public key file.
    """
    try:
        raw = read_regular(keyfile, 64 * 1024 + 1)
        text = raw.decode("utf-8") if len(raw) <= 64 * 1024 else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the public key file ({exc})", path=keyfile) from None
    key: VendorKey = parse_public_key_text(text, source=keyfile)
    folded = _fold(key.name)
    pinned = KnownVendor(key.name, key.public_key, "pinned", _now())
    with _store_lock(path):
        vendors, signed = _load(path)
        replaced = next((v for v in vendors if _fold(v.name) == folded), None)
        _save([v for v in vendors if _fold(v.name) != folded] + [pinned], path, signed)
    return pinned, replaced


def forget_vendor(name: str, *, path: str | os.PathLike[str] | None = None) -> KnownVendor | None:
    """Remove the key recorded for ``name``; the next signed manifest under it is a first use.

    Returns:
        The removed entry, or ``None`` when the name was not known.
    """
    folded = _fold(name)
    with _store_lock(path):
        vendors, signed = _load(path)
        gone = next((v for v in vendors if _fold(v.name) == folded), None)
        if gone is not None:
            _save([v for v in vendors if _fold(v.name) != folded], path, signed)
    return gone
