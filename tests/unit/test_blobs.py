"""The index's fingerprint blobs: the bit-plane codes encoding round-trips exactly, is compact on
footage-like codes, still reads the older raw/zstd blobs, and reports damage instead of decoding it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import zstandard

from overlap_desktop.core.index import blobs
from overlap_desktop.core.ingest.orient import ORIENTATIONS, orient_codes
from overlap_desktop.core.types import Span, StreamFingerprints, Variant
from overlap_desktop.errors import IndexError_

#: The ``fast`` preset's variants: upright, 96 % and 92 % centred crops, bottom 8 %, each mirrored.
FAST = tuple(v for base in (Variant(), Variant(crop=0.96), Variant(crop=0.92),
                            Variant(edge="bottom", edge_depth=0.08))
             for v in (base, Variant(mirrored=True, crop=base.crop, edge=base.edge, edge_depth=base.edge_depth)))
#: ``index.dihedral = all``: every orientation, upright and with a crop.
DIHEDRAL = tuple(Variant(mirrored=m, rotation=r, crop=c) for c in (1.0, 0.9) for m, r in ORIENTATIONS)


def footage_codes(n: int, variants: tuple[Variant, ...], seed: int = 0) -> np.ndarray:
    """Codes that behave like footage (measured on generated clips: a tenth of the bits change
    from one 4/s sample to the next, a mirrored code is its sibling's mirrored within 2-3 % of the
    bits): a scene cut every ~10 s, each variant a different picture."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, len(variants), 32), dtype=np.uint8)
    bases = {replace(v, mirrored=False): rng.integers(0, 256, 32, dtype=np.uint8) for v in variants}
    for t in range(n):
        cut = rng.random() < 0.025
        for v in bases:
            if cut:
                bases[v] = rng.integers(0, 256, 32, dtype=np.uint8)
            else:
                bits = np.unpackbits(bases[v])
                bits[rng.integers(0, 256, 26)] ^= 1
                bases[v] = np.packbits(bits)
        for k, v in enumerate(variants):  # an unlisted sibling still drives its mirror
            if not v.mirrored:
                out[t, k] = bases[v]
                continue
            bits = np.unpackbits(orient_codes(bases[replace(v, mirrored=False)], (True, 0)))
            bits[rng.integers(0, 256, 6)] ^= 1
            out[t, k] = np.packbits(bits)
    return out


def round_trip(codes: np.ndarray, variants: tuple[Variant, ...]) -> bytes:
    blob = blobs.encode_codes(codes, variants)
    assert blob[:1] == b"\x02"
    back = blobs.decode_codes(blob, codes.shape[0], len(variants))
    assert back.dtype == np.uint8 and back.shape == codes.shape and back.flags.writeable
    np.testing.assert_array_equal(back, codes)
    return blob


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 63, 65, 241])
def test_round_trip_every_frame_count(n: int) -> None:
    # Odd counts leave padding bits in the last byte of every bit plane.
    round_trip(footage_codes(n, FAST, seed=n), FAST)


def test_round_trip_unusable_frames_with_zero_or_garbage_codes() -> None:
    codes = footage_codes(200, FAST, seed=3)
    codes[40:55] = 0  # samples PDQ could not hash
    codes[90:93] = np.random.default_rng(9).integers(0, 256, (3, len(FAST), 32), dtype=np.uint8)
    codes[150, 1] = 255  # a mirrored variant unrelated to its sibling
    round_trip(codes, FAST)
    round_trip(np.zeros((50, len(FAST), 32), dtype=np.uint8), FAST)
    round_trip(np.full((50, len(FAST), 32), 255, dtype=np.uint8), FAST)


@pytest.mark.parametrize("variants", [
    DIHEDRAL,
    (Variant(),),
    (Variant(mirrored=True),),  # no unmirrored sibling: coded over time
    (Variant(mirrored=True), Variant()),  # the mirror listed before its sibling
    (Variant(), Variant(mirrored=True), Variant(mirrored=True, crop=0.9)),
    tuple(Variant(mirrored=m, crop=1.0 - k / 100) for k in range(20) for m in (False, True)),  # 40 variants
])
def test_round_trip_variant_layouts(variants: tuple[Variant, ...]) -> None:
    round_trip(footage_codes(77, variants, seed=len(variants)), variants)


def test_round_trip_big_stream() -> None:
    # Three hours at 4 samples/s; scene structure repeated so the test stays quick to build.
    scene = footage_codes(1200, FAST, seed=5)
    codes = np.concatenate([scene ^ np.uint8(k) for k in range(36)])
    assert codes.shape == (43200, len(FAST), 32)
    round_trip(codes, FAST)


def test_compact_on_footage_like_codes_but_not_on_random_ones() -> None:
    codes = footage_codes(2400, FAST, seed=11)
    assert len(round_trip(codes, FAST)) < 0.5 * codes.nbytes
    # Mirrored variants cost less than upright ones (predicted from their sibling).
    upright = footage_codes(2400, FAST[0::2], seed=11)
    assert len(blobs.encode_codes(codes, FAST)) < 1.6 * len(blobs.encode_codes(upright, FAST[0::2]))
    # Negative control: random codes cannot shrink; the overhead stays small.
    noise = np.random.default_rng(2).integers(0, 256, codes.shape, dtype=np.uint8)
    blob = round_trip(noise, FAST)
    assert noise.nbytes < len(blob) < noise.nbytes * 1.01 + 400


