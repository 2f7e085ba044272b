"""The audit's receipt: what was quoted, what arrived, and what the footage turned out to be.

A receipt (JSON, schema :data:`RECEIPT_SCHEMA`, documented in docs/report-schema.md) binds
the quote's Merkle root and its signer to the delivered digests and every verdict. With a
signing key on this computer (``overlap key create``; the buyer's own) it is signed: an
Ed25519 signature over the canonical JSON of everything but the ``signature`` block, so the
buyer holds signed evidence as the vendor's signed quote is. :func:`check_receipt` reads one
back strictly and verifies the signature and the totals (``overlap inspect RECEIPT``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from overlap_desktop.core.audit.reproduce import NOT_CHECKED, NOT_REPRODUCED, PARTLY, REPRODUCE_BITS, REPRODUCED
from overlap_desktop.core.audit.result import AuditResult, FileAudit
from overlap_desktop.core.manifest.keys import SigningKey, load_signing_key, signing_key_info
from overlap_desktop.core.manifest.signature import fingerprint
from overlap_desktop.core.manifest.verify import verify_verdict
from overlap_desktop.core.report.output import dumps_json, write_atomically
from overlap_desktop.errors import ConfigError, InputError

__all__ = ["BYTES_WORDS", "RECEIPT_SCHEMA", "audit_verdict", "check_receipt", "file_line", "make_receipt",
           "receipt_dict", "sign_receipt", "write_receipt"]

#: Identifier and version of the receipt JSON. Readers refuse other identifiers and later versions.
RECEIPT_SCHEMA = "overlap.receipt/1"
_DOMAIN = b"overlap receipt v1\x00"
_MAX_RECEIPT = 64 << 20
#: The bytes check's status words in a receipt.
BYTES_WORDS = {"matched": "exact", "altered": "altered", "missing": "missing"}
_FINGERPRINT_STATES = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_CHECKED)


def audit_verdict(result: AuditResult) -> str:
    """The audit in one plain sentence."""
    bad = result.failing()
    fp_bad = [f for f in bad if f.check.fingerprints != REPRODUCED]
    if result.ok:
        return (f"Every quoted file is present and exact, and its quoted fingerprints are those of its bytes "
                f"({len(result.files)} file{'s' if len(result.files) != 1 else ''}).")
    parts = []
    if not result.verify.complete:
        parts.append(verify_verdict(result.verify))
    if fp_bad:
        parts.append(f"{len(fp_bad)} of {len(result.files)} quoted files do not show what the quote says: "
                     + "; ".join(f.check.words for f in fp_bad[:5]) + (" ..." if len(fp_bad) > 5 else "") + ".")
    return " ".join(parts)


def file_line(f: FileAudit) -> str:
    """One line per file for the terminal and the app."""
    out = f"{f.name}: bytes {BYTES_WORDS.get(f.bytes, f.bytes)}; fingerprints {f.check.fingerprints}"
    words = f.verdict_words()
    return out + (f"; {words}" if words else "")


def _file_dict(f: FileAudit) -> dict[str, Any]:
    final = f.final.to_dict() if f.final is not None else {"owned_seconds": None, "new_seconds": None,
                                                             "cant_tell_seconds": None}
    return {"name": f.name, "delivered": f.delivered, "sha256": f.sha256, "bytes": BYTES_WORDS.get(f.bytes, f.bytes),
            "fingerprints": f.check.fingerprints, "fingerprint_words": f.check.words,
            "streams": [s.to_dict() for s in f.check.streams], **final,
            "quoted": f.quoted.to_dict() if f.quoted is not None else None,
            "changed": f.changed, "verdict_words": f.verdict_words(), "copy_of": f.copy_of,
            "crop_seconds": round(f.crop_seconds, 3),
            "settled": [{"start_s": a, "end_s": b, "verdict": v, "reason": r} for a, b, v, r in f.settled],
            "warnings": list(f.warnings)}


def receipt_dict(result: AuditResult) -> dict[str, Any]:
    """The receipt without its signature block (schema :data:`RECEIPT_SCHEMA`)."""
    from overlap_desktop import __version__

    v = result.verify
    counts = {state: sum(1 for f in result.files if f.check.fingerprints == state) for state in _FINGERPRINT_STATES}
    return {
        "schema": RECEIPT_SCHEMA,
        "ok": result.ok,
        "verdict_text": audit_verdict(result),
        "checked": datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "tool_version": __version__,
        "tolerance_bits": REPRODUCE_BITS,
        "manifest": {"path": v.manifest, "root": v.root, "label": v.label, "anonymized": v.anonymized,
                     "signature": dict(v.signature)},
        "delivery": {"data_dir": v.data_dir, "bytes_verdict": v.verdict, "extra": list(v.extra),
                     "unreadable": list(v.unreadable)},
        "library": {"index": result.index, "rescreened": result.rescreened, "settle": result.settle,
                    "crops": result.crops, "added_files": result.added, "same_as_quote": result.same_as_quote},
        "files": [_file_dict(f) for f in result.files],
        "totals": {"files": len(result.files),
                   "bytes_exact": sum(1 for f in result.files if f.bytes == "matched"),
                   "fingerprints": counts, "final": result.totals("final"), "quoted": result.totals("quoted")},
        "warnings": list(result.warnings),
    }


def _canonical(body: dict[str, Any]) -> bytes:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return _DOMAIN + hashlib.sha256(text.encode("ascii")).digest()


def sign_receipt(body: dict[str, Any], key: SigningKey | None) -> dict[str, Any]:
    """``body`` with its ``signature`` block: signed with ``key``, or saying why it is not."""
    out = dict(body)
    if key is None:
        out["signature"] = {"status": "unsigned",
                            "note": "no signing key on this computer (make one with `overlap key create`)"}
        return out
    sig = key.private_key.sign(_canonical(body))
    pub = key.public
    out["signature"] = {"status": "signed", "signer": pub.name, "fingerprint": pub.fingerprint,
                        "public_key": pub.public_key_b64, "signature": base64.b64encode(sig).decode("ascii"),
                        "signed_at": out["checked"]}
    return out


def _buyer_key() -> tuple[SigningKey | None, str]:
    """The key on this computer, unlocked if it can be without asking; else why not."""
    try:
        if signing_key_info() is None:
            return None, ""
        return load_signing_key(), ""
    except (ConfigError, InputError) as exc:
        return None, exc.message


def make_receipt(result: AuditResult, *, key: SigningKey | None | bool = True) -> dict[str, Any]:
    """The receipt of ``result``; ``key=True`` signs with this computer's key when there is one
    (a key that cannot be unlocked without asking leaves it unsigned, saying why)."""
    note = ""
    if key is True:
        key, note = _buyer_key()
    data = sign_receipt(receipt_dict(result), key if isinstance(key, SigningKey) else None)
    if note:
        data["signature"]["note"] = f"not signed: {note}"
    return data


def write_receipt(receipt: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a receipt as JSON, atomically.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, dumps_json(receipt))
    return p


def check_receipt(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a receipt strictly and check it: schema, signature (when signed), and that its totals
    are those of its files.

    Returns:
        The receipt, with ``"check"``: ``{"signature": "valid" | "unsigned", "fingerprint": ...}``.

    Raises:
        InputError: not a receipt, a version this reader does not know, a signature that does not
            verify (the receipt was changed after signing), or totals that do not add up.
    """
    p = Path(path)
    try:
        if p.stat().st_size > _MAX_RECEIPT:
            raise InputError("too large for a receipt", path=p)
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable receipt ({type(exc).__name__})", path=p) from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("overlap.receipt/"):
        raise InputError("not an overlap receipt (no overlap.receipt schema)", path=p)
    if data["schema"] != RECEIPT_SCHEMA:
        raise InputError(f"receipt version {data['schema']} is newer than this version reads ({RECEIPT_SCHEMA}); "
                         "update overlap", path=p)
    sig = data.get("signature")
    body = {k: v for k, v in data.items() if k != "signature"}
    files = body.get("files")
    if not isinstance(files, list) or not isinstance(body.get("totals"), dict):
        raise InputError("the receipt has no file list or totals", path=p)
    counts = {s: sum(1 for f in files if isinstance(f, dict) and f.get("fingerprints") == s)
              for s in _FINGERPRINT_STATES}
    if body["totals"].get("files") != len(files) or body["totals"].get("fingerprints") != counts:
        raise InputError("the receipt's totals are not those of its files: it was edited", path=p)
    ok = all(isinstance(f, dict) and f.get("bytes") == "exact" and f.get("fingerprints") == REPRODUCED for f in files)
    if bool(body.get("ok")) and not ok:
        raise InputError("the receipt says ok but lists files that are not: it was edited", path=p)
    check: dict[str, Any] = {"signature": "unsigned"}
    if isinstance(sig, dict) and sig.get("status") == "signed":
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            pub = base64.b64decode(str(sig.get("public_key", "")), validate=True)
            raw = base64.b64decode(str(sig.get("signature", "")), validate=True)
            Ed25519PublicKey.from_public_bytes(pub).verify(raw, _canonical(body))
        except (binascii.Error, ValueError, InvalidSignature):
            raise InputError("the receipt's signature does not verify: it was changed after it was signed, or "
                             "the signature is damaged", path=p) from None
        if fingerprint(pub) != sig.get("fingerprint"):
            raise InputError("the receipt's key fingerprint is not that of its key", path=p)
        check = {"signature": "valid", "signer": sig.get("signer", ""), "fingerprint": fingerprint(pub)}
    data["check"] = check
    return data
