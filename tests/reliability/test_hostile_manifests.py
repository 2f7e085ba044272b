"""Hostile manifests at campaign scale, on manifests exported from a real index.

tests/unit/test_manifest_fuzz.py (MANIFEST helper) fuzzes synthetic manifests in memory.
This file extends it to the campaign the security promise rests on:

- bases are real exports (``export_manifest`` over an index of generated clips: plain,
  anonymised, and a label with non-ASCII text);
- "inflated counts and lengths" aim at the *actual* count and length fields, located by
  walking the layout of docs/manifest-spec.md (section_count, section lengths and
  versions, file_count, entry_len, name/key lengths, stream_count, n, span_count,
  run_count, stored_len), with hostile values (all ones, 2^31, the file size, +1...);
- also bit flips, truncations, wrong format and section versions, swapped and duplicated
  sections (table row + body, count fixed up), random splices between bases, and a
  share of cases read through ``read_manifest`` from a file (the size check path);
- every case must raise ``ManifestError`` and nothing else: other exceptions are counted
  and the first traceback is shown; peak traced memory and the slowest parse are printed;
- every single-byte tamper of a real manifest is refused: every position with one
  pseudo-random replacement value in CI, with all 255 other values in the full campaign.

CI runs ``OVERLAP_FUZZ_COUNT`` cases (default 2000, well under a minute). The full campaign:

    OVERLAP_FUZZ_COUNT=100000 python -m pytest tests/reliability/test_hostile_manifests.py -s

(``OVERLAP_FUZZ_COUNT >= 100000`` also switches the single-byte sweep to all 255 values.)
"""

from __future__ import annotations

import os
import random
import struct
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest.export import export_manifest
from overlap_desktop.core.manifest.parse import parse_manifest, read_manifest
from overlap_desktop.errors import ManifestError

COUNT = int(os.environ.get("OVERLAP_FUZZ_COUNT", "2000"))
FULL = COUNT >= 100_000
#: Generous: a parse that allocated from an unchecked count would need gigabytes.
MEMORY_BOUND = 32 << 20


# --------------------------------------------------------------------------- layout (trusts its input)


@dataclass
class Layout:
    """Where the framing of a well-formed manifest is."""

    sections: list[tuple[int, int, int]]  # (table row offset, body offset, body length)
    fields: list[tuple[int, int, str]] = field(default_factory=list)  # (offset, width, name)


def layout(data: bytes) -> Layout:
    (nsect,) = struct.unpack_from("<I", data, 12)
    lay = Layout(sections=[])
    lay.fields += [(8, 2, "version"), (10, 2, "flags"), (12, 4, "section_count")]
    body = 16 + 16 * nsect
    for i in range(nsect):
        row = 16 + 16 * i
        (length,) = struct.unpack_from("<Q", data, row + 8)
        lay.sections.append((row, body, length))
        lay.fields += [(row, 2, "section type"), (row + 2, 2, "section version"), (row + 4, 2, "section flags"),
                       (row + 8, 8, "section length")]
        body += length
    meta = lay.sections[0][1]
    lay.fields += [(meta, 4, "meta flags"), (meta + 4, 4, "file_count")]
    (nfiles,) = struct.unpack_from("<I", data, meta + 4)
    p = meta + 8
    for what in ("algo_id", "prep_id", "creator", "created"):
        lay.fields.append((p, 1, f"{what} length"))
        p += 1 + data[p]
    lay.fields.append((p, 2, "label length"))
    pos = lay.sections[1][1]
    for _ in range(nfiles):
        (elen,) = struct.unpack_from("<I", data, pos)
        lay.fields.append((pos, 4, "entry_len"))
        e = pos + 4
        lay.fields.append((e, 2, "name length"))
        e += 2 + struct.unpack_from("<H", data, e)[0] + 8 + 32 + 8
        lay.fields.append((e, 2, "stream_count"))
        (ns,) = struct.unpack_from("<H", data, e)
        e += 2
        for _s in range(ns):
            lay.fields.append((e, 2, "key length"))
            e += 2 + struct.unpack_from("<H", data, e)[0] + 16
            lay.fields += [(e, 4, "n"), (e + 4, 4, "span_count")]
            (nspans,) = struct.unpack_from("<I", data, e + 4)
            e += 8
            for _k in range(nspans):
                e += 16
                lay.fields.append((e, 1, "span reason length"))
                e += 1 + data[e]
            e += 8
            lay.fields.append((e, 4, "run_count"))
            (runs,) = struct.unpack_from("<I", data, e)
            e += 4 + 12 * runs
            lay.fields += [(e, 1, "encoding"), (e + 1, 4, "stored_len")]
            (stored,) = struct.unpack_from("<I", data, e + 1)
            e += 5 + stored
        assert e == pos + 4 + elen, "layout walk out of step with the spec"
        pos += 4 + elen
    return lay


# --------------------------------------------------------------------------- bases


