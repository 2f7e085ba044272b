"""PDQ fingerprints of sampled frames, with the corpus-side variants.

One sampled frame becomes one 256-bit PDQ code per *variant* (identity, mirrored,
centred crops, one-sided edge crops, rotations). The query side (manifests) only
ever stores the identity; the corpus side stores every configured variant, so a
mirrored or cropped copy lands near one of them and the match can say which.

How a frame is hashed (``prep`` holds the normalisation and its ``PREP_ID``):

* the reader scales the frame to the square working image (swscale, at decode);
* letterbox bars are trimmed, giving the content box;
* for each crop geometry the box is cut out and area-resampled (exact box filter)
  to 64x64 luma, rounded to 8 bits (pdqhash takes ``uint8`` images) and hashed by
  ``pdqhash.compute_float``,
  which returns PDQ's 16x16 DCT coefficients and quality. Thresholding at the median
  gives exactly ``pdqhash.compute``'s bits; at 64x64 the mirror and rotations are
  exact sign flips / transposes of those coefficients (what PDQ's dihedral mode
  does), so orientation variants cost no extra hashing.

Bits are packed MSB first (``np.packbits``), so ``code.tobytes().hex()`` is the
canonical 64-hex form used by the Java reference and python-threatexchange.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from overlap_desktop.core.ingest import prep
from overlap_desktop.core.ingest.frames import MAX_HOLD_S, sample_on_grid
from overlap_desktop.core.types import (
    CODE_BYTES,
    NS_PER_S,
    CancelCallback,
    Span,
    StreamFingerprints,
    TimedFrame,
    Variant,
)

__all__ = [
    "ALGO_ID",
    "DEFAULT_EDGE_LADDER",
    "EDGE_DEFAULT_RUNG",
    "PRESET_LADDERS",
    "STATIC_BITS",
    "bits_to_code",
    "code_to_hex",
    "fingerprint_stream",
    "hamming",
    "hash_hash_image",
    "hex_to_code",
    "prep_and_hash_image",
    "resample",
    "variants_for",
    "variants_from_config",
]

#: Names the hash: PDQ, 256 bits, as computed by pdqhash on the ``prep`` image.
ALGO_ID = "pdq256-v1"

#: Centred crop rungs (fraction of each dimension kept) per preset. Chosen from the
#: measurements in docs/architecture.md: a crop costs ~8-12 bits per 1% away from
#: the nearest rung, so rungs sit 3-4% apart.
PRESET_LADDERS: dict[str, tuple[float, ...]] = {
    "fast": (0.96, 0.92),
    "balanced": (0.96, 0.92, 0.88, 0.85, 0.82, 0.79, 0.76, 0.73, 0.70),
    "thorough": (0.96, 0.92, 0.88, 0.85, 0.82, 0.79, 0.76, 0.73, 0.70,
                 0.67, 0.64, 0.61, 0.58, 0.55),
}
#: Off-centre windows of the thorough preset: the kept fraction, and the window's
#: position along each axis as a fraction of the slack (0 = against the left/top edge,
#: 1 = against the right/bottom). A window 1% of the frame away from a stored one costs
#: ~20-28 bits, so positions are 1/8 of the slack (1.9% of the frame) apart near the
#: edges and corners. Not mirrored: 48 windows are already the bulk of a thorough index.
THOROUGH_OFFCENTRE_KEEP = 0.85
THOROUGH_OFFCENTRE_ANCHORS: tuple[float, ...] = (0.0, 0.125, 0.25, 0.5, 0.75, 0.875, 1.0)
#: Depths of the one-sided edge-crop ladder (``index.edge_ladder`` default): 3% steps,
#: since an edge crop 3% away from a rung is already ~40-48 bits off (architecture.md).
DEFAULT_EDGE_LADDER: tuple[float, ...] = (0.06, 0.09, 0.12, 0.15, 0.18, 0.21, 0.24)
#: The bottom strip removed by the always-on edge rung (a trimmed HUD / timestamp bar).
EDGE_DEFAULT_RUNG = 0.08
#: Identity codes within this many bits of a run's first frame count as "no change".
STATIC_BITS = 12

# Sign pattern of PDQ's DCT basis under reversal of one axis: basis k uses frequency
# k+1, so reversing the axis multiplies coefficient k by (-1)^(k+1).
_SIGN = ((-1.0) ** (np.arange(16) + 1)).astype(np.float32)

# ----------------------------------------------------------------------------- codes


def bits_to_code(bits: np.ndarray) -> np.ndarray:
    """Pack 256 PDQ bits (bit 0 first) into ``uint8 (32,)``, MSB first."""
    return np.packbits(np.asarray(bits, dtype=np.uint8).reshape(-1)[:256])


def code_to_hex(code: np.ndarray) -> str:
    """Canonical 64-hex form of a code (matches the Java / python-threatexchange hex)."""
    c = np.asarray(code, dtype=np.uint8)
    if c.shape != (CODE_BYTES,):
        raise ValueError(f"a PDQ code is {CODE_BYTES} bytes, got shape {c.shape}")
    return c.tobytes().hex()


def hex_to_code(text: str) -> np.ndarray:
    """Parse a 64-hex PDQ hash into ``uint8 (32,)``.

    Raises:
        ValueError: not 64 hexadecimal digits.
    """
    s = text.strip()
    if len(s) != 2 * CODE_BYTES:
        raise ValueError(f"a PDQ hash is {2 * CODE_BYTES} hex digits, got {len(s)}")
    return np.frombuffer(bytes.fromhex(s), dtype=np.uint8).copy()


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between codes ``uint8 (..., 32)``, with numpy broadcasting.

    Returns:
        ``int32`` array of the broadcast shape without the last axis.
    """
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint8), np.asarray(b, dtype=np.uint8))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).sum(axis=-1, dtype=np.int32)
    return _POPCOUNT[x].sum(axis=-1, dtype=np.int32)  # pragma: no cover - numpy < 2


