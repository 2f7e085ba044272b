"""The user-facing words of overlap desktop and what they mean.

Shared by the HTML reports, the app (tooltips, help) and docs/glossary.md; a test keeps
the three in step.
"""

from __future__ import annotations

__all__ = ["GLOSSARY", "glossary_tip"]

#: The user-facing words of overlap desktop and what they mean, shared by the HTML report,
#: the app (tooltips, help) and docs/glossary.md (a test keeps the three in step).
GLOSSARY: dict[str, str] = {
    "owned footage": "Footage you already have: the files in your library.",
    "offered footage": "The footage a seller offers you, described by the seller's manifest.",
    "library": "The fingerprints of your owned footage that overlap desktop keeps to compare offers with. "
               "It holds fingerprints only, never copies of your videos.",
    "manifest": "A file from the seller listing each offered file with its size, checksum and fingerprints, "
                "so you can screen an offer without receiving the footage.",
    "seal": "A 64-character code computed from everything in the manifest (its Merkle root). Quote it when "
            "you buy: the delivered files can later be checked against exactly this manifest.",
    "match": "A stretch of offered footage that shows the same pictures as a stretch of owned footage, even "
             "if re-encoded, cropped, mirrored or played at another speed.",
    "new footage": "Offered time that was judged and is neither owned nor a repeat of other footage in the "
                   "same offer: what you would actually get by buying.",
    "can't tell": "Offered time with some evidence of being owned that does not prove it: a match shorter "
                  "than the evidence floor, a weak match, a match to several owned episodes about equally "
                  "(the same scripted motion), or a match to footage too still to place in time. It counts "
                  "neither as owned nor as new.",
    "repeat": "A stretch of the offer that shows the same footage as another part of the offer (for example "
              "a file that is another offered file slowed down). One copy is listed: the one that bills more "
              "time, or at the same speed the later one.",
    "real footage": "How much owned footage lies behind matched offered time. A copy slowed to half speed "
                    "offers twice the hours of the real footage it holds.",
    "evidence floor": "The shortest match that is counted (10 seconds unless you change it). Shorter matches "
                      "are listed as evidence but not counted.",
    "weak evidence": "A match that could too easily be a coincidence (for example two recordings of the same "
                     "scene). It is listed so nothing is hidden, but not counted.",
    "chance of a coincidence": "How often a match at least this strong would turn up by chance alone in "
                               "this comparison. \"About 1 in a billion\" means it is almost certainly a "
                               "copy.",
    "could not be judged": "Offered time with too little visual detail to compare (a still or blank "
                           "picture). It counts neither as matched nor as new.",
    "how alike": "How close matched frames are, from near-identical through very close, close, similar and "
                 "loose to weak. Copies of the same frame are usually near-identical to close.",
    "speed": "Playback speed of the offered copy compared with the owned original: 0.5x is slowed to half "
             "speed. A range is shown when the speed is measured; \"slowed\" or \"sped up\" is said only "
             "when the whole range is off normal speed.",
    "splice": "Pieces that follow each other in the offered file but come from different owned footage.",
    "present and exact": "A delivered file with exactly the bytes the manifest quoted (same size and "
                         "checksum), possibly under another name.",
    "altered": "A delivered file with a quoted name but other bytes than quoted.",
    "missing": "A quoted file that is not in the delivery.",
    "not in the quote": "A delivered file the manifest does not list. Listed, but it does not make the "
                        "delivery fail.",
    "system files": "Files operating systems leave in folders (Thumbs.db, desktop.ini, .DS_Store, ._ files "
                    "and other hidden files). Ignored when checking a delivery.",
}


def glossary_tip(term: str) -> str:
    """The :data:`GLOSSARY` explanation of ``term`` (case-insensitive), or ``""``."""
    return GLOSSARY.get(str(term).strip().lower(), "")

