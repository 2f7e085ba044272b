"""The per-sample check of quoted fingerprints against delivered ones (no decoding)."""

from __future__ import annotations

import numpy as np
import pytest

from overlap_desktop.core.audit.reproduce import (
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCE_BITS,
    REPRODUCED,
    check_file,
    check_stream,
)
from overlap_desktop.core.audit.run import quote_grid
from overlap_desktop.core.manifest.export import stride_fingerprints
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.types import StreamInfo
from tests.fixtures_manifest import synthetic_fp


def _flip(codes: np.ndarray, row: int, bits: int) -> None:
    """Turn ``bits`` bits of the identity code of ``row``."""
    for b in range(bits):
        codes[row, 0, b // 8] ^= np.uint8(1 << (b % 8))


def _delivered(n: int = 48) -> tuple[StreamInfo, object]:
    fp = synthetic_fp(3, n, fps=4.0)
    fp.quality[:] = 90
    return StreamInfo("v:0"), fp


def _quoted(fp: object, fps: float = 1.0) -> ManifestStream:
    q = stride_fingerprints(fp, fps)  # type: ignore[arg-type]
    q.codes = q.codes.copy()
    return ManifestStream("v:0", q.fps, q)


def test_the_same_codes_reproduce_and_the_tolerance_is_inclusive() -> None:
    info, fp = _delivered()
    q = _quoted(fp)
    _flip(q.fingerprints.codes, 3, REPRODUCE_BITS)  # at the tolerance: still holds
    c = check_stream(q, fp, quality_floor=50)  # type: ignore[arg-type]
    assert (c.samples, c.checked, c.within, c.verdict) == (12, 12, 12, REPRODUCED)
    _flip(q.fingerprints.codes, 3, REPRODUCE_BITS + 1)  # now 1 bit changed (the first 16 turned back)...
    _flip(q.fingerprints.codes, 4, REPRODUCE_BITS + 1)  # ...and one sample just past the tolerance
    c = check_stream(q, fp, quality_floor=50)  # type: ignore[arg-type]
    assert c.within == 11 and c.verdict == PARTLY and c.differing == [(4.0, 5.0)]


def test_other_footage_is_not_reproduced_and_the_words_give_the_count() -> None:
    info, fp = _delivered()
    other = synthetic_fp(99, 48, fps=4.0)
    f = ManifestFile("take-07.mp4", 1, "0" * 64, 12.0, [_quoted(other)])
    r = check_file(f, [(info, fp)], quality_floor=50)  # type: ignore[list-item]
    assert r.fingerprints == NOT_REPRODUCED
    assert r.words == "the quoted fingerprints of take-07.mp4 are not those of its bytes: 0 of 12 samples within " \
                      f"{REPRODUCE_BITS} bits"


def test_consecutive_differing_samples_make_one_span_and_featureless_ones_do_not_count() -> None:
    info, fp = _delivered()
    q = _quoted(fp)
    for row in (5, 6, 7):
        q.fingerprints.codes[row, 0] ^= 0xFF
    fp.quality[4 * 9] = 10  # the delivered picture at 9 s is featureless: neither way
    q.fingerprints.codes[9, 0] ^= 0xFF
    c = check_stream(q, fp, quality_floor=50)  # type: ignore[arg-type]
    assert c.checked == 11 and c.within == 8 and c.differing == [(5.0, 8.0)]


def test_a_quoted_stream_the_delivery_lacks_and_a_shorter_delivery() -> None:
    info, fp = _delivered()
    q = _quoted(fp)
    f = ManifestFile("a.mp4", 1, "0" * 64, 12.0, [q, ManifestStream("v:1", 1.0, q.fingerprints)])
    r = check_file(f, [(info, fp)], quality_floor=50)  # type: ignore[list-item]
    assert r.fingerprints == PARTLY and "no stream v:1" in r.words
    short = synthetic_fp(3, 24, fps=4.0)  # the first 6 s only
    short.quality[:] = 90
    c = check_stream(q, short, quality_floor=50)
    assert c.within == 6 and c.differing == [(6.0, 12.0)]


def test_anonymised_stream_keys_pair_by_position() -> None:
    info, fp = _delivered()
    q = _quoted(fp)
    q.key = "stream-1"  # the export numbers them from 1
    r = check_file(ManifestFile("file-000001.mp4", 1, "0" * 64, 12.0, [q]), [(info, fp)],  # type: ignore[list-item]
                   quality_floor=50, anonymized=True)
    assert r.fingerprints == REPRODUCED


@pytest.mark.parametrize(("vendor_fps", "export_fps", "grid"), [(4.0, 1.0, 4.0), (5.0, 1.0, 4.0), (5.0, 5.0, 5.0),
                                                                 (6.0, 3.0, 3.0), (30.0, 30.0, 30.0)])
def test_the_quote_grid_is_found_when_the_vendor_sampled_otherwise(vendor_fps: float, export_fps: float,
                                                                   grid: float) -> None:
    """Times on the library's grid (4 fps) are checked there; others on the lowest grid holding them."""
    from overlap_desktop.core.ingest.frames import grid_time_ns

    vendor = synthetic_fp(1, int(vendor_fps * 20), fps=vendor_fps)
    vendor.times_ns = np.array([grid_time_ns(k, vendor_fps) for k in range(len(vendor))], np.int64)
    q = ManifestStream("v:0", export_fps, stride_fingerprints(vendor, export_fps))
    assert quote_grid(ManifestFile("a", 1, "0" * 64, 20.0, [q]), 4.0) == grid
    odd = q.fingerprints.times_ns.copy()
    odd[3] += 7  # a time on no grid
    q.fingerprints.times_ns = odd
    assert quote_grid(ManifestFile("a", 1, "0" * 64, 20.0, [q]), 4.0) is None


def test_a_sample_the_exact_decode_reproduces_holds_and_one_neither_does_not() -> None:
    info, fp = _delivered()
    q = _quoted(fp)
    exact = synthetic_fp(3, 48, fps=4.0)  # the same stream decoded without shortcuts
    exact.codes = exact.codes.copy()
    _flip(q.fingerprints.codes, 2, 40)  # the vendor's decode differed here...
    _flip(exact.codes, 8, 40)  # ...and the exact decode shows the vendor's picture
    q.fingerprints.codes[7, 0] ^= 0xFF  # this one neither decode shows
    c = check_stream(q, fp, quality_floor=50, second=exact)  # type: ignore[arg-type]
    assert c.within == 11 and c.differing == [(7.0, 8.0)]
    assert check_stream(q, fp, quality_floor=50).within == 10  # type: ignore[arg-type]
