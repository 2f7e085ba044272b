"""Synthetic PDQ codes for the search and matching tests (numpy only)."""

from __future__ import annotations

import numpy as np


def flip_bits(codes: np.ndarray, nbits: int, rng: np.random.Generator) -> np.ndarray:
    """Each ``uint8 (n, 32)`` code with ``nbits`` distinct random bits flipped (re-encoding noise)."""
    bits = np.unpackbits(codes, axis=1)
    for row in bits:
        row[rng.choice(256, nbits, replace=False)] ^= 1
    return np.packbits(bits, axis=1)
