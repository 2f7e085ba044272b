"""Who signed an offer, in one plain sentence (CLI, HTML, CSV, the app): issue 37.

The facts come from :func:`~overlap_desktop.core.manifest.vendors.signature_facts`
(``report.manifest["signature"]``, ``inspect_manifest(...)["signature"]``). The vendor's
name is the vendor's own text, so it is neutralised like every other manifest string.
"""

from __future__ import annotations

from collections.abc import Mapping

from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.model import Report

__all__ = ["mixed_script_mark", "report_signature_lines", "signature_changed", "signature_sentence"]

_TRUST_WORDS = {
    "first-use": "first manifest seen from this vendor: its key is now recorded; compare the fingerprint with "
                 "the one the vendor gave you",
    "known": "the key seen before for this vendor",
    "pinned": "the key you pinned for this vendor",
}


def mixed_script_mark(scripts: object) -> str:
    """`` [name mixes Cyrillic and Latin letters]`` for a name whose letters come from several
    scripts (a look-alike spelling's usual sign), else ``""``."""
    if not isinstance(scripts, list) or len(scripts) < 2:
        return ""
    words = [safe_text(str(s), max_len=24).title() for s in scripts[:4]]
    return f" [name mixes {', '.join(words[:-1])} and {words[-1]} letters]"


def signature_changed(facts: object) -> bool:
    """The signature facts call for a warning: the offer is signed with a key other than the one
    recorded for its vendor's name, or it is unsigned although this exact content was seen signed
    (a signature removed: a downgrade)."""
    if not isinstance(facts, Mapping):
        return False
    if facts.get("status") == "signed":
        return facts.get("trust") == "changed"
    return isinstance(facts.get("stripped"), Mapping)


def _downgrade_sentence(facts: Mapping[str, object]) -> str:
    """The WARNING for an unsigned offer whose exact content a vendor signed, or ``""``."""
    seen = facts.get("stripped")
    if not isinstance(seen, Mapping):
        return ""
    vendor = safe_text(seen.get("vendor", ""), max_len=120)
    fp = safe_text(seen.get("fingerprint", ""), max_len=40)
    when = safe_text(seen.get("signed_at", ""), max_len=24)
    return (f"WARNING: unsigned, but this exact content was seen signed by {vendor} (key {fp}, signed {when}): "
            "a copy without its signature (removed, or exported unsigned); nothing in this file says who made "
            "it, so treat it as not coming from that vendor until they send you the signed file")


def signature_sentence(facts: object) -> str:
    """``signed by Acme Robotics, key 3F2A-91C0-5B7E-0D14 (...)``, ``unsigned: ...``, a
    WARNING for a changed key, or ``""`` when ``facts`` is missing (a report from before
    signatures)."""
    if not isinstance(facts, Mapping):
        return ""
    if facts.get("status") != "signed":
        downgrade = _downgrade_sentence(facts)
        if downgrade:
            return downgrade
        note = facts.get("note")
        return "unsigned: nothing in the manifest says who made it" + (f" (it {note})" if note else "")
    vendor = safe_text(facts.get("vendor", ""), max_len=120) + mixed_script_mark(facts.get("mixed_scripts"))
    fp = safe_text(facts.get("fingerprint", ""), max_len=40)
    if signature_changed(facts):
        known = safe_text(facts.get("known_fingerprint", ""), max_len=40)
        alike = facts.get("looks_like")
        known_name = safe_text(alike, max_len=120) if isinstance(alike, str) and alike else vendor
        also = f" (a name that looks like {known_name}, a vendor you know)" if known_name != vendor else ""
        return (f"WARNING: signed as {vendor}{also} with key {fp}, but the key recorded for {known_name} is "
                f"{known}: this manifest may not come from that vendor; check the fingerprint with them before "
                "relying on it")
    out = f"signed by {vendor}, key {fp}"
    words = _TRUST_WORDS.get(str(facts.get("trust")))
    if words:
        out += f" ({words})"
    others = facts.get("also_known_as")
    if isinstance(others, list) and others:
        out += "; the same key was seen under the name " + ", ".join(safe_text(o, max_len=80) for o in others[:3])
    return out


def report_signature_lines(report: Report) -> list[str]:
    """One line per manifest of the report (two for ``compare-offers``), empty for reports without one."""
    own = signature_sentence(report.manifest.get("signature"))
    other = report.settings.get("other_manifest")
    other_line = signature_sentence(other.get("signature")) if isinstance(other, Mapping) else ""
    if report.kind == "compare-offers" and (own or other_line):
        return [f"Offer A: {own or 'not recorded'}.", f"Offer B: {other_line or 'not recorded'}."]
    return [own[0].upper() + own[1:] + "."] if own else []
