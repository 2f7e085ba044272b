"""Tokenizers, the n-choosing rule and n-gram hashing for text overlap.

The tokenizer id and n are part of every keyed n-gram hash (:func:`keyed_ngram_hashes`),
so a vendor's manifest and a lab's check agree on them by construction; the n rule is
overlapy's (the GPT-3 appendix method), see :func:`choose_n`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from overlap_desktop.errors import InputError, UsageError

__all__ = [
    "DEFAULT_TOKENIZER",
    "TOKENIZERS",
    "TokenHasher",
    "check_n_rule",
    "choose_n",
    "keyed_ngram_hashes",
    "ngram_hashes",
    "ngram_key",
    "ngram_windows",
    "tokenize",
]

_NON_ALNUM = re.compile(r"[^\w\s]|_")


def _tok_alnum_lower(text: str) -> list[str]:
    # One regex pass over the whole text, then a split: much faster than filtering each token.
    return _NON_ALNUM.sub("", text.lower()).split()


def _tok_whitespace(text: str) -> list[str]:
    return text.split()


#: Tokenizer id -> function. The id is part of every hashed n-gram key, so both sides of a
#: privacy-preserving check must use the same tokenizer.
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "alnum-lower-v1": _tok_alnum_lower,
    "whitespace-v1": _tok_whitespace,
}
DEFAULT_TOKENIZER = "alnum-lower-v1"


def tokenize(text: str, tokenizer: str = DEFAULT_TOKENIZER) -> list[str]:
    """Split ``text`` into tokens with a registered tokenizer (default: lower-cased alphanumeric
    tokens delimited by whitespace)."""
    try:
        return TOKENIZERS[tokenizer](text)
    except KeyError:
        raise InputError(f"unknown tokenizer {tokenizer!r} (known: {', '.join(sorted(TOKENIZERS))})") from None


def check_n_rule(percentile: float, min_n: int, max_n: int) -> None:
    """Refuse n-choosing settings that cannot mean anything (NaN, 500th percentile, min > max).

    Raises:
        UsageError: naming the setting and the allowed range.
    """
    if not (isinstance(percentile, (int, float)) and math.isfinite(percentile) and 0 <= percentile <= 100):
        raise UsageError(f"--percentile must be a number from 0 to 100 (got {percentile!r})")
    if min_n < 1 or max_n < min_n:
        raise UsageError(f"need 1 <= --min-n <= --max-n (got --min-n {min_n}, --max-n {max_n})")


def choose_n(lengths: Sequence[int], *, percentile: float = 5.0, min_n: int = 8, max_n: int = 13) -> int:
    """The n-gram size: the ``percentile`` of test-example lengths (in tokens), clamped to
    [``min_n``, ``max_n``].

    The percentile is overlapy's rule exactly, ``sorted(lengths)[int(N * p / 100)]`` (the
    element at that rank, no interpolation), so a test set gets the same n as with the
    reference implementation. An interpolating rule (``numpy.percentile``) differs on small
    test sets (about one 20-example set in three) and is not more right for them: with so
    few examples any percentile is a rank anyway, and the method is defined by the reference.
    ``p = 100`` takes the longest example.

    Raises:
        UsageError: ``percentile`` outside 0..100 or not a number, or ``min_n``/``max_n`` unusable.
    """
    check_n_rule(percentile, min_n, max_n)
    if not lengths:
        return min_n
    ordered = sorted(lengths)
    n = ordered[min(len(ordered) - 1, int(len(ordered) * percentile / 100))]
    return int(max(min_n, min(max_n, n)))


# --------------------------------------------------------------------------- hashing

_P = np.uint64(0x100000001B3)  # FNV prime: odd, so the polynomial is invertible mod 2^64


def _token_hash(token: str, key: bytes = b"") -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8, key=key).digest(), "little")


class TokenHasher(dict[str, int]):
    """Per-token 64-bit hashes, cached (vocabularies are small next to text volumes).

    A dict with ``__missing__`` so that ``np.fromiter(map(hasher.__getitem__, tokens))``
    runs the per-token step in C for every token seen before.
    """

    def __init__(self, key: bytes = b"") -> None:
        super().__init__()
        self.key = key

    def __missing__(self, token: str) -> int:
        h = self[token] = _token_hash(token, self.key)
        return h

    def __call__(self, tokens: Sequence[str]) -> np.ndarray:
        return np.fromiter(map(self.__getitem__, tokens), dtype=np.uint64, count=len(tokens))


def ngram_windows(token_hashes: np.ndarray, n: int) -> np.ndarray:
    """Rolling polynomial hash of every window of ``n`` token hashes (uint64, wrapping)."""
    m = token_hashes.shape[0] - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    acc = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            acc = acc * _P + token_hashes[k:k + m]
    return acc


def ngram_hashes(tokens: Sequence[str], n: int, *, key: bytes = b"") -> np.ndarray:
    """64-bit hashes of every n-gram of ``tokens`` in order (``len(tokens) - n + 1`` values)."""
    return ngram_windows(TokenHasher(key)(tokens), n)


def ngram_key(tokenizer: str, n: int) -> bytes:
    # blake2b keys are at most 64 bytes; the key binds the hashes to the tokenizer and n.
    return hashlib.blake2b(f"overlap-text-ngrams/v1/{tokenizer}/{n}".encode(), digest_size=32).digest()


def keyed_ngram_hashes(examples: Iterable[str], *, tokenizer: str = DEFAULT_TOKENIZER,
                       ns: Sequence[int] = tuple(range(8, 14))) -> dict[int, np.ndarray]:
    """Sorted unique keyed hashes of every n-gram of ``examples`` for each n in ``ns``.

    This is what a manifest carries instead of text: the key depends on the tokenizer id
    and n, so hashes of different settings never collide by construction.
    """
    tok = [tokenize(e, tokenizer) for e in examples]
    out: dict[int, np.ndarray] = {}
    for n in ns:
        hasher = TokenHasher(ngram_key(tokenizer, n))
        parts = [ngram_windows(hasher(t), n) for t in tok if len(t) >= n]
        out[n] = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.uint64)
    return out
