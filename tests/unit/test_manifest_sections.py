"""The optional TEXT_NGRAMS and STREAM_EPISODES manifest sections: round trips, Merkle
binding, caps checked before allocation, strict parsing, and v1 behaviour without them."""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest

from overlap_desktop.core.manifest import parse as mf
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import OptionalSection, TextNgrams
from overlap_desktop.core.manifest.inspect import inspect_manifest
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.sections import MAX_NGRAM_HASHES
from overlap_desktop.core.text.overlap import check_hashed_overlap, keyed_ngram_hashes
from overlap_desktop.errors import ExitCode, ManifestError
from tests.fixtures_manifest import ALGO, PREP, reroot, synthetic_files

ANNOTATIONS = ["pick up the red cup and place it on the wooden shelf next to the plate",
               "open the top drawer of the cabinet slowly with the left gripper arm please",
               "short one"]


def ngrams() -> TextNgrams:
    return TextNgrams("alnum-lower-v1", keyed_ngram_hashes(ANNOTATIONS, ns=range(8, 14)),
                      documents=len(ANNOTATIONS))


def refused(data: bytes, *parts: str) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data)
    for p in parts:
        assert p in str(info.value), (p, str(info.value))
    assert info.value.exit_code == ExitCode.INPUT_REFUSED
    return info.value


def section_body(tokenizer: bytes, documents: int, per_n: list[tuple[int, int, int, bytes]]) -> bytes:
    """A hand-made TEXT_NGRAMS body: ``per_n`` is (n, count, encoding, payload)."""
    out = struct.pack("<B", len(tokenizer)) + tokenizer + struct.pack("<IB", documents, len(per_n))
    for n, count, enc, payload in per_n:
        out += struct.pack("<BIBI", n, count, enc, len(payload)) + payload
    return out


def with_body(body: bytes, sversion: int = 1, type_: int = 0x0003) -> bytes:
    return encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP,
                           optional_sections=[OptionalSection(type_, sversion, body)])[0]


# --------------------------------------------------------------------------- TEXT_NGRAMS


@pytest.mark.parametrize("compress", ["never", "always", "auto"])
def test_text_ngrams_round_trip(compress: str) -> None:
    t = ngrams()
    data, root = encode_manifest(synthetic_files(2, 10), algo_id=ALGO, prep_id=PREP, text_ngrams=t,
                                 compress=compress)
    m = parse_manifest(data)
    assert m.root == root and m.optional_sections == []
    got = m.text_ngrams
    assert got is not None and got.tokenizer == "alnum-lower-v1" and got.documents == 3
    assert got.ns == list(range(8, 14))
    for n in range(8, 14):
        assert got.hashes[n].dtype == np.uint64
        np.testing.assert_array_equal(got.hashes[n], t.hashes[n])
    assert got.counts()[8] == (16 - 7) + (14 - 7)  # the third annotation is shorter than 8 tokens
    # Re-encoding the parsed manifest gives the same bytes (canonical form).
    again, _ = encode_manifest(m.files, algo_id=ALGO, prep_id=PREP, creator=m.creator, text_ngrams=got,
                               compress=compress)
    assert again == data


def test_hashed_check_against_a_parsed_manifest() -> None:
    from overlap_desktop.core.text.overlap import Document

    data, _ = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP, text_ngrams=ngrams())
    m = parse_manifest(data)
    tests = [Document("Please PICK up the red cup, and place it on the wooden shelf!", "eval", "line 1"),
             Document("something else entirely that is long enough to hash here", "eval", "line 2")]
    res = check_hashed_overlap(tests, m.text_ngrams.hashes, tokenizer=m.text_ngrams.tokenizer)
    assert res.matched_examples == [0]


def test_large_hash_lists_are_compact() -> None:
    rng = np.random.default_rng(1)
    values = np.unique(rng.integers(0, 2**64 - 1, 200_000, dtype=np.uint64))
    t = TextNgrams("alnum-lower-v1", {8: values})
    data, _ = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP, text_ngrams=t)
    # Random 64-bit hashes: deltas + byte planes + zstd beat 8 bytes per hash.
    assert len(data) < 7.0 * values.size
    np.testing.assert_array_equal(parse_manifest(data).text_ngrams.hashes[8], values)


