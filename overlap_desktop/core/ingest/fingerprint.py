"""PDQ fingerprints of sampled frames, with the corpus-side variants.

One sampled frame becomes one 256-bit PDQ code per *variant* (identity, mirrored,
centred crops, one-sided edge crops, rotations). The query side (manifests) only
ever stores the identity; the corpus side stores every configured variant, so a
mirrored or cropped copy lands near one of them and the match can say which.

How a frame is hashed (``prep`` holds the normalisation and its ``PREP_ID``):

* the reader scales the frame to the square working image (swscale, at decode);
* letterbox bars are trimmed, giving the content box;
* for each crop geometry the box is cut out and area-resampled (exact box filter)
  to 64x64 luma, stretched if the sample is dark and low in contrast (``prep.contrast_gains``)
  and rounded to 8 bits (pdqhash takes ``uint8`` images);
* PDQ's 16x16 DCT coefficients and quality are computed for a batch of such images
  at once (:mod:`.pdq_batch`, bit for bit what ``pdqhash.compute_float`` returns).
  Thresholding at the median gives exactly ``pdqhash.compute``'s bits; at 64x64 the
  mirror and rotations are exact sign flips / transposes of those coefficients (what
  PDQ's dihedral mode does), so orientation variants cost no extra hashing.

Bits are packed MSB first (``np.packbits``), so ``code.tobytes().hex()`` is the
canonical 64-hex form used by the Java reference and python-threatexchange.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from overlap_desktop.core.ingest import pdq_batch, prep
from overlap_desktop.core.ingest import resume as saved
from overlap_desktop.core.ingest.frames import MAX_HOLD_S, GridState, sample_on_grid
from overlap_desktop.core.ingest.stillness import (
    DIM_NOISE_BITS,
    STATIC_BITS,
    quiet_step,
    runs,
    static_bits_for,
    static_runs,
)
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
    "bits_to_code",
    "code_to_hex",
    "fingerprint_stream",
    "hash_hash_image",
    "hex_to_code",
    "prep_and_hash_image",
    "resample",
    "variant_box",
    "variants_for",
    "variants_from_config",
]

#: Names the hash: PDQ, 256 bits, as computed by pdqhash on the ``prep`` image.
ALGO_ID = "pdq256-v1"

#: Centred crop rungs (fraction of each dimension kept) per preset. Chosen from the
#: measurements in docs/architecture.md: a crop costs ~8-12 bits per 1% away from the nearest
#: rung. Rungs 4% apart (the earlier 0.96, 0.92) left a 5% cut from every border (keeping 90%)
#: 22-28 bits median from both, on real footage at any frame size: too far for a fixed camera,
#: whose other moments sit close, so such copies were found or not depending on the footage.
#: Rungs 3% apart keep any centred cut within 1.5% of a rung (at most ~20 bits median; 0.90 is
#: 14 from 0.89); the fast ladder covers cuts up to ~7% per border in 12 codes per sample
#: (under the 6 MB per footage hour budget); balanced and thorough keep their deeper rungs.
_FAST_RUNGS: tuple[float, ...] = (0.98, 0.95, 0.92, 0.89)
PRESET_LADDERS: dict[str, tuple[float, ...]] = {
    "fast": _FAST_RUNGS,
    "balanced": (*_FAST_RUNGS, 0.85, 0.82, 0.79, 0.76, 0.73, 0.70),
    "thorough": (*_FAST_RUNGS, 0.85, 0.82, 0.79, 0.76, 0.73, 0.70, 0.67, 0.64, 0.61, 0.58, 0.55),
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


# ----------------------------------------------------------------------------- hashing


def hash_hash_image(img64: np.ndarray) -> tuple[np.ndarray, int]:
    """PDQ code and quality of an already prepared ``HASH_SIZE`` image (RGB or luma).

    Raises:
        ValueError: the image is not ``HASH_SIZE`` x ``HASH_SIZE``.
    """
    y = prep.luma(img64) if img64.ndim == 3 else np.asarray(img64, dtype=np.float32)
    if y.shape != (prep.HASH_SIZE, prep.HASH_SIZE):
        raise ValueError(f"a prepared image is {prep.HASH_SIZE}x{prep.HASH_SIZE}, got {y.shape}")
    small = np.clip(np.rint(y), 0, 255)[None]
    coefs, quality = pdq_batch.coefs_and_quality(small)
    return pdq_batch.codes_from_coefs(coefs)[0], int(quality[0])


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
    if v.aspect < 1.0:  # the centre of the width at full height: another aspect ratio
        w = max(8, int(round(w * v.aspect)))
        x0, x1 = x0 + (box.width - w) // 2, x0 + (box.width - w) // 2 + w
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


def variant_box(box: prep.Box, v: Variant) -> prep.Box:
    """The region of a content box that variant ``v`` hashes (its crop, edge strip and anchor;
    orientation is applied to the resampled region), for checks that need the same pixels."""
    return _geometry_box(box, v)


#: Sampled frames hashed together (~2 MB of working images); larger batches fall out of cache.
HASH_BATCH = 16
def _geometry_key(v: Variant) -> tuple[Any, ...]:
    return (v.crop, v.edge, v.edge_depth, v.offset, v.aspect)


class _FrameHasher:
    """Hashes working images into all requested variants, sharing work between them.

    Work is done a batch of samples at a time (:meth:`hash_batch`): the luma of all of
    them in one operation, each crop geometry resampled for every sample whose content
    box agrees, and every 64x64 image of the batch through one DCT (:mod:`.pdq_batch`,
    bit for bit ``pdqhash``'s).
    """

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
        self._scratch: dict[str, np.ndarray] = {}
        #: The contrast gains of the last batch hashed (1 = not stretched).
        self.last_gains = np.ones(0, np.float32)

    def _buffer(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """A ``float32`` scratch array kept between batches (a fresh one of megabytes is
        fresh pages from the system, each faulted in on first touch)."""
        buf = self._scratch.get(name)
        if buf is None or buf.shape != shape:
            buf = self._scratch[name] = np.empty(shape, np.float32)
        return buf

    def hash_work(self, work: np.ndarray) -> tuple[np.ndarray, int]:
        """Codes ``uint8 (V, 32)`` and the identity-geometry quality for a working image."""
        codes, quality = self.hash_batch(work[None])
        return codes[0], int(quality[0])

    def hash_batch(self, works: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Codes ``uint8 (N, V, 32)`` and identity qualities ``(N,)`` of ``(N, h, w, 3)`` images."""
        y = self._buffer("luma", works.shape[:3])
        for k in range(works.shape[0]):  # one image at a time: its float temporaries stay in cache
            prep.luma(works[k], out=y[k])
        return self.hash_luma_batch(y)

    def hash_luma_batch(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`hash_batch` of working images already reduced to ``float32 (N, h, w)`` luma."""
        n = y.shape[0]
        boxes = [prep.content_box_from_luma(y[k]) for k in range(n)]
        g_count = len(self.groups)
        # The 64x64 image of sample k, geometry g is row g * n + k.
        small = self._buffer("small", (g_count * n, prep.HASH_SIZE, prep.HASH_SIZE))
        for gi, members in enumerate(self.groups):
            regions: dict[prep.Box, list[int]] = {}
            for k, box in enumerate(boxes):
                regions.setdefault(_geometry_box(box, members[0][1]), []).append(k)
            for g, ks in regions.items():
                if len(ks) == n:  # the usual case: every sample has the same content box
                    small[gi * n:(gi + 1) * n] = prep.resample_luma(y[:, g.y0:g.y1, g.x0:g.x1])
                else:
                    small[np.asarray(ks) + gi * n] = prep.resample_luma(y[ks, g.y0:g.y1, g.x0:g.x1])
        # Low-contrast samples are stretched (prep.contrast_gains), every geometry of a sample
        # by the gain and around the mean of its identity image (group 0, which holds variants[0]).
        gains = self.last_gains = prep.contrast_gains(small[:n])
        if (gains != 1.0).any():
            means = small[:n].reshape(n, -1).mean(axis=1)
            for gi in range(g_count):
                prep.stretch_contrast(small[gi * n:(gi + 1) * n], gains, means)
        # pdqhash takes 8-bit images: the resampled luma is rounded as it always was.
        np.clip(np.rint(small, out=small), 0, 255, out=small)
        # The quality is the identity geometry's (group 0, which holds variants[0]).
        coefs, quality = pdq_batch.coefs_and_quality(small, rated=n)
        out = np.empty((n, len(self.variants), CODE_BYTES), dtype=np.uint8)
        for gi, members in enumerate(self.groups):
            c = coefs[gi * n:(gi + 1) * n]
            for i, v in members:
                out[:, i] = pdq_batch.codes_from_coefs(c, v.mirrored, v.rotation)
        return out, np.maximum(quality, 0)


def variants_for(*, preset: str = "fast", crop_ladder: Sequence[float] | None = None,
                 crop_edges: Sequence[str] = (), edge_ladder: Sequence[float] = DEFAULT_EDGE_LADDER,
                 dihedral: str = "mirror", default_edge: bool = True,
                 aspect_crops: Sequence[float] = ()) -> tuple[Variant, ...]:
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
        aspect_crops: Widths kept by centred aspect crops at full height (``index.aspect_crops``;
            0.75: 16:9 cropped to 4:3 or 4:3 to square; 0.5625: 16:9 to square), upright only.

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
    if any(not 0.0 < a < 1.0 for a in aspect_crops):
        raise ValueError(f"aspect crops {tuple(aspect_crops)} are not all fractions between 0 and 1")
    aspects = [Variant(aspect=round(float(a), 4)) for a in aspect_crops]
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
    for g in offcentre + aspects:
        add(g)
    return tuple(out)


def variants_from_config(config: Mapping[str, Any]) -> tuple[Variant, ...]:
    """Corpus variants for a resolved :class:`~overlap_desktop.config.Config`.

    Reads ``index.preset``, ``index.crop_ladder``, ``index.crop_edges``,
    ``index.edge_ladder``, ``index.dihedral`` and ``index.aspect_crops``. ``variants[0]`` is ``Variant()``.
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
        aspect_crops=tuple(get("index.aspect_crops", ())),
    )


# ----------------------------------------------------------------------------- streams


def _spans(times_ns: np.ndarray, runs: list[tuple[int, int]], step_s: float, end_s: float,
           reason: str) -> list[Span]:
    spans = []
    for a, b in runs:
        start = int(times_ns[a]) / NS_PER_S
        stop = min(int(times_ns[b - 1]) / NS_PER_S + step_s, max(end_s, start))
        spans.append(Span(round(start, 6), round(stop, 6), reason))
    return spans


class _SampleBatcher:
    """Collects a stream's working images as luma and hashes them :data:`HASH_BATCH` at a time.

    Batching is what makes hashing cheap (:meth:`_FrameHasher.hash_luma_batch`). Each image
    is reduced to luma into one preallocated array as it comes (a reader may reuse its
    buffers): from RGB with PDQ's weights (:func:`prep.luma`), or taken as is from a
    reader that hands out luma itself (:meth:`add_luma`).
    """

    def __init__(self, hasher: _FrameHasher) -> None:
        self.hasher = hasher
        self.pending = np.empty((HASH_BATCH, prep.WORK_SIZE, prep.WORK_SIZE), np.float32)
        self.filled = 0
        self.codes: list[np.ndarray] = []
        self.quality: list[np.ndarray] = []
        self.stretched: list[np.ndarray] = []
        self.sample_of: list[int] = []  # for each grid point, the hashed image it shows
        self.hashed = 0

    def add(self, work: np.ndarray) -> None:
        """Queue a ``uint8 (h, w, 3)`` RGB working image."""
        prep.luma(work, out=self.pending[self.filled])
        self._added()

    def add_luma(self, y: np.ndarray) -> None:
        """Queue a working image given as ``(h, w)`` luma (whole numbers 0..255 or floats)."""
        self.pending[self.filled] = y
        self._added()

    def _added(self) -> None:
        self.filled += 1
        self.sample_of.append(self.hashed)
        self.hashed += 1
        if self.filled == HASH_BATCH:
            self._flush()

    def repeat(self) -> None:
        self.sample_of.append(self.hashed - 1)

    def _flush(self) -> None:
        if self.filled:
            codes, quality = self.hasher.hash_luma_batch(self.pending[:self.filled])
            self.codes.append(codes)
            self.quality.append(quality)
            self.stretched.append(self.hasher.last_gains > 1.0)
            self.filled = 0

    def restore(self, r: saved.StreamResume) -> None:
        """Continue after a checkpoint: the images hashed before it, and which sample showed which."""
        self.codes, self.quality, self.stretched = [r.codes], [r.quality], [r.stretched]
        self.sample_of = r.sample_of.tolist()
        self.hashed = len(r.codes)

    def since(self, batches: int, samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(sample_of, codes, quality, stretched)`` added after ``batches`` hashed batches and
        ``samples`` grid points, or None while a batch is half full (see :mod:`.resume`)."""
        if self.filled:
            return None
        v = len(self.hasher.variants)
        new = self.codes[batches:]
        return (np.asarray(self.sample_of[samples:], np.int64),
                np.concatenate(new) if new else np.zeros((0, v, CODE_BYTES), np.uint8),
                np.concatenate(self.quality[batches:]) if new else np.zeros(0, np.uint8),
                np.concatenate(self.stretched[batches:]) if new else np.zeros(0, bool))

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Codes ``(n, V, 32)``, qualities ``uint8 (n,)`` and contrast-stretched flags ``bool (n,)``
        of every grid point so far."""
        self._flush()
        v = len(self.hasher.variants)
        if not self.sample_of:
            return np.zeros((0, v, CODE_BYTES), np.uint8), np.zeros(0, np.uint8), np.zeros(0, bool)
        which = np.asarray(self.sample_of, dtype=np.int64)
        codes = np.concatenate(self.codes)[which]
        return (codes, np.concatenate(self.quality).astype(np.uint8)[which],
                np.concatenate(self.stretched)[which])


def fingerprint_stream(frames: Iterable[TimedFrame], *, fps: float,
                       variants: Sequence[Variant] = (Variant(),), quality_floor: int = 50,
                       static_seconds: float = 5.0, duration_s: float | None = None,
                       on_frame: Callable[[float], None] | None = None,
                       cancel: CancelCallback | None = None, resume: saved.StreamResume | None = None,
                       on_checkpoint: Callable[[saved.StreamCheckpoint], None] | None = None,
                       checkpoint_s: float = saved.CHECKPOINT_S) -> StreamFingerprints:
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
        resume: Saved progress to continue from; ``frames`` then start at its frame
            (:mod:`.resume`), and the result equals that of an uninterrupted read.
        on_checkpoint: Receives a :class:`StreamCheckpoint` every ``checkpoint_s`` of footage.
        checkpoint_s: Seconds of footage between checkpoints.

    Returns:
        The stream's fingerprints.

    Raises:
        ValueError: bad arguments.
        Cancelled: when ``cancel()`` turns true.
        ResumeMismatch: ``frames`` did not start at ``resume``'s frame.
    """
    variants = tuple(variants)
    if not variants or variants[0] != Variant():
        raise ValueError("variants[0] must be the identity Variant()")
    batch = _SampleBatcher(_FrameHasher(variants))
    times: list[int] = []
    last_no = -1
    grid = GridState()
    if resume is not None:
        batch.restore(resume)
        times = resume.times_ns.tolist()
        frames = saved.starting_at(frames, resume.grid.t0_ns + resume.grid.last_t_ns)
    if on_checkpoint is not None:
        marks = [len(batch.codes), len(times), resume.chunks if resume else 0]

        def save() -> bool:
            new = batch.since(marks[0], marks[1])
            if new is None:
                return False
            on_checkpoint(saved.checkpoint(grid, marks[2], times[marks[1]:], new, duration_s,
                                           (len(times), batch.hashed)))
            marks[:] = [len(batch.codes), len(times), marks[2] + 1]
            return True

        frames = saved.with_checkpoints(frames, grid, checkpoint_s, save,
                                  resume.grid.last_t_ns if resume is not None else 0)
    for s in sample_on_grid(frames, fps, duration_s=duration_s, cancel=cancel, state=grid,
                            resume=None if resume is None else resume.grid):
        if s.frame_no != last_no or not times:
            # A frame held over several grid points is converted and hashed once.
            to_luma = getattr(s.frame, "to_luma", None)
            if to_luma is not None:  # a reader that gives luma itself (LumaFrame)
                batch.add_luma(to_luma(prep.WORK_SIZE, prep.WORK_SIZE))
            else:
                batch.add(s.frame.to_rgb(prep.WORK_SIZE, prep.WORK_SIZE))
            last_no = s.frame_no
        else:
            batch.repeat()
        times.append(s.t_ns)
        if on_frame is not None:
            on_frame(s.t_ns / NS_PER_S)
    n = len(times)
    times_ns = np.asarray(times, dtype=np.int64)
    code_arr, quality, stretched = batch.result()
    step_s = 1.0 / fps
    if duration_s is not None and math.isfinite(duration_s) and duration_s > 0:
        # A stated duration far beyond what decoded (a truncated file) is not trusted.
        dur = min(float(duration_s), n * step_s + MAX_HOLD_S)
    else:
        dur = n * step_s
    low = quality < quality_floor
    ok_idx = np.flatnonzero(~low)
    # A dim camera (mostly contrast-stretched samples) jitters with its noise: see DIM_NOISE_BITS.
    dim = ok_idx.size >= 8 and bool(stretched[ok_idx].mean() >= 0.5)
    if dim and quiet_step(code_arr[ok_idx, 0]) > DIM_NOISE_BITS:
        low |= stretched
        ok_idx = np.flatnonzero(~low)
    usable = ~low
    spans = _spans(times_ns, runs(low), step_s, dur, "featureless")
    min_len = max(2, int(math.ceil(static_seconds * fps)))
    if ok_idx.size >= min_len:
        # Static runs among the informative samples; runs are mapped back to grid indexes.
        ok_codes = code_arr[ok_idx, 0]
        static_bits = static_bits_for(ok_codes) if dim else STATIC_BITS
        for a, b in static_runs(ok_codes, min_len, static_bits):
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
