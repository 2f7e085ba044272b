"""Which windows of a delivered frame to fingerprint, so a crop past the library's ladder lines up.

A library stores, per sample, the code of the whole frame and of a few windows of it (its crop
ladder: centred rungs, for the thorough preset off-centre windows, edge strips). A manifest
carries only the offered frame's whole code, so a copy cut differently from every stored window
(off-centre, to another aspect, deeper than a rung, or shrunk into another picture) reads new.
With the delivered pixels a window of the *offered* frame can be cut out that shows exactly what
a stored window of the owned frame shows: when the offer shows owned window ``H`` (fractions of
the owned frame) and the library stores window ``G`` inside ``H``, the offered window
``(G - H.origin) / H.size`` is ``G``.

The hypotheses ``H`` are the edits a reseller makes: centred crops keeping 70-95%, windows
against a corner or an edge, 16:9 cut to 4:3 or to square, and the owned picture shrunk into a
larger one (picture in picture). Each is paired with the largest stored window it contains;
hypotheses no stored window fits are dropped (with the fast preset's shallow ladder most deep
crops have none: the ladder bounds what can be found, not this search).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.fingerprint import variant_box
from overlap_desktop.core.types import Variant

__all__ = ["MAX_WINDOWS", "CropWindow", "Hypothesis", "crop_windows", "hypotheses"]

#: Windows searched at most per sample (each is a code per sample, and a search of the library).
MAX_WINDOWS = 48
#: A stored window may poke out of a hypothesis by this fraction of the frame (rounding).
SLACK = 0.004
_UNIT = 3840  # the content box variant_box is asked about, so its roundings are negligible


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """An edit: the offer shows owned window ``(x, y, w, h)`` (fractions; ``w > 1`` is a shrink)."""

    x: float
    y: float
    w: float
    h: float
    words: str


@dataclass(frozen=True, slots=True)
class CropWindow:
    """A window of the offered frame to fingerprint.

    Attributes:
        x, y, w, h: The window in fractions of the offered content box.
        stored: The library window it should equal (``Variant()``: the whole owned frame).
        words: The edit in plain words ("cropped to 80%, towards the top left").
        variant: The edit as a report variant (crop fraction and anchor).
        whole: The window holds a whole owned frame (shrunk into another picture): its contrast
            is its own, not the offered frame's.
    """

    x: float
    y: float
    w: float
    h: float
    stored: Variant
    words: str
    variant: Variant
    whole: bool = False


def _anchored(k_w: float, k_h: float, ax: float, ay: float, words: str) -> Hypothesis:
    return Hypothesis((1 - k_w) * ax, (1 - k_h) * ay, k_w, k_h, words)


_CORNERS = {(0.0, 0.0): "top left", (1.0, 0.0): "top right", (0.0, 1.0): "bottom left", (1.0, 1.0): "bottom right",
            (0.5, 0.0): "top", (0.5, 1.0): "bottom", (0.0, 0.5): "left", (1.0, 0.5): "right"}


def hypotheses() -> list[Hypothesis]:
    """The edits searched, most likely first."""
    out = [_anchored(k, k, 0.5, 0.5, f"cropped to {round(k * 100)}%") for k in (0.95, 0.9, 0.85, 0.8, 0.75, 0.7)]
    for k in (0.95, 0.9, 0.85, 0.8):
        out += [_anchored(k, k, ax, ay, f"cropped to {round(k * 100)}%, towards the {where}")
                for (ax, ay), where in _CORNERS.items()]
    for k_w, aspect in ((0.75, "4:3"), (0.5625, "square")):
        out += [_anchored(k_w, 1.0, ax, 0.5, f"16:9 cut to {aspect}" + ("" if ax == 0.5 else f", {where}"))
                for ax, where in ((0.5, ""), (0.0, "left part"), (1.0, "right part"))]
    # Shrunk into a larger picture: the owned frame fills half of each dimension somewhere.
    for px in (0.0, 0.125, 0.25, 0.375, 0.5):
        for py in (0.0, 0.125, 0.25, 0.375, 0.5):
            out.append(Hypothesis(-px / 0.5, -py / 0.5, 2.0, 2.0, "shrunk into another picture"))
    return out


def _stored_box(v: Variant) -> tuple[float, float, float, float]:
    b = variant_box(prep.Box(0, _UNIT, 0, _UNIT), v)
    return b.x0 / _UNIT, b.y0 / _UNIT, b.width / _UNIT, b.height / _UNIT


def _inside(g: tuple[float, float, float, float], h: Hypothesis) -> bool:
    gx, gy, gw, gh = g
    return (gx >= h.x - SLACK and gy >= h.y - SLACK and gx + gw <= h.x + h.w + SLACK
            and gy + gh <= h.y + h.h + SLACK)


def crop_windows(stored: Sequence[Variant], limit: int = MAX_WINDOWS) -> list[CropWindow]:
    """Offered-frame windows for the library's stored windows ``stored`` (its upright variants).

    Windows equal to the whole offered frame are left out (the quote's own search has them).
    """
    upright = [v for v in dict.fromkeys(Variant(crop=v.crop, edge=v.edge, edge_depth=v.edge_depth, offset=v.offset)
                                        for v in stored)]
    boxes = [(v, _stored_box(v)) for v in upright]
    out: list[CropWindow] = []
    seen: set[tuple[int, int, int, int]] = set()
    for h in hypotheses():
        fits = [(v, g) for v, g in boxes if _inside(g, h)]
        if not fits:
            continue
        v, (gx, gy, gw, gh) = max(fits, key=lambda f: f[1][2] * f[1][3])
        x, y, w, hh = (gx - h.x) / h.w, (gy - h.y) / h.h, gw / h.w, gh / h.h
        x, y = min(max(x, 0.0), 1.0 - w), min(max(y, 0.0), 1.0 - hh)
        key = (round(x * 192), round(y * 192), round(w * 192), round(hh * 192))
        if (w >= 0.995 and hh >= 0.995) or key in seen or w <= 0.05 or hh <= 0.05:
            continue
        seen.add(key)
        keep = min(h.w, h.h, 1.0)
        centre = (h.x + h.w / 2, h.y + h.h / 2)
        centred = abs(centre[0] - 0.5) < 1e-6 and abs(centre[1] - 0.5) < 1e-6
        # A whole owned frame shrunk into another picture is no crop: a Variant has no word for a
        # shrink, so it reads as the owned picture itself (the window's words say where it was).
        variant = Variant(crop=keep, offset=None if centred else centre) if keep < 1.0 else Variant()
        out.append(CropWindow(x, y, w, hh, v, h.words, variant, whole=h.w > 1.0 and h.h > 1.0))
        if len(out) >= limit:
            break
    return out
