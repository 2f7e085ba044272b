"""Hostile manifests that are otherwise valid (issue 21, items 6 and 7).

- Samples 1 ns apart: a 640 KB manifest of 20,000 such samples made ``compare-offers`` use
  14 GB (measured before this change). A stream may now declare at most 120 samples per
  second and hold at most that many (plus 5 % jitter) in any one-second window, checked at
  parse time, so what a comparison builds is bounded by footage seconds. The writer
  refuses the same.
- Entries without a single fingerprint are capped (``MAX_FILES_WITHOUT_SAMPLES``): they
  cannot match anything but each costs memory and a report row.
- ``export --annotations`` (and ``compare --eval``) on JSON nested 200,000 deep is a clear
  refusal naming the file, not a RecursionError reported as a bug.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.manifest import encode as manifest_mod
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import (
    MAX_FILES_WITHOUT_SAMPLES,
    MAX_SAMPLES_PER_SECOND,
    ManifestFile,
    ManifestStream,
)
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.types import StreamFingerprints, Variant
from overlap_desktop.errors import ManifestError
from tests.reliability.lab21 import Lab, run_cli


def _stream(n: int, step_ns: int, seed: int = 5) -> StreamFingerprints:
    rng = np.random.default_rng(seed)
    return StreamFingerprints(times_ns=np.arange(n, dtype=np.int64) * step_ns,
                              quality=np.full(n, 90, np.uint8),
                              codes=rng.integers(0, 256, (n, 1, 32), dtype=np.uint8), variants=(Variant(),),
                              usable=np.ones(n, bool), indeterminate=[], fps=1.0,
                              duration_s=max(1.0, n * step_ns / 1e9))


def _one_file(fp: StreamFingerprints) -> list[ManifestFile]:
    return [ManifestFile(name="a.mp4", size=10, sha256="00" * 32, duration_s=fp.duration_s,
                         streams=[ManifestStream("v:0", 1.0, fp)])]


def _hand_made(files: list[ManifestFile], monkeypatch: pytest.MonkeyPatch) -> bytes:
    """Encode with the writer's new checks switched off: what a hostile tool would send."""
    with monkeypatch.context() as mp:
        mp.setattr(manifest_mod, "crowded_second", lambda _t: None)
        mp.setattr(manifest_mod, "MAX_FILES_WITHOUT_SAMPLES", 10 ** 9)
        data, _root = encode_manifest(files, algo_id="a", prep_id="p")
    return data


@pytest.mark.parametrize("step_ns", [1, 1000, 999_999])
def test_crowded_samples_are_refused_at_parse_time(monkeypatch: pytest.MonkeyPatch, step_ns: int) -> None:
    fp = _stream(MAX_SAMPLES_PER_SECOND + 500, step_ns)
    with pytest.raises(ManifestError, match="samples within one second"):
        encode_manifest(_one_file(fp), algo_id="a", prep_id="p")
    data = _hand_made(_one_file(fp), monkeypatch)
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError, match="samples within one second of footage"):
            parse_manifest(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The refusal costs about what the file's own samples cost (40 bytes each decoded), not more.
    assert peak < 64 * len(fp) + (1 << 20), peak
    print(f"\n{len(fp)} samples {step_ns} ns apart ({len(data)} bytes): refused, peak traced {peak / 1024:.0f} KiB")


def test_the_density_limit_itself_is_accepted() -> None:
    """Exactly the budget (120 per second, on a rounded nanosecond grid) parses: the cap
    refuses only what exceeds it."""
    fp = _stream(3 * MAX_SAMPLES_PER_SECOND, round(1e9 / MAX_SAMPLES_PER_SECOND))
    data, _root = encode_manifest(_one_file(fp), algo_id="a", prep_id="p")
    assert len(parse_manifest(data).files[0].streams[0].fingerprints) == len(fp)


def test_a_declared_rate_above_the_budget_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher sizes its look-around by the declared rate: 1000 fps declared over
    sparse samples once made 20,000 samples need 2.4 GB."""
    fp = _stream(50, 1_000_000_000)
    files = [ManifestFile(name="a.mp4", size=10, sha256="00" * 32, duration_s=50.0,
                          streams=[ManifestStream("v:0", 1000.0, fp)])]
    with pytest.raises(ManifestError, match="fps 1000.0 outside"):
        encode_manifest(files, algo_id="a", prep_id="p")
    with monkeypatch.context() as mp:
        mp.setattr(manifest_mod, "MAX_FPS", 1000.0)
        data, _root = encode_manifest(files, algo_id="a", prep_id="p")
    with pytest.raises(ManifestError, match="fps"):
        parse_manifest(data)


def test_a_burst_hidden_in_a_long_stream_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long, sparse stream with one crowded second (its average density is fine)."""
    base = _stream(4000, 1_000_000_000)
    times = base.times_ns.copy()
    times[2000:3200] = times[2000] + np.arange(1200, dtype=np.int64)  # 1,200 samples 1 ns apart
    times[3200:] = times[2000] + 10 ** 9 * np.arange(1, 801, dtype=np.int64)
    fp = StreamFingerprints(times_ns=times, quality=base.quality, codes=base.codes, variants=base.variants,
                            usable=base.usable, indeterminate=[], fps=1.0, duration_s=float(times[-1]) / 1e9 + 1)
    data = _hand_made(_one_file(fp), monkeypatch)
    with pytest.raises(ManifestError, match=r"within one second of footage \(from 2000\.000000 s\)"):
        parse_manifest(data)


def test_entries_without_fingerprints_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    n = MAX_FILES_WITHOUT_SAMPLES + 1
    files = [ManifestFile(name=f"f{i:06d}.mp4", size=i, sha256="00" * 32, duration_s=0.0, streams=[])
             for i in range(n)]
    with pytest.raises(ManifestError, match="carry no fingerprint"):
        encode_manifest(files, algo_id="a", prep_id="p")
    data = _hand_made(files, monkeypatch)
    with pytest.raises(ManifestError, match=f"more than {MAX_FILES_WITHOUT_SAMPLES} file entries carry no"):
        parse_manifest(data)
    parse_manifest(_hand_made(files[:-1], monkeypatch))  # exactly the cap is accepted
    print(f"\n{n} empty entries ({len(data)} bytes): refused")


def test_deeply_nested_annotation_json_is_refused_by_name(lab21: Lab, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "labels.json"
    deep.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    deep_lines = tmp_path / "labels.jsonl"
    deep_lines.write_text('{"t":' * 100_000 + '"x"' + "}" * 100_000 + "\n", encoding="utf-8")
    for src in (deep, deep_lines):
        code, _, err = run_cli(["export", "-q", "--index", lab21.index, "-o", tmp_path / "o.ovlm",
                                "--annotations", src], capsys)
        assert code == 4 and "too deeply" in err and src.name in err, (code, err)
        assert "internal error" not in err
    assert not (tmp_path / "o.ovlm").exists()
