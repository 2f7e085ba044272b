"""A seed from the shards is moved to the owned sample its offered frame matches best, within half a
second (core/match/pair.py ``_snap_seeds``): the shards hold one sample a second at turning
phases, so a hit can sit up to half a second off the copied moment."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.match.pair import SNAP_SECONDS, _snap_seeds
from overlap_desktop.core.types import StreamFingerprints, Variant


def _stream(codes: np.ndarray, usable: np.ndarray | None = None, fps: float = 4.0) -> StreamFingerprints:
    n = codes.shape[0]
    return StreamFingerprints(times_ns=np.arange(n, dtype=np.int64) * int(1e9 / fps),
                              quality=np.full(n, 100, np.uint8), codes=codes[:, None, :],
                              variants=(Variant(),), usable=np.ones(n, bool) if usable is None else usable,
                              indeterminate=[], fps=fps, duration_s=n / fps)


def test_a_seed_moves_to_the_matching_sample_within_half_a_second_and_no_further() -> None:
    rng = np.random.default_rng(3)
    owned = rng.integers(0, 256, (20, 32), dtype=np.uint8)
    offered = _stream(owned[[9, 10, 11, 18]].copy())
    corpus = _stream(owned)
    q = np.array([0, 1, 2, 3])
    # Seeds 2 samples (0.5 s) after, 1 before, exactly on, and 3 (0.75 s) away from the copied sample.
    c = np.array([11, 9, 11, 15])
    got, dist = _snap_seeds(offered, corpus, q, c, np.zeros(4, np.int64), np.full(4, 40))
    assert SNAP_SECONDS == 0.5
    assert got[:3].tolist() == [9, 10, 11]
    # The copied sample of the last is out of reach: it stays within half a second of its seed.
    assert got[3] != 18 and abs(int(got[3]) - 15) <= 2
    assert dist is not None and dist[:3].tolist() == [0, 0, 0] and dist[3] > 0


def test_ties_keep_the_seed_and_unusable_samples_are_never_chosen() -> None:
    owned = np.zeros((12, 32), np.uint8)  # a still stretch: every sample alike
    owned[6] = 255
    usable = np.ones(12, bool)
    usable[6] = False
    offered = _stream(np.full((1, 32), 255, np.uint8))
    got, _ = _snap_seeds(offered, _stream(owned), np.array([0]), np.array([5]), np.zeros(1, np.int64), None)
    assert got.tolist() == [6]
    # Not usable, 6 is never chosen; its usable neighbours all tie with 5, which stays.
    got, _ = _snap_seeds(offered, _stream(owned, usable), np.array([0]), np.array([5]), np.zeros(1, np.int64), None)
    assert got.tolist() == [5]
