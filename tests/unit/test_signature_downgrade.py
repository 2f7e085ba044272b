"""A signed manifest's content met again without its signature is named as a downgrade.

Only the exact content counts (the unsigned file's root is the content root the signature
signed); other unsigned content, even under the same label, stays a plain "unsigned".
"""

from __future__ import annotations

import json

from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.vendors import forget_vendor, known_vendors_file, manifest_signature_facts
from overlap_desktop.core.report.signing import signature_changed, signature_sentence
from tests.unit.test_manifest_signature import signed


def test_the_unsigned_copy_of_signed_content_is_a_warning_and_other_content_is_not() -> None:
    data, plain = signed(seed=1, label="Q3 kitchen teleop")
    before = manifest_signature_facts(parse_manifest(plain), record=False)
    assert before == {"status": "unsigned"} and not signature_changed(before)  # nothing seen signed yet
    manifest_signature_facts(parse_manifest(data))  # the signed one is seen (and remembered)
    facts = manifest_signature_facts(parse_manifest(plain), record=False)
    assert facts["stripped"]["vendor"] == "Acme Robotics" and signature_changed(facts)
    assert signature_sentence(facts).startswith("WARNING: unsigned, but this exact content was seen signed by "
                                                "Acme Robotics")
    # Same label, other content: no evidence, no warning.
    _other_signed, other_plain = signed(seed=2, label="Q3 kitchen teleop")
    other = manifest_signature_facts(parse_manifest(other_plain), record=False)
    assert other == {"status": "unsigned"} and signature_sentence(other).startswith("unsigned: nothing")


def test_remembered_signed_manifests_survive_forgetting_a_key_and_old_files_read() -> None:
    data, plain = signed(seed=3)
    manifest_signature_facts(parse_manifest(data))
    doc = json.loads(known_vendors_file().read_text())
    assert [r["vendor"] for r in doc["signed"]] == ["Acme Robotics"]
    assert forget_vendor("Acme Robotics") is not None
    assert "stripped" in manifest_signature_facts(parse_manifest(plain), record=False)
    # A file written before signed manifests were remembered has no "signed" list: it still reads.
    known_vendors_file().write_text(json.dumps({"format": "overlap-known-vendors/1", "vendors": []}))
    assert manifest_signature_facts(parse_manifest(plain), record=False) == {"status": "unsigned"}


def test_an_unreadable_store_never_stops_an_unsigned_offer_and_says_the_check_was_not_done() -> None:
    _data, plain = signed(seed=4)
    known_vendors_file().parent.mkdir(parents=True, exist_ok=True)
    known_vendors_file().write_text("[" * 100_000)
    facts = manifest_signature_facts(parse_manifest(plain), record=False)
    assert facts["status"] == "unsigned" and "could not be checked" in facts["note"]
    assert "could not be checked against the signed manifests" in signature_sentence(facts)
    assert not signature_changed(facts)


def test_a_store_that_cannot_be_written_does_not_fail_a_known_signed_offer(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from overlap_desktop.core.manifest import vendors
    from overlap_desktop.errors import InputError

    data, _plain = signed(seed=5)
    manifest_signature_facts(parse_manifest(data))  # first use: recorded
    other, _ = signed(seed=6)  # same vendor and key, new content: only remembering it would write

    def refuse(*_a, **_k):  # type: ignore[no-untyped-def]
        raise InputError("cannot save the known vendors: read-only file system")

    monkeypatch.setattr(vendors, "_save", refuse)
    facts = manifest_signature_facts(parse_manifest(other))
    assert facts["trust"] == "known"
