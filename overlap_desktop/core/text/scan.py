"""The n-gram scan's inner loop: normalise a block of text, hash its n-grams, find test n-grams.

Everything here works on whole blocks (megabytes) of text at once so that the per-token and
per-n-gram work runs in numpy rather than in a Python loop:

1. **Normalise.** A block is UTF-8 with one document per line. The tokenizer is applied as a
   byte translation (``bytes.translate``: lower-case, delete punctuation) on ASCII lines, and
   through the Python tokenizer on the rest, giving tokens separated by ASCII whitespace. Both
   routes produce the same tokens as :func:`overlap_desktop.core.text.overlap.tokenize` (a test
   checks this on random Unicode text).
2. **Hash tokens** from their bytes, 8 bytes at a time for all tokens at once (a strided
   view gives the 8 bytes at every offset), through a 64-bit mixer; tokens longer than
   :data:`LONG_TOKEN` bytes use blake2b instead (rare, and a numpy step per 8 bytes would be
   slow for a 1 MB "token").
3. **Hash n-grams** with a rolling polynomial over the token hashes and drop windows that
   cross a line (document) boundary.
4. **Look up** each n-gram hash first in a bitmap of the test n-grams (one random memory
   access), then only the few survivors in the sorted test hashes, and finally compare the
   tokens themselves, so a hash collision can never report a match.

The hashes are internal to one scan (the test side is hashed by the same code); the keyed
hashes a manifest carries are a different function in :mod:`overlap_desktop.core.text.overlap`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BadLine", "TestTable", "Windows", "block_windows", "normalize_docs", "normalize_lines"]

#: Tokens longer than this (bytes) are hashed with blake2b instead of the vectorised polynomial.
LONG_TOKEN = 32

_P_BYTE = np.uint64(0x100000001B3)
_P_GRAM = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1

# ASCII whitespace as str.split() sees it (it includes the separators \x1c..\x1f).
_STR_SPACE = bytes(i for i in range(128) if chr(i).isspace())


def _ascii_tables(tokenizer: str) -> tuple[bytes, bytes, bytes] | None:
    """(line table, document table, delete) for ``bytes.translate``, or None for tokenizers
    without a byte-level form. The document table also turns newlines into spaces."""
    line = bytearray(range(256))
    for b in _STR_SPACE:
        if b != 0x0A:
            # One kind of space, so that finding tokens is two comparisons; \x1c..\x1f split
            # words for str.split() but not for bytes.split().
            line[b] = 0x20
    if tokenizer == "alnum-lower-v1":
        for b in range(ord("A"), ord("Z") + 1):
            line[b] = b + 32
        # The regex [^\w\s]|_ on ASCII: everything but letters, digits and whitespace goes.
        delete = bytes(i for i in range(128) if not (chr(i).isalnum() or i in _STR_SPACE))
    elif tokenizer == "whitespace-v1":
        delete = b""
    else:
        return None
    doc = bytearray(line)
    doc[0x0A] = 0x20
    return bytes(line), bytes(doc), delete


_TABLES = {name: _ascii_tables(name) for name in ("alnum-lower-v1", "whitespace-v1")}


class BadLine(ValueError):
    """A line of a block is not UTF-8 (``index`` counts lines from 0 within the block)."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"line {index} of block: {reason}")
        self.index = index
        self.reason = reason


def normalize_lines(raw: bytes, tokenizer: str, fn: Callable[[str], list[str]]) -> bytes:
    """Tokens of each line of ``raw`` (UTF-8, ``\\n``-separated) joined by spaces, lines kept.

    Raises:
        BadLine: a line that is not UTF-8 (carries its index within ``raw``).
    """
    tables = _TABLES.get(tokenizer)
    if tables is not None and raw.isascii():
        return raw.translate(tables[0], tables[2])
    out: list[bytes] = []
    for i, line in enumerate(raw.split(b"\n")):
        if tables is not None and line.isascii():
            out.append(line.translate(tables[0], tables[2]))
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadLine(i, f"{exc.reason} at byte {exc.start}") from None
        out.append(" ".join(fn(text)).encode("utf-8", "replace"))
    return b"\n".join(out)


def normalize_docs(texts: Sequence[str], tokenizer: str, fn: Callable[[str], list[str]]) -> bytes:
    """Tokens of each document joined by spaces, one document per line (newlines inside a
    document become spaces, so line k of the result is always document k)."""
    tables = _TABLES.get(tokenizer)
    out: list[bytes] = []
    for text in texts:
        if tables is not None and text.isascii():
            out.append(text.encode("ascii").translate(tables[1], tables[2]))
        else:
            # "replace": JSON can carry lone surrogates; both sides of a check go through here.
            out.append(" ".join(fn(text)).encode("utf-8", "replace"))
    return b"\n".join(out)


