"""The same footage through every reader gives the same fingerprints (within tolerance).

This is what makes re-wrapping owned footage as a robotics recording useless for
laundering: fingerprints come from decoded pixels, whatever the container.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.ingest.fingerprint import fingerprint_stream
from overlap_desktop.core.ingest.pdq_batch import hamming
from overlap_desktop.core.ingest.readers import reader_for
from overlap_desktop.core.types import StreamFingerprints
from tests.fixtures_recordings import FOOTAGE_SECONDS, mcap_foxglove_proto

FPS = 4.0


def _fp(path: Path, key: str | None = None) -> StreamFingerprints:
    reader = reader_for(path)
    streams = reader.streams(path)
    stream = streams[0] if key is None else next(s for s in streams if s.key == key)
    return fingerprint_stream(reader.frames(path, stream), fps=FPS, duration_s=stream.duration_s)


@pytest.fixture(scope="module")
def reference(mcap_raw: Path) -> StreamFingerprints:
    """Fingerprints of the exact rendered pixels (raw rgb8 MCAP: lossless)."""
    fp = _fp(mcap_raw)
    assert len(fp) == int(FOOTAGE_SECONDS * FPS)
    assert fp.quality.min() >= 50  # the footage is textured: every sample counts
    return fp


def _mean_distance(a: StreamFingerprints, b: StreamFingerprints) -> tuple[float, int]:
    n = min(len(a), len(b))
    assert n >= len(a) - 1, "grids must cover the same time"
    assert np.array_equal(a.times_ns[:n], b.times_ns[:n])
    return float(hamming(a.codes[:n, 0], b.codes[:n, 0]).mean()), n


@pytest.mark.parametrize(("source", "key", "max_mean"), [
    ("rosbag1_file", "/camera/image_raw", 0.0),
    ("rosbag2_sqlite", "/camera/image_raw", 0.0),
    ("rosbag2_mcap", "/camera/image_raw", 0.0),
    ("image_sequence", None, 0.0),  # PNG: lossless
    # Measured: 2-3 bits for H.264 CRF 20 and JPEG; the bounds leave room for codec builds.
    ("footage_mp4", None, 8.0),  # H.264 CRF 20 through the video reader
    ("mcap_jpeg", None, 8.0),
    ("rosbag1_file", "/camera/compressed", 8.0),
    ("rosbag2_mcap", "/camera/compressed", 8.0),
])
def test_every_reader_gives_the_same_fingerprints(request: pytest.FixtureRequest, reference: StreamFingerprints,
                                                  source: str, key: str | None, max_mean: float) -> None:
    path = request.getfixturevalue(source)
    mean, n = _mean_distance(reference, _fp(path, key))
    assert n >= len(reference) - 1
    assert mean <= max_mean, f"{source} {key}: mean Hamming distance {mean:.1f} bits"


def test_compressed_video_topic_matches(tmp_path: Path, footage_frames: list[np.ndarray],
                                        reference: StreamFingerprints) -> None:
    p = mcap_foxglove_proto(tmp_path / "video.mcap", "CompressedVideo", footage_frames, video_format="h264")
    mean, _ = _mean_distance(reference, _fp(p))
    assert mean <= 8.0


@pytest.mark.parametrize(("encoding", "max_mean"), [("mono8", 4.0), ("yuv422", 6.0), ("bayer_rggb8", 10.0)])
def test_raw_encodings_match(tmp_path: Path, footage_frames: list[np.ndarray], reference: StreamFingerprints,
                             encoding: str, max_mean: float) -> None:
    """PDQ hashes luminance, so gray, chroma-subsampled and half-resolution Bayer copies still match."""
    from tests.fixtures_recordings import mcap_raw_footage

    p = mcap_raw_footage(tmp_path / f"{encoding}.mcap", encoding, frames=footage_frames)
    mean, _ = _mean_distance(reference, _fp(p))
    assert mean <= max_mean


def test_unrelated_footage_is_far(tmp_path: Path, reference: StreamFingerprints) -> None:
    """Guards the test above: a different scene must not pass the same thresholds."""
    from tests.fixtures_recordings import footage, mcap_raw_footage

    other = mcap_raw_footage(tmp_path / "other.mcap", frames=footage(seed=99))
    mean, _ = _mean_distance(reference, _fp(other))
    assert mean > 60