# ----------------------------------------------------------------------------- hashing


def _dct_of_luma(y64: np.ndarray) -> tuple[np.ndarray, int]:
    """PDQ's 16x16 DCT coefficients (row-major, ``[vertical][horizontal]``) and quality."""
    import pdqhash  # local: keeps ``import overlap_desktop`` light

    g = np.clip(np.rint(y64), 0, 255).astype(np.uint8)
    img = np.repeat(g[:, :, None], 3, axis=2)
    flat, quality = pdqhash.compute_float(img)
    return np.asarray(flat, dtype=np.float32)[::-1].reshape(16, 16), int(quality)


def _orient(coef: np.ndarray, mirrored: bool, rotation: int) -> np.ndarray:
    """Coefficients of the image mirrored left-right, then rotated counter-clockwise."""
    c = coef * _SIGN[None, :] if mirrored else coef
    r = rotation % 360
    if r == 90:
        return (c * _SIGN[None, :]).T
    if r == 180:
        return c * _SIGN[None, :] * _SIGN[:, None]
    if r == 270:
        return (c * _SIGN[:, None]).T
    return c


def _coef_to_code(coef: np.ndarray) -> np.ndarray:
    v = coef.reshape(-1)[::-1]
    # "> median" of 256 values is "> the 128th smallest" (the median lies between the
    # 128th and 129th, and nothing lies strictly between them): same bits, no mean.
    return np.packbits(v > np.partition(v, 127)[127])


def hash_hash_image(img64: np.ndarray) -> tuple[np.ndarray, int]:
    """PDQ code and quality of an already prepared ``HASH_SIZE`` image (RGB or luma)."""
    y = prep.luma(img64) if img64.ndim == 3 else img64.astype(np.float32)
    coef, q = _dct_of_luma(y)
    return _coef_to_code(coef), q


def prep_and_hash_image(rgb: np.ndarray, variants: Sequence[Variant] = (Variant(),)
                        ) -> tuple[np.ndarray, int]:
    """Normalise one RGB image exactly like a sampled frame and hash it.

    Args:
        rgb: ``uint8 (h, w, 3)`` image of any size.
        variants: Variants to compute (identity by default).

    Returns:
        ``(codes uint8 (V, 32), quality of the identity)``.
    """
    work = prep.to_work_image(rgb)
    return _FrameHasher(variants).hash_work(work)


# ----------------------------------------------------------------------------- variants


