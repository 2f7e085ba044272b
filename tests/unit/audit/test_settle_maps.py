"""The settle check's pixel measures and decision on synthetic aligned stacks (no video)."""

from __future__ import annotations

import numpy as np

from overlap_desktop.core.audit.settle import decide
from overlap_desktop.core.audit.settle_maps import measure_line

N = 24


def _background(seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(30, 220, (8, 8, 3))
    return np.kron(coarse, np.ones((8, 8, 1))).astype(np.float32)


def _with_object(bg: np.ndarray, y: int, x: int, size: int = 6) -> np.ndarray:
    out = bg.copy()
    out[y:y + size, x:x + size] = (250, 20, 20)
    return out


def _episode(bg: np.ndarray, *, phase: float = 0.0) -> np.ndarray:
    """An 'arm' (a grey bar) sweeping across a still scene."""
    frames = []
    for k in range(N):
        f = bg.copy()
        x = int(4 + 50 * ((k / N + phase) % 1.0))
        f[20:44, x:x + 8] = 128.0
        frames.append(f)
    return np.stack(frames)


def _noise(stack: np.ndarray, seed: int) -> np.ndarray:
    return np.clip(stack + np.random.default_rng(seed).normal(0, 1.5, stack.shape), 0, 255).astype(np.float32)


def _grade(stack: np.ndarray) -> np.ndarray:
    """Brightness, contrast, gamma and a saturation boost."""
    grey = stack.mean(axis=-1, keepdims=True)
    sat = grey + 1.3 * (stack - grey)
    return np.clip(255 * (np.clip(sat, 0, 255) / 255) ** 0.9 * 1.05 + 8, 0, 255).astype(np.float32)


def test_copy_of_a_scripted_episode_is_owned_and_its_twin_new() -> None:
    scene = _with_object(_background(), 48, 10)
    owned = _episode(scene)
    copy = _noise(owned, 2)
    twin = _noise(_episode(_with_object(_background(), 48, 20)), 3)  # the block moved 10 pixels
    assert decide(measure_line(copy, owned))[0] == "owned"
    verdict, reason = decide(measure_line(twin, owned))
    assert verdict == "new"
    assert "objects moved" in reason


def test_graded_copy_is_owned_and_graded_twin_new() -> None:
    owned = _episode(_with_object(_background(), 48, 10))
    twin_owned = _episode(_with_object(_background(), 48, 24))
    assert decide(measure_line(_grade(_noise(owned, 4)), owned))[0] == "owned"
    assert decide(measure_line(_grade(_noise(twin_owned, 5)), owned))[0] == "new"


def test_nothing_moving_stays_cant_tell() -> None:
    still = np.stack([_background()] * N)
    verdict, reason = decide(measure_line(_noise(still, 6), still))
    assert verdict == "cant_tell"
    assert "nothing moves" in reason
    # ... while the same still view with a moving arm, truly copied, is owned.
    moving = _episode(_background())
    assert decide(measure_line(_noise(moving, 7), moving))[0] == "owned"


def test_another_moment_of_the_same_view_is_never_owned() -> None:
    owned = _episode(_background())
    other = _noise(_episode(_background(), phase=0.5), 8)
    verdict, reason = decide(measure_line(other, owned))
    assert verdict != "owned"
    assert "motion does not" in reason


def test_one_differing_speck_is_not_enough_for_new() -> None:
    owned = _episode(_background())
    speck = _noise(owned, 9)
    speck[:, 2:4, 2:4] = 255.0  # a 2x2 logo in a corner: 4 cells
    verdict, _ = decide(measure_line(speck, owned))
    assert verdict == "cant_tell"


def test_too_few_samples_stay_cant_tell() -> None:
    owned = _episode(_background())[:4]
    assert decide(measure_line(owned.copy(), owned))[0] == "cant_tell"
