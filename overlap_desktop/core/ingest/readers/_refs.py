"""Whether a compressed H.264 / H.265 picture is a reference picture, read from its packet.

FFmpeg's ``skip_frame = NONREF`` drops exactly the pictures that no other picture is
predicted from: H.264 slices with ``nal_ref_idc == 0`` and H.265 sub-layer
non-reference NAL types (even types up to ``RSV_VCL_N14``). Reading the same field
from the packet before it is decoded tells the video reader which pictures the decoder
*will* drop, so it can decide, before decoding, whether a sampled picture may be taken
from its already decoded neighbour instead (see ``readers/video.py``).

Packets are either length-prefixed (MP4, MOV, Matroska: ``avcC`` / ``hvcC`` extradata,
whose first byte is 1, states the length size) or Annex B (MPEG-TS, raw streams: no
such extradata, ``00 00 01`` start codes).
Only the first few hundred bytes are looked at: the first slice NAL unit follows at
most a few parameter-set and SEI units.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ref_reader_for"]

#: Bytes of a packet scanned for its first slice NAL unit.
_SCAN = 512


def _nal_headers(data: bytes, length_size: int) -> list[int]:
    """Offsets of the NAL unit headers found in the first bytes of a packet.

    ``length_size`` 0 means Annex B start codes. The format must come from the extradata:
    a 4-byte length such as ``00 00 01 88`` looks like a start code.
    """
    out: list[int] = []
    if length_size == 0:  # Annex B
        i = data.find(b"\x00\x00\x01")
        while i >= 0 and i + 3 < len(data):
            out.append(i + 3)
            i = data.find(b"\x00\x00\x01", i + 3)
        return out
    i = 0
    while i + length_size < len(data):
        size = int.from_bytes(data[i:i + length_size], "big")
        if size <= 0:
            break
        out.append(i + length_size)
        i += length_size + size
    return out


def _h264_is_ref(data: bytes, length_size: int) -> bool | None:
    for off in _nal_headers(data, length_size):
        h = data[off]
        if h & 0x1F in (1, 5):  # coded slice of a non-IDR / IDR picture
            return bool(h & 0x60)  # nal_ref_idc != 0
    return None


def _hevc_is_ref(data: bytes, length_size: int) -> bool | None:
    for off in _nal_headers(data, length_size):
        t = (data[off] >> 1) & 0x3F
        if t < 32:  # a VCL (slice) NAL unit
            return not (t <= 14 and t % 2 == 0)  # FFmpeg's ff_hevc_nal_is_nonref
    return None


def ref_reader_for(codec: str | None, extradata: bytes | None) -> Callable[[Any], bool | None] | None:
    """A function telling whether a packet of ``codec`` holds a reference picture.

    Args:
        codec: FFmpeg's decoder name (``ctx.name``).
        extradata: The codec context's extradata (``avcC`` / ``hvcC`` or ``None``).

    Returns:
        ``None`` for codecs it cannot read (VP9, AV1, MPEG-4...): their pictures are
        never taken from a neighbour. Otherwise a function of a packet returning
        ``True`` (reference), ``False`` (FFmpeg's NONREF would drop it) or ``None``
        (not found in the first bytes).
    """
    ext = bytes(extradata or b"")
    if codec == "h264":
        parse = _h264_is_ref
        length_size = (ext[4] & 3) + 1 if len(ext) > 4 and ext[0] == 1 else 0
    elif codec == "hevc":
        parse = _hevc_is_ref
        length_size = (ext[21] & 3) + 1 if len(ext) > 21 and ext[0] == 1 else 0
    else:
        return None

    def is_ref(packet: Any) -> bool | None:
        data = bytes(memoryview(packet)[:_SCAN])
        if len(data) < 2:
            return None
        try:
            return parse(data, length_size)
        except IndexError:  # a truncated NAL unit in the scanned bytes
            return None

    return is_ref