def _geometry_box(box: prep.Box, v: Variant) -> prep.Box:
    """The region of the content box that variant ``v`` hashes."""
    y0, y1, x0, x1 = box.y0, box.y1, box.x0, box.x1
    h, w = box.height, box.width
    if v.crop < 1.0:
        ch, cw = max(8, int(round(h * v.crop))), max(8, int(round(w * v.crop)))
        if v.offset is None:
            cy, cx = y0 + (h - ch) // 2, x0 + (w - cw) // 2
        else:
            # offset is the window centre in 0..1 of the content box, clamped inside.
            cx = int(round(x0 + v.offset[0] * w - cw / 2))
            cy = int(round(y0 + v.offset[1] * h - ch / 2))
            cx = min(max(cx, x0), x1 - cw)
            cy = min(max(cy, y0), y1 - ch)
        y0, y1, x0, x1 = cy, cy + ch, cx, cx + cw
        h, w = ch, cw
    if v.edge is not None and v.edge_depth > 0:
        n_v = int(round(h * v.edge_depth))
        n_h = int(round(w * v.edge_depth))
        if v.edge == "top":
            y0 += n_v
        elif v.edge == "bottom":
            y1 -= n_v
        elif v.edge == "left":
            x0 += n_h
        elif v.edge == "right":
            x1 -= n_h
    return prep.Box(y0, max(y1, y0 + 1), x0, max(x1, x0 + 1))


def _geometry_key(v: Variant) -> tuple[Any, ...]:
    return (v.crop, v.edge, v.edge_depth, v.offset)


class _FrameHasher:
    """Hashes working images into all requested variants, sharing work between them."""

    def __init__(self, variants: Sequence[Variant]) -> None:
        if not variants:
            raise ValueError("at least one variant is needed")
        self.variants = tuple(variants)
        groups: dict[tuple[Any, ...], list[tuple[int, Variant]]] = {}
        for i, v in enumerate(self.variants):
            if v.rotation % 90:
                raise ValueError(f"rotation must be a multiple of 90 degrees, not {v.rotation}")
            groups.setdefault(_geometry_key(v), []).append((i, v))
        self.groups = list(groups.values())

    def hash_work(self, work: np.ndarray) -> tuple[np.ndarray, int]:
        """Codes ``uint8 (V, 32)`` and the identity-geometry quality for a working image."""
        y = prep.luma(work)
        box = prep.content_box_from_luma(y)
        out = np.empty((len(self.variants), CODE_BYTES), dtype=np.uint8)
        quality = -1
        for members in self.groups:
            g = _geometry_box(box, members[0][1])
            coef, q = _dct_of_luma(prep.region_luma(y, g))
            if quality < 0:  # the first geometry is the identity's (variants[0])
                quality = q
            for i, v in members:
                out[i] = _coef_to_code(_orient(coef, v.mirrored, v.rotation))
        return out, max(quality, 0)


def variants_for(*, preset: str = "fast", crop_ladder: Sequence[float] | None = None,
                 crop_edges: Sequence[str] = (), edge_ladder: Sequence[float] = DEFAULT_EDGE_LADDER,
                 dihedral: str = "mirror", default_edge: bool = True) -> tuple[Variant, ...]:
    """Build the corpus variant list.

    Order: identity first, then per geometry (identity, centred rungs, default bottom
    rung, edge ladders) the upright and, with ``dihedral`` "mirror" or "all", the
    mirrored code; "all" adds the six other orientations of the uncropped frame. The
    thorough preset ends with its off-centre windows (upright only). ``Variant.offset``
    is the window centre as a fraction of the frame.

    Args:
        preset: ``fast``, ``balanced`` or ``thorough`` (ladders in :data:`PRESET_LADDERS`).
        crop_ladder: Centred rungs (fractions kept) replacing the preset's ladder;
            an empty sequence disables centred crops.
        crop_edges: Sides that get the edge ladder.
        edge_ladder: Depths (fractions removed) for each side in ``crop_edges``.
        dihedral: ``"mirror"``, ``"all"`` or ``"none"``.
        default_edge: Include the bottom :data:`EDGE_DEFAULT_RUNG` rung.

    Raises:
        ValueError: unknown preset or dihedral mode, or a fraction outside (0, 1).
    """
    if preset not in PRESET_LADDERS:
        raise ValueError(f"unknown preset {preset!r} (use {', '.join(PRESET_LADDERS)})")
    if dihedral not in ("mirror", "all", "none"):
        raise ValueError(f"unknown dihedral mode {dihedral!r}")
    ladder = PRESET_LADDERS[preset] if crop_ladder is None else tuple(crop_ladder)
    geoms: list[Variant] = [Variant()]
    for c in ladder:
        if not 0.0 < c < 1.0:
            raise ValueError(f"crop rung {c} is not a fraction between 0 and 1")
        geoms.append(Variant(crop=round(float(c), 4)))
    if default_edge:
        geoms.append(Variant(edge="bottom", edge_depth=EDGE_DEFAULT_RUNG))
    for side in crop_edges:
        if side not in ("top", "bottom", "left", "right"):
            raise ValueError(f"unknown side {side!r}")
        for d in edge_ladder:
            if not 0.0 < d < 1.0:
                raise ValueError(f"edge depth {d} is not a fraction between 0 and 1")
            geoms.append(Variant(edge=side, edge_depth=round(float(d), 4)))  # type: ignore[arg-type]
    offcentre: list[Variant] = []
    if preset == "thorough":
        keep = THOROUGH_OFFCENTRE_KEEP
        for ay in THOROUGH_OFFCENTRE_ANCHORS:
            for ax in THOROUGH_OFFCENTRE_ANCHORS:
                if ax == 0.5 and ay == 0.5:
                    continue  # the centred rung
                offcentre.append(Variant(crop=keep, offset=(round(ax * (1 - keep) + keep / 2, 4),
                                                            round(ay * (1 - keep) + keep / 2, 4))))
    seen: set[Variant] = set()
    out: list[Variant] = []

    def add(v: Variant) -> None:
        if v not in seen:
            seen.add(v)
            out.append(v)

    for g in geoms:
        add(g)
        if dihedral in ("mirror", "all"):
            add(Variant(mirrored=True, crop=g.crop, edge=g.edge, edge_depth=g.edge_depth, offset=g.offset))
        if dihedral == "all" and g == Variant():
            for mirrored in (False, True):
                for rot in (90, 180, 270):
                    add(Variant(mirrored=mirrored, rotation=rot))
    for g in offcentre:
        add(g)
    return tuple(out)