@pytest.fixture(scope="module")
def bases(small_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    work = tmp_path_factory.mktemp("hostile-manifests")
    index = work / "index"
    index_paths([small_corpus], index=index, config=load_config(environ={}))
    out = []
    with open_index(index, create=False) as idx:
        for i, kw in enumerate([{"label": "Q3 kitchen teleop"}, {"label": "", "anonymize": True},
                                {"label": "Lieferung \u00e9t\u00e9 \u2014 \u6771\u4eac", "fps": 2.0},
                                {"label": "one file", "paths": [small_corpus / "clip_0.mp4"]}]):
            path = work / f"base{i}.ovlm"
            export_manifest(idx, path, **kw)  # type: ignore[arg-type]
            out.append(path.read_bytes())
    for data in out:
        parse_manifest(data)
        layout(data)  # the walk above agrees with the real format
    return out


# --------------------------------------------------------------------------- the mutator


def mutate(rng: random.Random, bases: list[bytes]) -> tuple[str, bytes, bytes]:
    """One hostile variant of a random base: ``(kind, base, mutated)``."""
    base = rng.choice(bases)
    data = bytearray(base)
    n = len(data)
    lay = layout(base)
    kind = rng.choice(["flip", "flips", "truncate", "inflate", "inflate", "inflate", "version", "swap",
                       "duplicate", "splice", "insert", "delete", "zero"])
    if kind == "flip":
        data[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "flips":
        for _ in range(rng.randint(2, 16)):
            data[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del data[rng.randrange(n):]
    elif kind == "inflate":
        off, width, name = rng.choice(lay.fields)
        kind = f"inflate {name}"
        top = (1 << (8 * width)) - 1
        (old,) = struct.unpack_from({1: "<B", 2: "<H", 4: "<I", 8: "<Q"}[width], base, off)
        value = rng.choice([top, top >> 1, (top >> 1) + 1, n, n + 1, old + 1, old * 2 + 1, old - 1 if old else 1,
                            rng.randrange(top + 1), 0])
        data[off:off + width] = (value & top).to_bytes(width, "little")
    elif kind == "version":
        off = rng.choice([8] + [row + 2 for row, _b, _l in lay.sections])
        data[off:off + 2] = struct.pack("<H", rng.choice([0, 2, 3, 255, 0xFFFF, rng.randrange(65536)]))
    elif kind == "swap":
        (r1, b1, l1), (r2, b2, l2) = sorted(rng.sample(lay.sections, 2))
        rows = bytearray(base[16:lay.sections[0][1]])
        i1, i2 = r1 - 16, r2 - 16
        rows[i1:i1 + 16], rows[i2:i2 + 16] = base[r2:r2 + 16], base[r1:r1 + 16]
        bodies = base[lay.sections[0][1]:]
        rel = lay.sections[0][1]
        body = bytearray(bodies)
        x1, x2 = b1 - rel, b2 - rel
        body = body[:x1] + bodies[x2:x2 + l2] + body[x1 + l1:x2] + bodies[x1:x1 + l1] + body[x2 + l2:]
        data = bytearray(base[:16]) + rows + body
    elif kind == "duplicate":
        row, body, length = rng.choice(lay.sections)
        at = rng.randrange(len(lay.sections) + 1)
        rows = bytearray(base[16:lay.sections[0][1]])
        rows[16 * at:16 * at] = base[row:row + 16]
        bodies = bytearray(base[lay.sections[0][1]:])
        cut = sum(ln for _r, _b, ln in lay.sections[:at])
        bodies[cut:cut] = base[body:body + length]
        head = bytearray(base[:16])
        struct.pack_into("<I", head, 12, len(lay.sections) + 1)
        data = head + rows + bodies
    elif kind == "splice":
        other = rng.choice(bases)
        a = rng.randrange(len(other))
        b = rng.randrange(a, min(len(other), a + 4096) + 1)
        pos = rng.randrange(n)
        data[pos:pos + rng.randrange(0, 64)] = other[a:b]
    elif kind == "insert":
        pos = rng.randrange(n + 1)
        data[pos:pos] = rng.randbytes(rng.randint(1, 64))
    elif kind == "delete":
        pos = rng.randrange(n)
        del data[pos:pos + rng.randint(1, 64)]
    else:  # zero a run (a sparse / preallocated file)
        pos = rng.randrange(n)
        data[pos:pos + rng.randint(1, 512)] = bytes(min(n - pos, rng.randint(1, 512)))
    return kind, base, bytes(data)


# --------------------------------------------------------------------------- one check, measured


@dataclass
class Tally:
    cases: int = 0
    refused: int = 0
    unchanged: int = 0
    other: dict[str, int] = field(default_factory=dict)
    first_traceback: str = ""
    peak: int = 0
    traced: int = 0
    rss_before: int = field(default_factory=lambda: _rss())
    slowest: float = 0.0
    slowest_kind: str = ""
    slowest_cpu: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)

    def check(self, kind: str, base: bytes, data: bytes, parse: Callable[[bytes], object]) -> None:
        self.cases += 1
        group = kind.split(" ")[0]
        self.kinds[group] = self.kinds.get(group, 0) + 1
        if data == base:  # e.g. a swap of two identical runs: not a mutation
            self.unchanged += 1
            return
        # Tracing allocations makes a parse ~10x slower: trace a sample (every inflated field,
        # which is where an unchecked allocation would show, plus every 8th other case); the
        # process's peak RSS bounds the rest.
        trace = group == "inflate" or self.cases % (32 if FULL else 8) == 0
        if trace:
            tracemalloc.start()
        t, c = time.perf_counter(), time.process_time()
        try:
            parse(data)
        except ManifestError:
            self.refused += 1
        except Exception as exc:
            name = f"{kind}: {type(exc).__name__}"
            self.other[name] = self.other.get(name, 0) + 1
            self.first_traceback = self.first_traceback or traceback.format_exc()
        else:
            name = f"{kind}: accepted"
            self.other[name] = self.other.get(name, 0) + 1
        dt, dc = time.perf_counter() - t, time.process_time() - c
        self.slowest_cpu = max(self.slowest_cpu, dc)
        if trace:
            self.traced += 1
            self.peak = max(self.peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        if dt > self.slowest:
            self.slowest, self.slowest_kind = dt, kind

    def line(self, what: str) -> str:
        return (f"{what}: {self.cases} cases, {self.refused} refused with ManifestError, "
                f"{sum(self.other.values())} other outcomes, {self.unchanged} unchanged; peak traced memory "
                f"{self.peak / 1024:.0f} KiB over {self.traced} traced parses; process peak RSS "
                f"{_rss() / 2**20:.0f} MiB (+{(_rss() - self.rss_before) / 2**20:.0f} MiB); slowest "
                f"{self.slowest * 1000:.2f} ms wall ({self.slowest_kind}), {self.slowest_cpu * 1000:.2f} ms CPU")


def _rss() -> int:
    """Peak resident set size of this process in bytes (Linux reports KiB, macOS bytes)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# --------------------------------------------------------------------------- tests


def test_hypothesis_campaign(bases: list[bytes], tmp_path: Path) -> None:
    """COUNT hypothesis-driven mutations: only ManifestError, bounded memory and time."""
    tally = Tally()
    target = tmp_path / "case.ovlm"

    def from_file(data: bytes) -> object:
        target.write_bytes(data)
        return read_manifest(target)

    @settings(max_examples=COUNT, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False), st.integers(0, 19))
    def run(rng: random.Random, via_file: int) -> None:
        kind, base, data = mutate(rng, bases)
        tally.check(kind, base, data, from_file if via_file == 0 else parse_manifest)

    started = time.perf_counter()
    run()
    print(f"\n{tally.line('hostile manifests (hypothesis)')}; {time.perf_counter() - started:.1f} s; "
          f"by kind {dict(sorted(tally.kinds.items()))}")
    assert not tally.other, f"{tally.other}\n{tally.first_traceback}"
    assert tally.refused >= COUNT * 0.95
    assert tally.peak < MEMORY_BOUND, tally.peak


def test_inflated_fields_each_refused(bases: list[bytes]) -> None:
    """Every count/length field of every base, set to each hostile value: refused."""
    tally = Tally()
    for base in bases:
        for off, width, name in layout(base).fields:
            top = (1 << (8 * width)) - 1
            for value in {top, top >> 1, (top >> 1) + 1, len(base), len(base) + 1, 0}:
                data = bytearray(base)
                data[off:off + width] = (value & top).to_bytes(width, "little")
                tally.check(f"inflate {name}", base, bytes(data), parse_manifest)
    print(f"\n{tally.line('hostile manifests (every count/length field)')}")
    assert not tally.other, f"{tally.other}\n{tally.first_traceback}"
    assert tally.peak < MEMORY_BOUND, tally.peak


def test_every_single_byte_tamper_of_a_real_manifest_is_refused(bases: list[bytes]) -> None:
    """Every position of every real export with one pseudo-random other value; in the full
    campaign, every position of the smallest export with all 255 other values: always
    refused (by the parse or the Merkle root)."""
    tally = Tally()
    rng = random.Random(5)
    small = min(bases, key=len)
    expected = 0
    for base in bases:
        for pos in range(len(base)):
            values = range(1, 256) if FULL and base is small else (rng.randrange(1, 256),)
            for x in values:
                data = bytearray(base)
                data[pos] ^= x
                tally.check("byte", base, bytes(data), parse_manifest)
                expected += 1
    sizes = "+".join(str(len(b)) for b in bases)
    print(f"\n{tally.line(f'single-byte tampers of real manifests ({sizes} bytes; all 255 values: {FULL})')}")
    assert not tally.other, f"{tally.other}\n{tally.first_traceback}"
    assert tally.refused == expected
