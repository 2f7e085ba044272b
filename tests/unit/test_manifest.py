"""The .ovlm writer and strict reader: round trips, determinism, canonical form, refusals."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.manifest import parse as mf
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.export import stride_fingerprints, write_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream, OptionalSection
from overlap_desktop.core.manifest.inspect import inspect_manifest
from overlap_desktop.core.manifest.parse import parse_manifest, read_manifest
from overlap_desktop.core.types import Span, StreamFingerprints, Variant
from overlap_desktop.errors import ExitCode, ManifestError
from tests.fixtures_manifest import ALGO, PREP, layout, reroot, synthetic_files, synthetic_fp, synthetic_manifest


def assert_same_fp(a: StreamFingerprints, b: StreamFingerprints) -> None:
    np.testing.assert_array_equal(a.times_ns, b.times_ns)
    np.testing.assert_array_equal(np.asarray(a.codes)[:, :1], b.codes)
    np.testing.assert_array_equal(a.quality, b.quality)
    np.testing.assert_array_equal(a.usable, b.usable)
    assert b.times_ns.dtype == np.int64 and b.codes.shape == (len(a), 1, 32)
    assert a.indeterminate == b.indeterminate and a.fps == b.fps and a.duration_s == b.duration_s
    assert b.variants == (Variant(),)


def refused(data: bytes, *parts: str, **kw: object) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, **kw)  # type: ignore[arg-type]
    for p in parts:
        assert p in str(info.value), (p, str(info.value))
    assert info.value.exit_code == ExitCode.INPUT_REFUSED
    return info.value


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("compress", ["never", "always", "auto"])
def test_round_trip_gives_back_every_field(compress: str) -> None:
    files = synthetic_files(4, 37, streams=2)
    files[1].streams[0].fingerprints.indeterminate.append(Span(10.0, 10.0, "zero-length is allowed"))
    data, root = encode_manifest(files, label="Q3 kitchen teleop — ünïcode", algo_id=ALGO, prep_id=PREP,
                                 created="2026-12-02T15:00:00Z", compress=compress)
    m = parse_manifest(data)
    assert (m.label, m.algo_id, m.prep_id, m.created, m.root) == (
        "Q3 kitchen teleop — ünïcode", ALGO, PREP, "2026-12-02T15:00:00Z", root)
    assert m.creator.startswith("overlap-desktop ") and not m.anonymized and m.size_bytes == len(data)
    assert [f.name for f in m.files] == sorted(f.name for f in files)
    for want, got in zip(sorted(files, key=lambda f: f.name), m.files):
        assert (got.name, got.size, got.sha256, got.duration_s) == (want.name, want.size, want.sha256,
                                                                    want.duration_s)
        assert [s.key for s in got.streams] == [s.key for s in want.streams]
        for ws, gs in zip(want.streams, got.streams):
            assert gs.fps == ws.fps
            assert_same_fp(ws.fingerprints, gs.fingerprints)


def test_irregular_timestamps_and_odd_rates_are_exact() -> None:
    times = np.array([0, 333_333_333, 666_666_667, 1_000_000_000, 5_000_000_000, 5_000_000_001,
                      5_000_000_002, (1 << 53)], dtype=np.int64)
    fp = synthetic_fp(3, len(times))
    fp.times_ns, fp.fps, fp.duration_s = times, 30000 / 1001, 1e8
    f = ManifestFile("x.mcap", 5, "00" * 32, 12.25, [ManifestStream("/cam/image_raw", 30000 / 1001, fp)])
    m = parse_manifest(encode_manifest([f], algo_id=ALGO, prep_id=PREP)[0])
    got = m.files[0].streams[0]
    assert got.fps == 30000 / 1001 and got.key == "/cam/image_raw"
    np.testing.assert_array_equal(got.fingerprints.times_ns, times)


def test_empty_streams_and_files() -> None:
    empty = StreamFingerprints(np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros((0, 1, 32), np.uint8),
                               (Variant(),), np.zeros(0, bool), [], 1.0, 0.0)
    files = [ManifestFile("a", 0, "11" * 32, 0.0, []),
             ManifestFile("b", 1, "22" * 32, 0.0, [ManifestStream("v:0", 1.0, empty)])]
    m = parse_manifest(encode_manifest(files, algo_id=ALGO, prep_id=PREP)[0])
    assert len(m.files) == 2 and len(m.files[1].streams[0].fingerprints) == 0
    assert parse_manifest(encode_manifest([], algo_id=ALGO, prep_id=PREP)[0]).files == []


def test_same_content_gives_same_bytes_and_root_whatever_the_input_order() -> None:
    files = synthetic_files(5, 20, streams=2)
    a, ra = encode_manifest(files, label="x", algo_id=ALGO, prep_id=PREP)
    shuffled = list(reversed(files))
    for f in shuffled:
        f.streams.reverse()
    b, rb = encode_manifest(shuffled, label="x", algo_id=ALGO, prep_id=PREP)
    assert a == b and ra == rb
    c, rc = encode_manifest(files, label="y", algo_id=ALGO, prep_id=PREP)
    assert rc != ra  # the label is bound


def test_static_footage_compresses_and_random_codes_stay_raw() -> None:
    static = [ManifestFile("s.mp4", 1, "33" * 32, 600.0,
                           [ManifestStream("v:0", 1.0, synthetic_fp(1, 600, static_every=30))])]
    noisy = [ManifestFile("n.mp4", 1, "33" * 32, 600.0, [ManifestStream("v:0", 1.0, synthetic_fp(1, 600))])]
    s_auto, _ = encode_manifest(static, algo_id=ALGO, prep_id=PREP)
    s_raw, _ = encode_manifest(static, algo_id=ALGO, prep_id=PREP, compress="never")
    n_auto, _ = encode_manifest(noisy, algo_id=ALGO, prep_id=PREP)
    n_raw, _ = encode_manifest(noisy, algo_id=ALGO, prep_id=PREP, compress="never")
    assert len(s_auto) < len(s_raw) / 3
    assert n_auto == n_raw  # zstd saves nothing on random codes, so the writer keeps them raw
    assert_same_fp(static[0].streams[0].fingerprints, parse_manifest(s_auto).files[0].streams[0].fingerprints)


def test_write_and_read_file_atomically(tmp_path: Path) -> None:
    out = tmp_path / "offer.ovlm"
    s = write_manifest(synthetic_files(2, 10), out, label="L", algo_id=ALGO, prep_id=PREP)
    assert s.bytes == out.stat().st_size and s.files == 2 and len(s.root) == 64
    assert not [p for p in tmp_path.iterdir() if p.name != "offer.ovlm"]  # no temp files left
    old = out.read_bytes()
    with pytest.raises(ManifestError):  # refused before anything is written
        write_manifest(synthetic_files(1, 5), out, label="bad\nlabel", algo_id=ALGO, prep_id=PREP)
    assert out.read_bytes() == old
    m = read_manifest(out, expect_algo=ALGO, expect_prep=PREP)
    assert m.path == out and m.root == s.root
    info = inspect_manifest(out)
    assert info["files"] == 2 and info["root"] == s.root and info["label"] == "L"
    assert info["sampling"] == [1.0] and info["created"] is None and info["format"] == "ovlm/1"


# --------------------------------------------------------------------------- refusals


def test_algo_and_prep_mismatch_name_both_values() -> None:
    data = synthetic_manifest()
    refused(data, "'test-algo'", "'pdq256-v9'", expect_algo="pdq256-v9")
    refused(data, "'test-prep'", "'other-prep'", expect_prep="other-prep")
    parse_manifest(data, expect_algo=ALGO, expect_prep=PREP)


def test_version_magic_and_flags() -> None:
    data = synthetic_manifest()
    refused(b"PK\x03\x04" + data[4:], "not an overlap manifest")
    refused(b"", "not an overlap manifest")
    refused(data[:8], "preamble")
    refused(data[:8] + struct.pack("<H", 2) + data[10:], "version 2", "newer")
    refused(data[:8] + struct.pack("<H", 0) + data[10:], "version 0")
    refused(data[:10] + struct.pack("<H", 1) + data[12:], "flags")


def test_trailing_and_missing_bytes_are_refused() -> None:
    data = synthetic_manifest()
    refused(data + b"\x00", "trailing or missing")
    refused(data[:-1], "runs past the end")


def test_root_mismatch() -> None:
    data = synthetic_manifest()
    refused(data[:-1] + bytes([data[-1] ^ 1]), "Merkle root mismatch")


def _u32_at(data: bytes, off: int, value: int) -> bytes:
    return data[:off] + struct.pack("<I", value) + data[off + 4:]


def test_huge_claims_are_refused_without_allocating() -> None:
    data = synthetic_manifest(2, 10)
    lay = layout(data)
    meta_off = lay["table"][0][1]  # type: ignore[index]
    entry_off, _ = lay["entries"][0]  # type: ignore[index]
    name_len = struct.unpack_from("<H", data, entry_off)[0]
    stream_off = entry_off + 2 + name_len + 8 + 32 + 8 + 2
    key_len = struct.unpack_from("<H", data, stream_off)[0]
    n_off = stream_off + 2 + key_len + 16
    cases = {
        "file count": _u32_at(data, meta_off + 4, 0xFFFFFFFF),
        "entry length": _u32_at(data, entry_off - 4, 0xFFFFFFFF),
        "sample count": _u32_at(data, n_off, 0xFFFFFFFF),
        "span count": _u32_at(data, n_off + 4, 0xFFFFFFFF),
        "section length": data[:24] + struct.pack("<Q", 10**12) + data[32:],
        # A consistent claim of a million samples (the single timestamp run agrees): the
        # payload must prove they exist before any timestamp array is built.
        "samples with matching timestamps": _u32_at(_u32_at(data, n_off, 10**6),
                                                    n_off + 8 + 23 + 12 + 8, 10**6 - 1),
        "section count": _u32_at(data, 12, 0xFFFFFFFF),
    }
    for what, bad in cases.items():
        tracemalloc.start()
        try:
            with pytest.raises(ManifestError):
                # Structure is checked before the root, so no need to recompute it here.
                parse_manifest(bad)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 256 * 1024, (what, peak)


def test_decoded_budget_bounds_compressed_payloads() -> None:
    data = synthetic_manifest(1, 200, compress="always")
    parse_manifest(data)
    refused(data, "budget", max_decoded=1000)


def test_size_cap_checked_before_reading(tmp_path: Path) -> None:
    p = tmp_path / "big.ovlm"
    p.write_bytes(synthetic_manifest())
    with pytest.raises(ManifestError, match="limit"):
        read_manifest(p, max_bytes=100)
    with pytest.raises(ManifestError, match="no such file"):
        read_manifest(tmp_path / "absent.ovlm")
    with pytest.raises(ManifestError, match="folder"):
        read_manifest(tmp_path)


@pytest.mark.parametrize("name,why", [
    ("../../etc/passwd", "'..'"), ("/abs/x.mp4", "absolute"), ("a//b", "empty"), ("a\\b", "backslash"),
    ("C:/x", "drive"), ("./x", "'.'"), ("a\x1bb", "control"),
])
def test_unsafe_names_are_refused_even_with_a_valid_root(name: str, why: str) -> None:
    with pytest.raises(ManifestError):  # the writer refuses them too
        encode_manifest([ManifestFile(name, 1, "00" * 32, 1.0, [])], algo_id=ALGO, prep_id=PREP)
    ok = "x" * len(name.encode())
    data = encode_manifest([ManifestFile(ok, 1, "00" * 32, 1.0, [])], algo_id=ALGO, prep_id=PREP)[0]
    bad = reroot(data.replace(ok.encode(), name.encode(), 1))
    refused(bad, why)


def _swap_first_two_names(data: bytes, a: bytes, b: bytes) -> bytes:
    i, j = data.index(a), data.index(b)
    assert len(a) == len(b) and i < j
    return reroot(data[:i] + b + data[i + len(a):j] + a + data[j + len(b):])


def test_non_canonical_order_is_refused() -> None:
    a, b = b"episode-file-1", b"episode-file-2"
    files = [ManifestFile(a.decode(), 1, "00" * 32, 1.0, []), ManifestFile(b.decode(), 1, "00" * 32, 1.0, [])]
    data = encode_manifest(files, algo_id=ALGO, prep_id=PREP)[0]
    refused(_swap_first_two_names(data, a, b), "out of order")
    refused(reroot(data.replace(b, a)), "out of order")  # duplicate names


def test_semantic_rules_hold_without_the_root() -> None:
    """Each rule refuses on its own: the edited manifests carry a recomputed, valid root."""
    fp = synthetic_fp(1, 9)
    fp.usable[:] = True
    f = ManifestFile("a", 1, "00" * 32, 9.0, [ManifestStream("v:0", 1.0, fp)])
    data = encode_manifest([f], algo_id=ALGO, prep_id=PREP, compress="never")[0]
    payload_end = len(data) - 32
    bits_off = payload_end - 2  # ceil(9/8) = 2 bytes of usable bits
    refused(reroot(data[:bits_off + 1] + b"\x03" + data[bits_off + 2:]), "padding")
    q_off = bits_off - 9
    refused(reroot(data[:q_off] + b"\xff" + data[q_off + 1:]), "quality")
    # fps = NaN
    key_off = data.index(b"v:0")
    nan = struct.pack("<d", float("nan"))
    refused(reroot(data[:key_off + 3] + nan + data[key_off + 11:]), "fps")
    # an unknown META flag, an unknown payload encoding
    meta_off = layout(data)["table"][0][1]  # type: ignore[index]
    refused(reroot(_u32_at(data, meta_off, 2)), "META flags")
    enc_off = payload_end - (33 * 9 + 2) - 5
    assert data[enc_off] == 0
    refused(reroot(data[:enc_off] + b"\x07" + data[enc_off + 1:]), "encoding")


def test_optional_sections_are_bound_skipped_and_critical_unknown_refused() -> None:
    files = synthetic_files(1, 5)
    # A type this version does not know (0x0003 and 0x0004 v1 are understood and parsed).
    extra = OptionalSection(type=0x0100, sversion=1, body=b"hashed n-grams go here")
    data, root = encode_manifest(files, algo_id=ALGO, prep_id=PREP, optional_sections=[extra])
    m = parse_manifest(data)
    assert m.optional_sections == [extra] and m.root == root
    assert root != encode_manifest(files, algo_id=ALGO, prep_id=PREP)[1]
    body_at = data.index(b"hashed n-grams")
    refused(data[:body_at] + b"H" + data[body_at + 1:], "Merkle root")
    # The same section marked critical: a v1 reader must refuse it.
    table_at = 16 + 16 * 2  # third table record
    crit = data[:table_at + 4] + struct.pack("<H", 1) + data[table_at + 6:]
    refused(reroot(crit), "critical section type 0x0100")


def test_writer_refuses_what_the_reader_would_refuse() -> None:
    base = synthetic_files(1, 5)
    with pytest.raises(ManifestError, match="algo_id"):
        encode_manifest(base, algo_id="bad id with spaces", prep_id=PREP)
    with pytest.raises(ManifestError, match="created"):
        encode_manifest(base, algo_id=ALGO, prep_id=PREP, created="yesterday")
    with pytest.raises(ManifestError, match="sha256"):
        encode_manifest([ManifestFile("a", 1, "zz", 1.0, [])], algo_id=ALGO, prep_id=PREP)
    with pytest.raises(ManifestError, match="duplicate"):
        encode_manifest(base + synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP)
    fp = synthetic_fp(1, 5)
    fp.times_ns = fp.times_ns[::-1].copy()
    with pytest.raises(ManifestError, match="increasing"):
        encode_manifest([ManifestFile("a", 1, "00" * 32, 1.0, [ManifestStream("v:0", 1.0, fp)])],
                        algo_id=ALGO, prep_id=PREP)


def test_no_foreign_exception_escapes_from_a_parser_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(mf, "_parse_entry", boom)
    refused(synthetic_manifest(), "could not be parsed")


def test_default_decoded_budget_scales_with_file_size(monkeypatch: pytest.MonkeyPatch) -> None:
    static = [ManifestFile("s.mp4", 1, "33" * 32, 600.0,
                           [ManifestStream("v:0", 1.0, synthetic_fp(1, 3000, static_every=300))])]
    packed, _ = encode_manifest(static, algo_id=ALGO, prep_id=PREP, compress="always")
    assert 33 * 3000 > 4 * len(packed)  # a highly compressed payload
    monkeypatch.setattr(mf, "DECODED_FLOOR", 0)
    monkeypatch.setattr(mf, "DECODED_RATIO", 4)
    refused(packed, "budget")  # what a tiny zstd bomb meets with the real floor
    auto, _ = encode_manifest(static, algo_id=ALGO, prep_id=PREP)  # the writer stays readable: raw
    assert len(auto) > 33 * 3000 and len(parse_manifest(auto).files[0].streams[0].fingerprints) == 3000


def test_no_bytes_may_hide_after_a_zstd_frame() -> None:
    data = synthetic_manifest(1, 100, compress="always")
    lay = layout(data)
    (entry_off, elen), = lay["entries"]  # type: ignore[misc]
    # Find the payload header: encoding 1, then u32 length, then the frame up to the entry's end.
    frame_at = data.index(b"\x28\xb5\x2f\xfd", entry_off)
    hdr = frame_at - 5
    assert data[hdr] == 1 and struct.unpack_from("<I", data, hdr + 1)[0] == entry_off + elen - frame_at
    junk = b"JUNK"
    bad = (data[:entry_off - 4] + struct.pack("<I", elen + 4) + data[entry_off:hdr + 1]
           + struct.pack("<I", entry_off + elen - frame_at + 4) + data[frame_at:entry_off + elen] + junk
           + data[entry_off + elen:])
    # FILES grew by 4 bytes: fix its table length, then give it a valid root.
    files_rec = 16 + 16
    files_len = struct.unpack_from("<Q", data, files_rec + 8)[0]
    bad = bad[:files_rec + 8] + struct.pack("<Q", files_len + 4) + bad[files_rec + 16:]
    refused(reroot(bad), "after its zstd frame")


def test_stride_keeps_exact_index_times() -> None:
    fp = synthetic_fp(5, 25, fps=2.5, variants=3)  # 0, 0.4, 0.8 ... 9.6 s
    out = stride_fingerprints(fp, 1.0)
    # The frame shown at each whole second: the latest sample at or before it.
    assert out.times_ns.tolist() == [0, 800_000_000, 2_000_000_000, 2_800_000_000, 4_000_000_000,
                                     4_800_000_000, 6_000_000_000, 6_800_000_000, 8_000_000_000,
                                     8_800_000_000]
    assert out.fps == 1.0 and out.codes.shape == (10, 1, 32) and out.variants == (Variant(),)
    assert set(out.times_ns.tolist()) <= set(fp.times_ns.tolist())
    whole = stride_fingerprints(fp, 4.0)
    assert whole.fps == 2.5 and len(whole) == 25


def test_inspect_lists_optional_sections(tmp_path: Path) -> None:
    p = tmp_path / "x.ovlm"
    data, _ = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP,
                              optional_sections=[OptionalSection(0x0003, 2, b"future")])
    p.write_bytes(data)
    info = inspect_manifest(p)
    assert info["optional_sections"] == [{"type": 3, "name": "TEXT_NGRAMS", "version": 2, "bytes": 6,
                                          "understood": False}]