def test_tampered_section_fails_the_root() -> None:
    data, _ = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP, text_ngrams=ngrams(),
                              compress="never")
    at = data.index(b"alnum-lower-v1") + 40  # inside the raw hash list
    for mask in (0x01, 0x80):
        refused(data[:at] + bytes([data[at] ^ mask]) + data[at + 1:], "Merkle root")
    # Removing the section (header re-written, root recomputed) gives another root.
    plain, root = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP)
    assert parse_manifest(plain).text_ngrams is None and parse_manifest(data).root != root


def test_inflated_count_refused_before_allocation() -> None:
    import zstandard

    tiny = zstandard.ZstdCompressor(write_content_size=True).compress(b"\0" * 64)
    cases = [
        (section_body(b"alnum-lower-v1", 1, [(8, MAX_NGRAM_HASHES + 1, 1, tiny)]), "exceeds the limit"),
        (section_body(b"alnum-lower-v1", 1, [(8, 1 << 26, 1, tiny)]), "budget"),
        (section_body(b"alnum-lower-v1", 1, [(8, 1 << 26, 0, b"")]), "budget"),
        (section_body(b"alnum-lower-v1", 1, [(8, 1000, 1, tiny)]), "declare 64 bytes"),
        (section_body(b"alnum-lower-v1", 1, [(8, 8, 0, b"\0" * 63)]), "raw hashes are 63 bytes"),
    ]
    for body, why in cases:
        data = with_body(body)
        tracemalloc.start()
        try:
            refused(data, "TEXT_NGRAMS", why)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20, (why, peak)


@pytest.mark.parametrize(("per_n", "why"), [
    ([(8, 3, 0, np.array([5, 0, 1], "<u8").tobytes())], "not strictly increasing"),  # a repeated hash
    ([(8, 2, 0, np.array([2**64 - 2, 3], "<u8").tobytes())], "not strictly increasing"),  # wraps past 2^64
    ([(9, 0, 0, b""), (8, 0, 0, b"")], "strictly increasing"),  # n out of order
    ([(0, 0, 0, b"")], "n values must be"),
    ([(8, 0, 2, b"")], "unknown hash encoding"),
    ([(8, 0, 1, b"")], "must be stored raw"),
    ([], "n count 0"),
])
def test_malformed_sections_are_refused(per_n: list[tuple[int, int, int, bytes]], why: str) -> None:
    # Raw payloads are byte planes; a one-plane-per-value layout only matters for counts > 1.
    fixed = []
    for n, count, enc, payload in per_n:
        if enc == 0 and count > 1:
            planes = np.frombuffer(payload, "<u8").view(np.uint8).reshape(-1, 8).T
            payload = np.ascontiguousarray(planes).tobytes()
        fixed.append((n, count, enc, payload))
    refused(with_body(section_body(b"alnum-lower-v1", 0, fixed)), "TEXT_NGRAMS", why)


def test_bad_tokenizer_and_trailing_bytes_refused() -> None:
    refused(with_body(section_body(b"bad id!", 0, [(8, 0, 0, b"")])), "tokenizer id")
    refused(with_body(section_body(b"alnum-lower-v1", 0, [(8, 0, 0, b"")]) + b"x"), "unexplained bytes")
    with pytest.raises(ManifestError, match="tokenizer id"):
        encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP,
                        text_ngrams=TextNgrams("a b", {8: np.zeros(0, np.uint64)}))
    with pytest.raises(ManifestError, match="n-gram size"):
        encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP,
                        text_ngrams=TextNgrams("x", {300: np.zeros(0, np.uint64)}))


def test_v1_rules_hold_with_and_without_the_section(monkeypatch: pytest.MonkeyPatch) -> None:
    data, root = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP, text_ngrams=ngrams())
    # A manifest without the section still parses (and says so).
    plain = parse_manifest(encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP)[0])
    assert plain.text_ngrams is None and plain.optional_sections == []
    assert inspect_manifest(plain)["text_ngrams"] is None
    # A later version of the section is kept verbatim, bound, not interpreted.
    future = parse_manifest(with_body(b"whatever v2 holds", sversion=2))
    assert future.text_ngrams is None and [s.sversion for s in future.optional_sections] == [2]
    # A reader that does not understand TEXT_NGRAMS v1 (simulated) skips it, keeps it, and still
    # verifies the root over it.
    monkeypatch.setattr(mf, "NGRAMS_SVERSION", 99)
    old = parse_manifest(data)
    assert old.root == root and old.text_ngrams is None and old.optional_sections[0].type == 0x0003
    at = data.index(b"alnum-lower-v1")
    refused(data[:at] + b"A" + data[at + 1:], "Merkle root")
    monkeypatch.undo()
    # Marked critical, it must be refused by a v1 reader like any critical optional section.
    table_at = 16 + 16 * 2
    crit = data[:table_at + 4] + struct.pack("<H", 1) + data[table_at + 6:]
    refused(reroot(crit), "critical section type 0x0003")


