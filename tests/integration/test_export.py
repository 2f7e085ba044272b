"""``overlap export`` / ``inspect`` against a real index: round trip at the chosen rate,
byte-identical re-exports, anonymisation, sampling interop, and one real clip end to end."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.index import store as index_mod
from overlap_desktop.core.index.store import Index, open_index
from overlap_desktop.core.manifest.export import export_manifest
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.core.types import StreamInfo
from overlap_desktop.errors import Cancelled, ManifestError
from tests.fixtures_manifest import ALGO, PREP, synthetic_fp

NAMES = ["cam/ep_000.mp4", "cam/ep_001.mp4", "wrist/ep_000.mkv", "top.mcap"]


@pytest.fixture()
def fake_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    # Storage-level tests must not depend on the fingerprinting pipeline's identifiers.
    monkeypatch.setattr(index_mod, "_current_ids", lambda: (ALGO, PREP))


def record(idx: Index, path: Path, seed: int, *, fps: float = 4.0, n: int = 120, keys: tuple[str, ...] = ("v:0",),
           content: bytes | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if content is not None else np.random.default_rng(seed).bytes(2000 + seed))
    st = path.stat()
    with idx.writer():
        idx.record_file(path, size=st.st_size, mtime_ns=st.st_mtime_ns,
                        sha256=hashlib.sha256(path.read_bytes()).hexdigest(), reader="fake",
                        streams=[(StreamInfo(k), synthetic_fp(seed * 10 + i, n, fps=fps, variants=3))
                                 for i, k in enumerate(keys)])


@pytest.fixture()
def corpus(tmp_path: Path, fake_ids: None) -> tuple[Path, Path]:
    data, ix = tmp_path / "data", tmp_path / "ix"
    with open_index(ix) as idx:
        for i, name in enumerate(NAMES):
            record(idx, data / name, i + 1, keys=("v:0", "/cam/right") if name.endswith("mcap") else ("v:0",))
    return data, ix


def test_round_trip_at_the_chosen_rate(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    data, ix = corpus
    out = tmp_path / "offer.ovlm"
    with open_index(ix) as idx:
        s = export_manifest(idx, out, label="Q3", fps=1.0)
        m = read_manifest(out, expect_algo=ALGO, expect_prep=PREP)
        assert s.root == m.root and s.files == 4 and s.bytes == out.stat().st_size
        assert [f.name for f in m.files] == sorted(NAMES)
        by_name = {f.name: f for f in m.files}
        for ifile, key, fp in idx.streams():
            rel = Path(ifile.path).relative_to(data).as_posix()
            f = by_name[rel]
            assert (f.size, f.sha256) == (ifile.size, ifile.sha256)
            got = {s.key: s for s in f.streams}[key]
            assert got.fps == 1.0 and len(got.fingerprints) == 30  # 120 samples at 4 fps -> 30 at 1 fps
            np.testing.assert_array_equal(got.fingerprints.times_ns, fp.times_ns[::4])
            np.testing.assert_array_equal(got.fingerprints.codes[:, 0], fp.codes[::4, 0])
            np.testing.assert_array_equal(got.fingerprints.quality, fp.quality[::4])
            np.testing.assert_array_equal(got.fingerprints.usable, fp.usable[::4])
            assert got.fingerprints.indeterminate == fp.indeterminate


def test_same_index_exported_twice_is_byte_identical(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    _, ix = corpus
    a, b = tmp_path / "a.ovlm", tmp_path / "b.ovlm"
    assert main(["export", "--index", str(ix), "-q", "-o", str(a), "--label", "x"]) == 0
    assert main(["export", "--index", str(ix), "-q", "-o", str(b), "--label", "x"]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert main(["export", "--index", str(ix), "-q", "-o", str(b), "--label", "x", "--stamp-time"]) == 0
    assert read_manifest(b).created is not None and a.read_bytes() != b.read_bytes()


@pytest.mark.parametrize("index_fps", [2.0, 4.0, 8.0])
def test_sampling_interop_records_times_and_rates_exactly(index_fps: float, tmp_path: Path,
                                                         fake_ids: None) -> None:
    data, ix = tmp_path / "d", tmp_path / "ix"
    n = int(30 * index_fps)
    with open_index(ix) as idx:
        record(idx, data / "clip.mp4", 7, fps=index_fps, n=n)
        (_, _, fp), = list(idx.streams())
        for target in (1.0, index_fps):
            s = export_manifest(idx, tmp_path / f"m{target}.ovlm", fps=target)
            st = read_manifest(s.path).files[0].streams[0]
            assert st.fps == target
            stride = int(index_fps / target)
            np.testing.assert_array_equal(st.fingerprints.times_ns, fp.times_ns[::stride])
            if target == 1.0:  # whole seconds on the manifest side, in real time
                assert np.all(st.fingerprints.times_ns % 1_000_000_000 == 0)
            assert st.fingerprints.duration_s == fp.duration_s


def test_anonymised_export_leaks_no_names(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    data, ix = corpus
    out = tmp_path / "anon.ovlm"
    assert main(["export", "--index", str(ix), "-q", "-o", str(out), "--anonymize-paths"]) == 0
    raw = out.read_bytes()
    for token in (b"ep_000", b"cam/", b"wrist", b"top.mcap", b"/cam/right", str(data).encode()):
        assert token not in raw
    m = read_manifest(out)
    assert m.anonymized
    assert [f.name[:11] for f in m.files] == [f"file-{i:06d}" for i in range(1, 5)]
    assert sorted(os.path.splitext(f.name)[1] for f in m.files) == [".mcap", ".mkv", ".mp4", ".mp4"]
    assert {tuple(s.key for s in f.streams) for f in m.files} == {("stream-1",), ("stream-1", "stream-2")}
    # Numbered by content digest, so the numbering says nothing about the original names.
    assert [f.sha256 for f in m.files] == sorted(f.sha256 for f in m.files)


def test_export_of_a_subfolder_and_inspect(corpus: tuple[Path, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data, ix = corpus
    out = tmp_path / "cam.ovlm"
    assert main(["export", "--index", str(ix), "-q", "-o", str(out), str(data / "cam")]) == 0
    printed = capsys.readouterr().out
    m = read_manifest(out)
    assert [f.name for f in m.files] == ["ep_000.mp4", "ep_001.mp4"]
    assert m.root in printed and "files        2" in printed
    assert main(["inspect", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["root"] == m.root and info["files"] == 2 and info["sampling"] == [1.0]
    assert main(["inspect", str(out)]) == 0
    assert "Merkle root verified" in capsys.readouterr().out


def test_refusals_and_cancel(corpus: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, ix = corpus
    assert main(["export", "--index", str(ix), "-q", "-o", str(tmp_path / "x.ovlm"),
                 str(tmp_path / "nowhere")]) == 4
    assert "nothing to export" in capsys.readouterr().err
    assert main(["export", "--index", str(ix), "-q", "-o", str(tmp_path / "no" / "dir" / "x.ovlm")]) == 4
    assert main(["export", "--index", str(ix), "-q", "-o", str(tmp_path / "x.ovlm"), "--fps", "0"]) == 2
    assert main(["export", "--index", str(ix), "-q", "-o", str(tmp_path / "x.ovlm"), "--label", "a\nb"]) == 2
    bad = tmp_path / "bad.ovlm"
    bad.write_bytes(b"\x89OVLM\r\n\x1a" + b"\x01\x00" * 40)
    assert main(["inspect", str(bad)]) == 4
    assert "error" in capsys.readouterr().err
    with open_index(ix) as idx, pytest.raises(Cancelled):
        export_manifest(idx, tmp_path / "c.ovlm", cancel=lambda: True)
    assert not (tmp_path / "c.ovlm").exists()
    with open_index(ix) as idx, pytest.raises(ManifestError):
        export_manifest(idx, tmp_path / "c.ovlm", label="bell\x07")


def test_control_characters_in_file_names_are_replaced(tmp_path: Path, fake_ids: None) -> None:
    if os.name == "nt":
        pytest.skip("POSIX byte names")
    data, ix = tmp_path / "d", tmp_path / "ix"
    data.mkdir()
    weird = "café \x1b[31m.mp4"
    with open_index(ix) as idx:
        record(idx, data / weird, 1)
        record(idx, data / "plain.mp4", 2)
        m = read_manifest(export_manifest(idx, tmp_path / "o.ovlm").path)
    names = sorted(f.name for f in m.files)
    assert names[0] == "café \ufffd[31m.mp4" and names[1] == "plain.mp4"


@pytest.mark.slow
def test_real_clip_index_export_verify(tmp_path: Path) -> None:
    """The real pipeline: a short generated clip is indexed, exported and verified."""
    from tests.footage import make_clip

    data = tmp_path / "data"
    data.mkdir()
    make_clip(data / "clip.mp4", 3, duration=8.0, fps=12.0, size=(160, 120))
    ix = tmp_path / "ix"
    assert main(["index", "--index", str(ix), "-q", str(data)]) == 0
    out = tmp_path / "o.ovlm"
    assert main(["export", "--index", str(ix), "-q", "-o", str(out)]) == 0
    m = read_manifest(out)
    (f,) = m.files
    assert f.name == "clip.mp4" and f.sha256 == hashlib.sha256((data / "clip.mp4").read_bytes()).hexdigest()
    st = f.streams[0]
    assert st.fps == 1.0 and 7 <= len(st.fingerprints) <= 9
    assert np.all(np.diff(st.fingerprints.times_ns) == 1_000_000_000)
    assert main(["verify", str(out), "--data", str(data), "-q"]) == 0
