"""The receipt as a self-contained HTML page (Jinja2, autoescaped, like the other reports)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.output import write_atomically
from overlap_desktop.core.report.signing import signature_sentence

__all__ = ["receipt_context", "render_receipt_html", "write_receipt_html"]


def _seconds(d: Mapping[str, Any] | None) -> str:
    if not d or d.get("owned_seconds") is None:
        return "-"
    parts = [f"{float(d[k]):.0f} s {w}" for k, w in (("owned_seconds", "owned"), ("new_seconds", "new"),
                                                      ("cant_tell_seconds", "can't tell")) if float(d[k]) >= 0.5]
    return ", ".join(parts) or "0 s"


def _receipt_signature(sig: Mapping[str, Any]) -> str:
    if sig.get("status") == "signed":
        return (f"signed by {safe_text(sig.get('signer', ''), max_len=120)}, key {sig.get('fingerprint', '')} "
                "(check it with `overlap inspect` on the JSON receipt)")
    return "unsigned" + (f" ({sig['note']})" if sig.get("note") else "")


def receipt_context(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``receipt.html.j2`` shows, from a receipt dictionary (strings raw: the template escapes)."""
    files = []
    for f in receipt["files"]:
        final = {k: f.get(k) for k in ("owned_seconds", "new_seconds", "cant_tell_seconds")}
        files.append({"name": f["name"], "bytes": f["bytes"], "fingerprints": f["fingerprints"],
                      "holds": f["bytes"] == "exact" and f["fingerprints"] == "reproduced",
                      "changed": bool(f.get("changed")), "quoted": _seconds(f.get("quoted")),
                      "final": _seconds(final), "copy_of": f.get("copy_of", ""), "words": f["fingerprint_words"],
                      "settled": [f"{s['start_s']:g}-{s['end_s']:g} s: {s['verdict']} ({s['reason']})"
                                  for s in f.get("settled", [])]})
    t = receipt["totals"]
    fp = t["fingerprints"]
    cards = [(t["files"], "quoted files"), (t["bytes_exact"], "bytes exact"), (fp["reproduced"], "reproduced"),
             (fp["partly reproduced"], "partly reproduced"), (fp["not reproduced"], "not reproduced")]
    if fp.get("not checked"):
        cards.append((fp["not checked"], "not checked"))
    lib = receipt["library"]
    method = ("Every delivered file was decoded the way indexing decodes it and its fingerprints compared with "
              "the quoted ones at the quoted times.")
    if lib["rescreened"]:
        method += " The quote's and the delivered footage's fingerprints were both screened against the library."
    if lib.get("added_files"):
        method += f" {lib['added_files']} delivered files were added to the library in the same pass."
    return {"title": "Delivery audit receipt", "ok": bool(receipt["ok"]), "verdict": receipt["verdict_text"],
            "label": safe_text(receipt["manifest"].get("label") or "", max_len=120),
            "root": receipt["manifest"]["root"],
            "quote_signature": signature_sentence(receipt["manifest"]["signature"]),
            "receipt_signature": _receipt_signature(receipt.get("signature") or {}), "cards": cards,
            "files": files, "tolerance": receipt["tolerance_bits"],
            "extra": [(x.get("path", ""), int(x.get("size", 0))) for x in receipt["delivery"]["extra"]],
            "warnings": receipt.get("warnings", []), "tool_version": receipt["tool_version"],
            "checked": receipt["checked"], "method": method, "schema": receipt["schema"],
            "manifest": receipt["manifest"]["path"], "data_dir": receipt["delivery"]["data_dir"],
            "library": lib["index"] or "(none: no re-screen)"}


def render_receipt_html(receipt: Mapping[str, Any]) -> str:
    from overlap_desktop.core.report.html import render_page

    return render_page("receipt.html.j2", receipt_context(receipt))


def write_receipt_html(receipt: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the receipt page atomically.

    Raises:
        InputError: the destination cannot be written.
    """
    p = Path(path)
    write_atomically(p, render_receipt_html(receipt).encode("utf-8", errors="replace"))
    return p