def variants_from_config(config: Mapping[str, Any]) -> tuple[Variant, ...]:
    """Corpus variants for a resolved :class:`~overlap_desktop.config.Config`.

    Reads ``index.preset``, ``index.crop_ladder``, ``index.crop_edges``,
    ``index.edge_ladder`` and ``index.dihedral``. ``variants[0]`` is ``Variant()``.
    """
    def get(key: str, default: Any) -> Any:
        try:
            v = config[key]
        except KeyError:
            return default
        return default if v is None else v

    return variants_for(
        preset=str(get("index.preset", "fast")),
        crop_ladder=get("index.crop_ladder", None),
        crop_edges=tuple(get("index.crop_edges", ())),
        edge_ladder=tuple(get("index.edge_ladder", DEFAULT_EDGE_LADDER)),
        dihedral=str(get("index.dihedral", "mirror")),
    )


# ----------------------------------------------------------------------------- streams


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` index runs where ``mask`` is true."""
    if mask.size == 0:
        return []
    d = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def _static_runs(codes0: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """Runs of at least ``min_len`` samples whose codes stay within :data:`STATIC_BITS`
    of the run's first sample (anchored, so a slow drift is not called static)."""
    n = codes0.shape[0]
    out: list[tuple[int, int]] = []
    # Where the very next sample already differs no run can start: skip those fast.
    starts = np.flatnonzero(hamming(codes0[1:], codes0[:-1]) <= STATIC_BITS)
    i = 0
    while i < n:
        k = int(np.searchsorted(starts, i))
        if k >= starts.size:
            break
        i = int(starts[k])
        # Look ahead in growing chunks: linear in the stream length, not quadratic.
        j, chunk = i + 1, 16
        while j < n:
            d = hamming(codes0[j:j + chunk], codes0[i])
            far = np.flatnonzero(d > STATIC_BITS)
            if far.size:
                j += int(far[0])
                break
            j += d.shape[0]
            chunk = min(chunk * 2, 4096)
        if j - i >= min_len:
            out.append((i, j))
        i = j
    return out


def _spans(times_ns: np.ndarray, runs: list[tuple[int, int]], step_s: float, end_s: float,
           reason: str) -> list[Span]:
    spans = []
    for a, b in runs:
        start = int(times_ns[a]) / NS_PER_S
        stop = min(int(times_ns[b - 1]) / NS_PER_S + step_s, max(end_s, start))
        spans.append(Span(round(start, 6), round(stop, 6), reason))
    return spans


def fingerprint_stream(frames: Iterable[TimedFrame], *, fps: float,
                       variants: Sequence[Variant] = (Variant(),), quality_floor: int = 50,
                       static_seconds: float = 5.0, duration_s: float | None = None,
                       on_frame: Callable[[float], None] | None = None,
                       cancel: CancelCallback | None = None) -> StreamFingerprints:
    """Fingerprint one stream on the real-time grid.

    Samples the frame shown at each grid time ``k / fps``, normalises it (``prep``)
    and hashes every variant. Samples below ``quality_floor`` are kept but not usable
    (spans with reason ``"featureless"``); stretches where the picture does not change
    for ``static_seconds`` or more are not usable either (reason ``"static"``).

    Args:
        frames: Frames in presentation order (a reader's ``frames()``).
        fps: Sampling grid rate.
        variants: Variants to store; ``variants[0]`` must be ``Variant()``.
        quality_floor: PDQ quality below which a sample is not usable.
        static_seconds: Minimum length of a static stretch.
        duration_s: Stream duration if known (the grid then runs to it).
        on_frame: Called with the seconds of footage done after each sample.
        cancel: Polled between frames.

    Returns:
        The stream's fingerprints.

    Raises:
        ValueError: bad arguments.
        Cancelled: when ``cancel()`` turns true.
    """
    variants = tuple(variants)
    if not variants or variants[0] != Variant():
        raise ValueError("variants[0] must be the identity Variant()")
    hasher = _FrameHasher(variants)
    times: list[int] = []
    quals: list[int] = []
    codes: list[np.ndarray] = []
    last_no = -1
    last: tuple[np.ndarray, int] | None = None
    for s in sample_on_grid(frames, fps, duration_s=duration_s, cancel=cancel):
        if s.frame_no != last_no or last is None:
            # A frame held over several grid points is converted and hashed once.
            work = s.frame.to_rgb(prep.WORK_SIZE, prep.WORK_SIZE)
            last = hasher.hash_work(work)
            last_no = s.frame_no
        times.append(s.t_ns)
        codes.append(last[0])
        quals.append(last[1])
        if on_frame is not None:
            on_frame(s.t_ns / NS_PER_S)
    n = len(times)
    times_ns = np.asarray(times, dtype=np.int64)
    quality = np.asarray(quals, dtype=np.uint8)
    code_arr = (np.stack(codes) if n else np.zeros((0, len(variants), CODE_BYTES), np.uint8))
    step_s = 1.0 / fps
    if duration_s is not None and math.isfinite(duration_s) and duration_s > 0:
        # A stated duration far beyond what decoded (a truncated file) is not trusted.
        dur = min(float(duration_s), n * step_s + MAX_HOLD_S)
    else:
        dur = n * step_s
    low = quality < quality_floor
    usable = ~low
    spans = _spans(times_ns, _runs(low), step_s, dur, "featureless")
    min_len = max(2, int(math.ceil(static_seconds * fps)))
    ok_idx = np.flatnonzero(~low)
    if ok_idx.size >= min_len:
        # Static runs among the informative samples; runs are mapped back to grid indexes.
        for a, b in _static_runs(code_arr[ok_idx, 0], min_len):
            lo, hi = int(ok_idx[a]), int(ok_idx[b - 1]) + 1
            if (hi - lo) * step_s + 1e-9 < static_seconds:
                continue
            usable[lo:hi] = False
            spans.extend(_spans(times_ns, [(lo, hi)], step_s, dur, "static"))
    spans.sort(key=lambda sp: (sp.start_s, sp.reason))
    return StreamFingerprints(times_ns=times_ns, quality=quality, codes=code_arr, variants=variants,
                              usable=usable, indeterminate=spans, fps=float(fps), duration_s=dur)


def resample(fp: StreamFingerprints, fps: float, *, identity_only: bool = False) -> StreamFingerprints:
    """Stride a stream's fingerprints down to about ``fps`` samples per second.

    Keeps every ``round(fp.fps / fps)``-th sample with its exact grid time, so a
    manifest at 1 fps still lines up in real time with a 4 fps index.

    Args:
        fp: Fingerprints to thin.
        fps: Target rate; at or above ``fp.fps`` nothing is dropped.
        identity_only: Keep only ``variants[0]`` (what manifests store).

    Raises:
        ValueError: ``fps`` is not positive.
    """
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"sampling rate must be a positive number, not {fps!r}")
    stride = max(1, int(round(fp.fps / fps)))
    sl = slice(None, None, stride)
    codes = fp.codes[sl, :1] if identity_only else fp.codes[sl]
    variants = fp.variants[:1] if identity_only else fp.variants
    return StreamFingerprints(times_ns=fp.times_ns[sl].copy(), quality=fp.quality[sl].copy(),
                              codes=np.ascontiguousarray(codes), variants=variants,
                              usable=fp.usable[sl].copy(), indeterminate=list(fp.indeterminate),
                              fps=fp.fps / stride, duration_s=fp.duration_s)