def _mix(h: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser: the byte polynomial is linear, and its low bits depend only on
    # the low bits of the bytes; mixing makes every output bit depend on every input bit.
    with np.errstate(over="ignore"):
        h = h ^ (h >> np.uint64(30))
        h = h * _M1
        h = h ^ (h >> np.uint64(27))
        h = h * _M2
        return h ^ (h >> np.uint64(31))


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_MASK], dtype=np.uint64)
_LEN_SALT = np.uint64(0xD6E8FEB86659FD93)


def _words_at(words: np.ndarray, offsets: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The (up to) 8 bytes at each byte offset as a little-endian uint64, bytes past ``lens``
    zeroed: two aligned 8-byte loads and shifts (numpy shifts by 64 give 0)."""
    q = offsets >> 3
    r = (offsets & 7).astype(np.uint64) << np.uint64(3)
    w = (words[q] >> r) | (words[q + 1] << (np.uint64(64) - r))
    return w & _LOW_BYTES[np.minimum(lens, 8)]


def _token_hashes(a: np.ndarray, starts: np.ndarray, lens: np.ndarray, raw: bytes) -> np.ndarray:
    """A 64-bit hash of every token's bytes.

    Tokens are read 8 bytes at a time (a gather per 8 bytes of token instead of one per byte).
    """
    if starts.size == 0:
        return np.empty(0, dtype=np.uint64)
    padded = np.zeros(((a.size + 7) // 8 + 2) * 8, dtype=np.uint8)
    padded[:a.size] = a
    words = padded.view("<u8")
    with np.errstate(over="ignore"):
        h = _words_at(words, starts, lens) ^ (lens.astype(np.uint64) * _LEN_SALT)
        sel = np.flatnonzero(lens > 8)
        k = 8
        while sel.size and k < LONG_TOKEN:
            h[sel] = _mix(h[sel]) * _P_BYTE + _words_at(words, starts[sel] + k, lens[sel] - k)
            k += 8
            sel = sel[lens[sel] > k]
        out = _mix(h)
    for i in np.flatnonzero(lens > LONG_TOKEN).tolist():
        s = int(starts[i])
        out[i] = int.from_bytes(hashlib.blake2b(raw[s:s + int(lens[i])], digest_size=8).digest(), "little")
    return out


@dataclass(slots=True)
class Windows:
    """The n-grams of a normalised block.

    Attributes:
        hashes: Hash of the n-gram starting at each token (``len(starts) - n + 1`` values).
        valid: Whether that n-gram lies within one line (document).
        starts, ends: Byte offsets of every token in the normalised block.
        line: Line (document) index of every token.
    """

    hashes: np.ndarray
    valid: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    line: np.ndarray

    def gram(self, norm: bytes, j: int, n: int) -> bytes:
        """The tokens of the n-gram at token ``j``, joined by single spaces."""
        return b" ".join(norm[int(self.starts[j]):int(self.ends[j + n - 1])].split())

    def line_start_token(self, line: int) -> int:
        """Index of the first token of ``line`` (to give a position within the document)."""
        return int(np.searchsorted(self.line, line, side="left"))


_POWERS: list[np.ndarray] = [np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64)]
_R_GRAM = np.uint64(pow(int(_P_GRAM), -1, 1 << 64))  # P is odd, so it has an inverse mod 2**64


def _powers(size: int) -> tuple[np.ndarray, np.ndarray]:
    """P**i and P**-i (mod 2**64) for i < size, kept between blocks."""
    if _POWERS[0].size < size:
        grow = max(size, 2 * _POWERS[0].size)
        for i, base in enumerate((_P_GRAM, _R_GRAM)):
            steps = np.full(grow, base, dtype=np.uint64)
            steps[0] = 1
            with np.errstate(over="ignore"):
                _POWERS[i] = np.multiply.accumulate(steps, dtype=np.uint64)
    return _POWERS[0], _POWERS[1]


def _rolling(th: np.ndarray, n: int) -> np.ndarray:
    """sum(th[j + k] * P**(n-1-k) for k < n) for every window start j, in O(1) passes.

    With T[i] = th[i] * P**-i and C its running sum, the window sum is
    (C[j+n] - C[j]) * P**(j+n-1): four array operations instead of 2n (numbers wrap mod 2**64).
    """
    m = th.size - n + 1
    pw, inv = _powers(th.size + 1)
    with np.errstate(over="ignore"):
        c = np.zeros(th.size + 1, dtype=np.uint64)
        np.cumsum(th * inv[:th.size], out=c[1:])
        return (c[n:] - c[:m]) * pw[n - 1:n - 1 + m]


def block_windows(norm: bytes, n: int) -> Windows:
    """Hash every n-gram of a normalised block (see the module notes)."""
    a = np.frombuffer(norm, dtype=np.uint8)
    if not a.size:
        e = np.empty(0, dtype=np.int64)
        return Windows(np.empty(0, dtype=np.uint64), np.empty(0, dtype=bool), e, e, e)
    # Normalised text has only two separators: space and newline. With a separator on either
    # side, the changes between word and separator alternate: token start, token end, ...
    word = np.zeros(a.size + 2, dtype=bool)
    np.not_equal(a, 0x20, out=word[1:-1])
    word[1:-1] &= a != 0x0A
    change = np.flatnonzero(word[1:] != word[:-1])
    starts, ends = change[0::2], change[1::2]
    del word, change
    line = np.searchsorted(np.flatnonzero(a == 0x0A), starts)
    th = _token_hashes(a, starts, ends - starts, norm)
    m = th.size - n + 1
    if m <= 0:
        empty = np.empty(0, dtype=np.uint64)
        return Windows(empty, np.empty(0, dtype=bool), starts, ends, line)
    return Windows(_rolling(th, n), line[:m] == line[n - 1:], starts, ends, line)


#: One test n-gram occurrence: (example index, token position, the n-gram's normalised bytes).
TestGram = tuple[int, int, bytes]


class TestTable:
    """The test n-grams, in the forms the scan looks them up in.

    Attributes:
        n: n-gram size.
        sorted_hashes: Unique test n-gram hashes, sorted (uint64).
        bitmap: 2**bits bits, set at the top ``bits`` bits of every test hash.
        bits: Bitmap size exponent.
        grams: Hash -> the test n-grams with that hash.
    """

    __test__ = False  # not a pytest class, despite the name

    def __init__(self, norm: bytes, n: int) -> None:
        self.n = n
        w = block_windows(norm, n)
        self.grams: dict[int, list[TestGram]] = {}
        for j in np.flatnonzero(w.valid).tolist():
            ex = int(w.line[j])
            pos = j - w.line_start_token(ex)
            self.grams.setdefault(int(w.hashes[j]), []).append((ex, pos, w.gram(norm, j, n)))
        self.sorted_hashes = np.array(sorted(self.grams), dtype=np.uint64)
        # About 32 bitmap bits per test n-gram: ~3% of training windows reach the binary search.
        self.bits = int(min(30, max(16, np.ceil(np.log2(max(1, self.sorted_hashes.size) * 32)))))
        self.bitmap = np.zeros(1 << (self.bits - 3), dtype=np.uint8)
        idx = self.sorted_hashes >> np.uint64(64 - self.bits)
        np.bitwise_or.at(self.bitmap, (idx >> np.uint64(3)).astype(np.int64),
                         (np.uint8(1) << (idx & np.uint64(7)).astype(np.uint8)))

    def __len__(self) -> int:
        return int(self.sorted_hashes.size)

    def candidates(self, w: Windows) -> np.ndarray:
        """Indices of windows whose hash is a test n-gram hash (tokens not yet compared)."""
        if not len(self) or not w.hashes.size:
            return np.empty(0, dtype=np.int64)
        idx = w.hashes >> np.uint64(64 - self.bits)
        bit = (self.bitmap[(idx >> np.uint64(3)).astype(np.int64)] >> (idx & np.uint64(7)).astype(np.uint8)) & 1
        js = np.flatnonzero(bit.astype(bool) & w.valid)
        if not js.size:
            return js
        hs = w.hashes[js]
        pos = np.minimum(np.searchsorted(self.sorted_hashes, hs), self.sorted_hashes.size - 1)
        return js[self.sorted_hashes[pos] == hs]

    def matches(self, norm: bytes, w: Windows) -> list[tuple[int, int, int, int, bytes]]:
        """Confirmed matches: (line, token position in that line, example, test position, n-gram)."""
        out: list[tuple[int, int, int, int, bytes]] = []
        for j in self.candidates(w).tolist():
            gram = w.gram(norm, j, self.n)
            line = int(w.line[j])
            for ex, pos, tgram in self.grams[int(w.hashes[j])]:
                if tgram == gram:
                    out.append((line, j - w.line_start_token(line), ex, pos, gram))
        return out
