"""Look-alike vendor names meet the known vendor's key; mixed-script names are marked.

A look-alike of a known vendor under another key must read as that vendor's key changing
(and so be refused by ``--require-signed``); names that only resemble one another in
spelling (another letter, an accent) stay separate vendors.
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from overlap_desktop.core.manifest.names import mixed_scripts, name_skeleton
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.vendors import check_signed, manifest_signature_facts, vendor_trust
from overlap_desktop.core.report.signing import signature_sentence
from overlap_desktop.errors import ManifestError
from tests.unit.test_manifest_signature import KEY, OTHER, signed
from tests.unit.test_vendor_keys import _sig

LOOK_ALIKES = [
    "\u0410cme Robotics",        # Cyrillic capital A
    "Acme R\u043ebotics",        # Cyrillic small o
    "Acme\u200bRobotics",        # a zero-width space instead of the space
    "AcmeRobotics",              # no space at all
    "Acme\u00a0Robotics",        # no-break space
    "Ac\u00adme Robotics",       # soft hyphen (invisible)
    "Acme\ufe0f Robotics",       # variation selector
    "\uff21\uff43\uff4d\uff45 Robotics",  # fullwidth
    "Acme Rob\u03bftics",        # Greek omicron
    "Acme Robot\u0456cs",        # Cyrillic i
    "Acrne Robotics",            # r + n drawn as m (UTS #39's own example)
]
DIFFERENT = ["Acne Robotics", "Acme R\u00f6botics", "Apex Robotics", "Acme Robotics Ltd", "Acme Robots"]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_look_alikes_share_the_skeleton(name: str) -> None:
    assert name_skeleton(name) == name_skeleton("Acme Robotics")


@pytest.mark.parametrize("name", DIFFERENT)
def test_other_names_stay_other_vendors(name: str) -> None:
    assert name_skeleton(name) != name_skeleton("Acme Robotics")


def test_mixed_scripts_are_named_and_single_scripts_are_not() -> None:
    assert mixed_scripts("\u0410cme Robotics") == ["CYRILLIC", "LATIN"]
    assert mixed_scripts("Acme R\u03bfbotics") == ["GREEK", "LATIN"]
    for one in ("Acme Robotics 2", "M\u00fcller GmbH", "\u041c\u043e\u0441\u043a\u0432\u0430",
                "\u6771\u4eac\u30ed\u30dc", "\uff21\uff43\uff4d\uff45 Robotics"):
        assert mixed_scripts(one) == [], one


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_a_look_alike_with_another_key_reads_as_the_vendor_key_changing(name: str) -> None:
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    assert vendor_trust(_sig("Acme Robotics", a))["trust"] == "first-use"
    facts = vendor_trust(_sig(name, b))
    assert facts["trust"] == "changed" and facts["looks_like"] == "Acme Robotics"
    words = signature_sentence({"status": "signed", "vendor": name, "fingerprint": "X", **facts})
    assert words.startswith("WARNING") and "looks like Acme Robotics" in words, words
    if mixed_scripts(name):
        assert "[name mixes" in words and "letters]" in words, words


def test_a_different_vendor_is_still_a_first_use() -> None:
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    vendor_trust(_sig("Acme Robotics", a))
    for name in DIFFERENT:
        assert vendor_trust(_sig(name, b), record=False)["trust"] == "first-use", name


def test_require_signed_refuses_a_cyrillic_look_alike_of_a_known_vendor() -> None:
    honest = parse_manifest(signed(key=KEY, vendor="Acme Robotics")[0])
    manifest_signature_facts(honest)  # first use: records Acme Robotics' key
    check_signed(honest, "honest.ovlm", True)
    fake = parse_manifest(signed(key=OTHER, vendor="\u0410cme Robotics")[0])
    with pytest.raises(ManifestError, match="key recorded for that vendor"):
        check_signed(fake, "fake.ovlm", True)
    facts = manifest_signature_facts(fake, record=False)
    assert facts["mixed_scripts"] == ["CYRILLIC", "LATIN"]
    assert "[name mixes Cyrillic and Latin letters]" in signature_sentence(facts)


def test_a_mixed_script_first_use_is_marked_too() -> None:
    facts = vendor_trust(_sig("Acme R\u043ebotics", Ed25519PrivateKey.generate()))
    assert facts["trust"] == "first-use"
    words = signature_sentence({"status": "signed", "vendor": "Acme R\u043ebotics", "fingerprint": "X", **facts})
    assert "[name mixes Cyrillic and Latin letters]" in words


def test_vendors_list_marks_a_mixed_script_name(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from overlap_desktop.cli.main import main
    from overlap_desktop.core.manifest.keys import VendorKey, public_key_text
    from tests.unit.test_signature_edge_cases import raw

    keyfile = tmp_path / "acme.pub"
    keyfile.write_text(public_key_text(VendorKey("\u0410cme Robotics", raw(KEY))), encoding="utf-8")
    assert main(["vendors", "trust", str(keyfile)]) == 0
    assert "[name mixes Cyrillic and Latin letters]: key" in capsys.readouterr().out
    assert main(["vendors", "list"]) == 0
    assert "[name mixes Cyrillic and Latin letters]" in capsys.readouterr().out