def test_schema_1_blobs_still_read() -> None:
    codes = footage_codes(30, FAST, seed=1)
    raw = codes.tobytes()
    np.testing.assert_array_equal(blobs.decode_codes(b"\x00" + raw, 30, len(FAST)), codes)
    # Schema 1 wrote zstd frames without a checksum.
    z = zstandard.ZstdCompressor(level=3).compress(raw)
    np.testing.assert_array_equal(blobs.decode_codes(b"\x01" + z, 30, len(FAST)), codes)


def fp_of(codes: np.ndarray, variants: tuple[Variant, ...]) -> StreamFingerprints:
    n = codes.shape[0]
    usable = np.ones(n, dtype=bool)
    usable[3:5] = False
    return StreamFingerprints(times_ns=np.arange(n, dtype=np.int64) * 250_000_000 + 7,
                              quality=np.arange(n, dtype=np.uint8), codes=codes, variants=variants,
                              usable=usable, indeterminate=[Span(0.75, 1.25, "static")], fps=4.0,
                              duration_s=n / 4)


def columns(fp: StreamFingerprints) -> list[object]:
    e = blobs.encode_fingerprints(fp)
    return [e[k] for k in ("n", "times", "quality", "codes", "usable", "variants", "indeterminate", "fps",
                           "duration_s")]


def test_fingerprints_round_trip() -> None:
    fp = fp_of(footage_codes(21, FAST), FAST)
    back = blobs.decode_fingerprints(*columns(fp))  # type: ignore[arg-type]
    np.testing.assert_array_equal(back.codes, fp.codes)
    np.testing.assert_array_equal(back.times_ns, fp.times_ns)
    np.testing.assert_array_equal(back.quality, fp.quality)
    np.testing.assert_array_equal(back.usable, fp.usable)
    assert back.variants == FAST and back.indeterminate == fp.indeterminate


def test_every_single_bit_flip_and_truncation_is_reported() -> None:
    codes = footage_codes(24, FAST[:2], seed=4)
    blob = blobs.encode_codes(codes, FAST[:2])
    reported = 0
    for i in range(len(blob) * 8):
        damaged = bytearray(blob)
        damaged[i // 8] ^= 1 << (i % 8)
        try:
            back = blobs.decode_codes(bytes(damaged), 24, 2)
        except IndexError_:
            reported += 1
        else:  # a bit zstd never reads (e.g. an unused table entry): harmless, never wrong codes
            np.testing.assert_array_equal(back, codes)
    assert reported > 0.9 * len(blob) * 8
    for cut in range(len(blob)):
        with pytest.raises(IndexError_):
            blobs.decode_codes(blob[:cut], 24, 2)
    # A frame with a valid checksum but another stream's header.
    body = zstandard.ZstdDecompressor().decompress(blob[1:])[blobs._HEAD.size:]
    with pytest.raises(IndexError_, match="it holds 23 samples x 2 variants, 24 x 2 expected"):
        blobs.decode_codes(b"\x02" + blobs._zstd(blobs._HEAD.pack(23, 2) + body), 24, 2)


@pytest.mark.parametrize("n, nv, match", [(25, 2, "expected"), (23, 2, "expected"), (24, 3, "expected"),
                                          (24, 1, "expected"), (-1, 2, "damaged stream row")])
def test_blob_that_does_not_fit_the_row_is_reported(n: int, nv: int, match: str) -> None:
    codes = footage_codes(24, FAST[:2], seed=4)
    with pytest.raises(IndexError_, match=match):
        blobs.decode_codes(blobs.encode_codes(codes, FAST[:2]), n, nv)
    with pytest.raises(IndexError_, match=match):
        blobs.decode_codes(b"\x00" + codes.tobytes(), n, nv)


def test_unknown_tags_and_bad_references_are_reported() -> None:
    with pytest.raises(IndexError_, match="unknown fingerprint codes blob encoding"):
        blobs.decode_codes(b"\x07" + bytes(64), 1, 2)
    with pytest.raises(IndexError_, match="unknown"):
        blobs.decode_codes(b"", 1, 2)
    # A well-formed frame (valid checksum) whose references make no sense.
    for refs in (b"\x05\xff", b"\x01\x00", b"\x00\x00"):
        payload = blobs._HEAD.pack(3, 2) + refs + bytes(2 * 32) + bytes(2 * 256 * 1)
        with pytest.raises(IndexError_, match="refers to variant"):
            blobs.decode_codes(b"\x02" + blobs._zstd(payload), 3, 2)


def test_a_frame_claiming_a_huge_size_is_refused_before_allocating() -> None:
    z = zstandard.ZstdCompressor(level=1).compress(bytes(10_000_000))
    with pytest.raises(IndexError_, match="10000000 bytes"):
        blobs.decode_codes(b"\x01" + z, 2, 8)
    with pytest.raises(IndexError_, match="10000000 bytes"):
        blobs.decode_codes(b"\x02" + z, 2, 8)


@pytest.mark.parametrize("column, value, match", [
    ("times", b"\x00" + bytes(8 * 20), "frame times blob"),
    ("quality", b"\x00" + bytes(22), "quality blob"),
    ("usable", b"\x01" + zstandard.ZstdCompressor().compress(bytes(9)), "usable flags blob"),
    ("times", b"\x02" + bytes(40), "unknown frame times blob encoding"),
])
def test_other_damaged_blobs_are_reported(column: str, value: bytes, match: str) -> None:
    fp = fp_of(footage_codes(21, FAST[:2]), FAST[:2])
    cols = columns(fp)
    cols[["n", "times", "quality", "codes", "usable"].index(column)] = value
    with pytest.raises(IndexError_, match=match):
        blobs.decode_fingerprints(*cols)  # type: ignore[arg-type]