def test_inspect_reports_annotation_hashes() -> None:
    data, _ = encode_manifest(synthetic_files(1, 5), algo_id=ALGO, prep_id=PREP, text_ngrams=ngrams())
    info = inspect_manifest(parse_manifest(data))
    assert info["text_ngrams"]["tokenizer"] == "alnum-lower-v1" and info["text_ngrams"]["documents"] == 3
    assert info["text_ngrams"]["ns"] == list(range(8, 14)) and info["text_ngrams"]["counts"]["8"] == 16
    assert info["optional_sections"] == []


# --------------------------------------------------------------------------- STREAM_EPISODES


def episode_files() -> list:
    files = synthetic_files(2, 12, streams=2)
    files[0].streams[1].episodes = [(41, 0.0, 5.0), (42, 5.0, 12.0)]
    files[1].streams[0].episodes = [(7, 2.0, 3.5)]
    return files


def test_episodes_round_trip_and_binding() -> None:
    data, root = encode_manifest(episode_files(), algo_id=ALGO, prep_id=PREP)
    m = parse_manifest(data)
    assert m.root == root and m.optional_sections == []
    assert m.files[0].streams[0].episodes == [] and m.files[0].streams[1].episodes == [(41, 0.0, 5.0),
                                                                                       (42, 5.0, 12.0)]
    assert m.files[1].streams[0].episodes == [(7, 2.0, 3.5)]
    assert inspect_manifest(m)["episodes"] == {"streams": 2, "spans": 3}
    at = data.rindex(struct.pack("<d", 3.5))
    refused(data[:at] + b"\x01" + data[at + 1:], "Merkle root")
    assert encode_manifest(synthetic_files(2, 12, streams=2), algo_id=ALGO, prep_id=PREP)[1] != root


def _episodes_body(records: list[tuple[int, bytes, list[tuple[int, float, float]]]]) -> bytes:
    out = struct.pack("<I", len(records))
    for fi, key, spans in records:
        out += struct.pack("<IH", fi, len(key)) + key + struct.pack("<I", len(spans))
        out += b"".join(struct.pack("<Idd", *s) for s in spans)
    return out


@pytest.mark.parametrize(("records", "why"), [
    ([(5, b"v:0", [(1, 0.0, 1.0)])], "file index 5"),
    ([(0, b"v:9", [(1, 0.0, 1.0)])], "has no stream 'v:9'"),
    ([(0, b"v:0", [(1, 0.0, 99.0)])], "stream duration"),
    ([(0, b"v:0", [(1, 2.0, 1.0)])], "stream duration"),
    ([(0, b"v:0", [(2, 3.0, 4.0), (1, 0.0, 1.0)])], "out of order"),
    ([(0, b"v:0", [])], "episode count 0"),
    ([(0, b"v:0", [(1, 0.0, 1.0)]), (0, b"v:0", [(2, 1.0, 2.0)])], "out of order or repeated"),
])
def test_bad_episode_sections_are_refused(records: list, why: str) -> None:
    refused(with_body(_episodes_body(records), type_=0x0004), "STREAM_EPISODES", why)


def test_inflated_episode_count_refused_cheaply() -> None:
    body = struct.pack("<I", 0xFFFFFFFF)
    refused(with_body(body, type_=0x0004), "episode records need")
    body = _episodes_body([(0, b"v:0", [(1, 0.0, 1.0)])])
    body = body[:-24] + struct.pack("<I", 0xFFFFFFF) + body[-20:]
    refused(with_body(body, type_=0x0004), "episode count")


def test_writer_refuses_bad_episodes() -> None:
    files = synthetic_files(1, 12)
    files[0].streams[0].episodes = [(1, 0.0, 50.0)]  # past the 12 s stream
    with pytest.raises(ManifestError, match="episode spans"):
        encode_manifest(files, algo_id=ALGO, prep_id=PREP)
    files[0].streams[0].episodes = [(1, 0.0, 2.0), (1, 0.0, 2.0)]
    with pytest.raises(ManifestError, match="episode spans"):
        encode_manifest(files, algo_id=ALGO, prep_id=PREP)
