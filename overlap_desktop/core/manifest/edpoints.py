"""Strict checks on Ed25519 public keys and signatures, before ``cryptography`` verifies them.

RFC 8032 leaves room that OpenSSL's verifier (and so ``cryptography``'s) does not close:
a public key of small order (the identity point, or one of the other seven points whose
multiple by 8 is the identity) verifies one signature for *any* message, so anyone can
"sign" in that key's name and its owner can disown every signature; a key or a signature
point with a torsion component verifies differently in different libraries; an encoding
with y >= p, or x = 0 with the sign bit set, names a point by a second spelling; a scalar
S >= L makes a second valid signature from a first. Published vectors ("Taming the many
EdDSAs", Chalkias, Garillot, Nikolaenko 2020; the ed25519-speccheck cases) show OpenSSL
accepting several of these.

So every key and every signature is checked here first: the encoding is canonical, the
point is on the curve, it is not the identity and it lies in the prime-order subgroup
(L times it is the identity, which also refuses all eight small-order points), and
S < L. This is a membership test on public values only (no secret is involved, so plain
Python integers are fine); verifying the signature itself stays with ``cryptography``.
"""

from __future__ import annotations

__all__ = ["SMALL_ORDER_ENCODINGS", "key_problem", "signature_problem"]

_P = 2**255 - 19
#: Order of the prime subgroup (RFC 8032, section 5.1).
_L = 2**252 + 27742317777372353535851937790883648493
_D = (-121665 * pow(121666, -1, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)

#: The canonical encodings of the eight points of order 1, 2, 4 and 8 (a quick first refusal
#: with a plain reason; the subgroup test below refuses them and their other spellings too).
SMALL_ORDER_ENCODINGS = frozenset(bytes.fromhex(h) for h in (
    "0100000000000000000000000000000000000000000000000000000000000000",  # identity (order 1)
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # (0, -1), order 2
    "0000000000000000000000000000000000000000000000000000000000000000",  # order 4
    "0000000000000000000000000000000000000000000000000000000000000080",  # order 4
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",  # order 8
))

_Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, xy = T/Z
_IDENTITY: _Point = (0, 1, 1, 0)


def _decode(enc: bytes) -> _Point | str:
    """The point ``enc`` names, or why it names none canonically."""
    if len(enc) != 32:
        return f"is {len(enc)} bytes, not 32"
    n = int.from_bytes(enc, "little")
    sign, y = n >> 255, n & ((1 << 255) - 1)
    if y >= _P:
        return "is not canonically encoded (its y coordinate is not below the field prime)"
    # x^2 = (y^2 - 1) / (d y^2 + 1); the square root as in RFC 8032, section 5.1.3.
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x = (u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P)) % _P
    if (v * x * x - u) % _P != 0:
        x = (x * _SQRT_M1) % _P
        if (v * x * x - u) % _P != 0:
            return "is not a point on the curve"
    if x == 0 and sign:
        return "is not canonically encoded (x is 0 but its sign bit is set)"
    if x & 1 != sign:
        x = _P - x
    return (x, y, 1, (x * y) % _P)


def _add(a: _Point, b: _Point) -> _Point:
    """Point addition in extended coordinates (RFC 8032, section 5.1.4; complete for a = -1)."""
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % _P
    bb = (y1 + x1) * (y2 + x2) % _P
    cc = 2 * t1 * t2 * _D % _P
    dd = 2 * z1 * z2 % _P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _times(k: int, pt: _Point) -> _Point:
    out = _IDENTITY
    while k:
        if k & 1:
            out = _add(out, pt)
        pt = _add(pt, pt)
        k >>= 1
    return out


def _is_identity(pt: _Point) -> bool:
    x, y, z, _ = pt
    return x % _P == 0 and (y - z) % _P == 0


def _point_problem(enc: bytes) -> str | None:
    if enc in SMALL_ORDER_ENCODINGS:
        return "is a point of small order (it would verify signatures over any content)"
    pt = _decode(enc)
    if isinstance(pt, str):
        return pt
    if _is_identity(pt) or not _is_identity(_times(_L, pt)):
        # Other spellings of small-order points land here, and so do points with a torsion part.
        return "is not a point of the prime-order group (small order, or a torsion component)"
    return None


def key_problem(public_key: bytes) -> str | None:
    """Why ``public_key`` (raw, 32 bytes) cannot be an honest Ed25519 key, or ``None``.

    Every key made by Ed25519 key generation passes; small-order points, points with a
    torsion component, non-canonical encodings and non-points are refused.
    """
    why = _point_problem(bytes(public_key))
    return None if why is None else f"the Ed25519 public key {why}"


def signature_problem(signature: bytes) -> str | None:
    """Why a 64-byte signature ``R || S`` is malformed (before it is verified), or ``None``.

    R must be a canonical point of the prime-order group, S below the group order L.
    """
    sig = bytes(signature)
    if len(sig) != 64:
        return f"the signature is {len(sig)} bytes, not 64"
    if int.from_bytes(sig[32:], "little") >= _L:
        return "the signature's scalar S is not below the group order (a malleated signature)"
    why = _point_problem(sig[:32])
    return None if why is None else f"the signature's point R {why}"
