"""Vendor names as people see them: a look-alike skeleton, and names that mix scripts.

A vendor name is the vendor's own text, so a forger can spell a known vendor's name with
characters that look the same (Cyrillic "А" for Latin "A", a zero-width space inside a word,
fullwidth letters). Names are therefore compared by a *skeleton* in the spirit of Unicode
TS #39's confusable detection: NFKC, case folding, default-ignorable characters removed, each
character mapped to the ASCII it is confusable with (Unicode's confusables data,
:mod:`~overlap_desktop.core.manifest.confusable_table`), and all spaces removed (so "Acme
Robotics", "AcmeRobotics" and "Acme\u200bRobotics" meet). Two names with one skeleton are one
vendor as far as keys go; a name whose letters come from more than one script is marked
wherever it is shown.
"""

from __future__ import annotations

import unicodedata

from overlap_desktop.core.manifest.confusable_table import CONFUSABLE_ASCII

__all__ = ["mixed_scripts", "name_skeleton"]

#: Default-ignorable code points outside category Cf (which is dropped whole): the combining
#: grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation selectors and
#: the variation selectors (Unicode's DerivedCoreProperties, Default_Ignorable_Code_Point).
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
                     (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0000, 0xE0FFF))
#: Script words of character names that count as one writing system for "mixed scripts".
_SAME_SCRIPT = {"HIRAGANA": "JAPANESE", "KATAKANA": "JAPANESE", "CJK": "JAPANESE"}
_STYLE_WORDS = frozenset({"FULLWIDTH", "HALFWIDTH", "MATHEMATICAL", "MODIFIER", "CIRCLED", "PARENTHESIZED"})


def _ignorable(ch: str) -> bool:
    cp = ord(ch)
    return unicodedata.category(ch) == "Cf" or any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES)


def name_skeleton(name: str) -> str:
    """The form vendor names are compared in (see the module docstring).

    ``name_skeleton("Аcme Robotics") == name_skeleton("acme robotics") == "acmerobotics"``
    (the first with a Cyrillic А).
    """
    text = unicodedata.normalize("NFKC", name).casefold()
    mapped = "".join(CONFUSABLE_ASCII.get(ch, ch) for ch in text if not _ignorable(ch))
    # Once more: a mapped character can combine with what follows, and case may change again.
    text = unicodedata.normalize("NFKC", mapped).casefold()
    return "".join(ch for ch in text if not ch.isspace() and not _ignorable(ch))


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None  # digits, spaces and punctuation belong to every script
    norm = unicodedata.normalize("NFKC", ch)[:1] or ch
    words = [w for w in unicodedata.name(norm, "").split(" ") if w not in _STYLE_WORDS]
    return _SAME_SCRIPT.get(words[0], words[0]) if words else None


def mixed_scripts(name: str) -> list[str]:
    """The scripts of the letters of ``name`` when there is more than one (``["CYRILLIC",
    "LATIN"]``), else ``[]``. Taken from the Unicode character names' first word, which is
    the script for the letters of every alphabet a vendor name is likely to use."""
    scripts = {s for s in map(_script, name) if s}
    return sorted(scripts) if len(scripts) > 1 else []
