"""The video-file reader (PyAV / FFmpeg): mp4, mkv, avi, mov, webm and friends.

Decodes H.264, H.265, VP8/VP9, AV1, MPEG-4 and whatever else the bundled FFmpeg
knows, with frame threading. Times are presentation timestamps
(``pts * time_base``) in nanoseconds from the stream's first frame, never a frame
count, so variable-frame-rate files sample correctly.

Stream choice: a file lists at most one fingerprintable stream, the "main" picture.
Cover art (attached pictures) is skipped; among real video streams the largest
picture wins, then the default-disposition one, then the longest, then the first.
The other video streams are named in ``StreamInfo.extra["other_video_streams"]``.

Rotation: phones store portrait video as landscape plus a display matrix. The
reader applies it (``frame.rotation`` in PyAV >= 14), so a rotated file and an
upright re-encode of it give the same pixels; ``StreamInfo.rotation`` says how
many degrees counter-clockwise were applied and width/height are the display size.

Damage policy (documented in docs/architecture.md): a file that cannot be opened,
has no video, an unsupported codec, an absurd frame size or no decodable frame is
refused with a :class:`MediaError`. Corruption in the middle of a stream is
tolerated: undecodable packets are skipped (FFmpeg conceals what it can), a
truncated tail ends the stream at the last good frame, and the number of skipped
packets is recorded in ``StreamInfo.extra["decode_errors"]``. A stream where more
than half of the packets fail is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.ingest.frames import noting_gaps, packed_view, scale_options, scaler_gives_luma
from overlap_desktop.core.ingest.readers._refs import ref_reader_for
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.core.ingest.readers.packet_feed import PacketFeed, ns_of
from overlap_desktop.core.ingest.readers.tiles import base_key, grid_seams, tile_frames, tile_of, tile_streams
from overlap_desktop.core.types import CancelCallback, StreamInfo, TimedFrame, check_cancel
from overlap_desktop.errors import MediaError

__all__ = ["VIDEO_EXTENSIONS", "VideoReader"]

log = logging.getLogger(__name__)

VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mkv", ".avi", ".mov", ".webm", ".ts", ".mts", ".m2ts",
                    ".mpg", ".mpeg", ".wmv", ".flv", ".3gp", ".ogv")

_NS = 1_000_000_000
#: Codecs whose every packet is a still image stating its own size (checked before decoding).
_STILL_CODECS = ("mjpeg", "jpegls", "mjpegb")
#: Decoders told to skip their in-loop deblocking filter when indexing (``skip_loop_filter``),
#: unless the reader is ``exact``. Deblocking is a fifth to a third of H.264/H.265 decoding;
#: the block edges it would smooth are far finer than the 64x64 picture PDQ hashes, and the
#: error it leaves (drifting a little until the next keyframe) costs a few bits per code
#: (measured on every real file: bench/RESULTS.md, bench/bench_ingest.py exact). Other decoders
#: (VP9, AV1 through dav1d, MPEG-4) ignore the option or were not measured, so are left alone.
FAST_DECODE_CODECS = ("h264", "hevc")
#: Decoders whose sampled frames the indexing reader hands to the fingerprint as luma made by
#: swscale (``gray``, full range), unless ``exact``: the RGB conversion and PDQ's weighting of
#: it were over a third of the per-sample cost at 426x240. The two lumas differ by a level or
#: two (saturated colours clip in RGB; rounding), a few bits per code, measured like the loop
#: filter (bench/RESULTS.md). Limited to the codecs already approximated, so the others stay exact.
LUMA_CODECS = FAST_DECODE_CODECS


def _describe_open_failure(path: Path, exc: Exception) -> str:
    """A plain reason for a file FFmpeg refused to open, guessed from its first bytes."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        head = b""
    text = str(exc)
    if head[4:8] in (b"ftyp", b"mdat", b"moov", b"free", b"wide", b"skip"):
        return "truncated or unfinished MP4/MOV: no moov atom (the index) was found"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "corrupt or truncated Matroska/WebM file"
    if head[:4] == b"RIFF":
        return "corrupt or truncated AVI file"
    if "Invalid data" in text:
        return "not a video file FFmpeg can read (unrecognised or corrupt data)"
    return f"cannot open: {text}"


def _grid_picture(frame: Any) -> bool:
    """:func:`~overlap_desktop.core.ingest.readers.tiles.grid_seams` of a decoded frame; a picture
    that cannot be turned into grey levels is simply not a grid (decoding reports it later)."""
    try:
        return grid_seams(frame.to_ndarray(format="gray"))
    except Exception:  # any conversion failure of an odd pixel format: not a grid
        return False


class _AvFrame:
    """A decoded PyAV frame with its time; pixels are made only on request."""

    __slots__ = ("_frame", "_quarter_turns", "_scaler", "t_ns")

    def __init__(self, frame: Any, t_ns: int, quarter_turns: int, scaler: Any = None) -> None:
        self._frame = frame
        self.t_ns = t_ns
        self._quarter_turns = quarter_turns
        self._scaler = scaler

    def _display(self, width: int, height: int, fmt: str, channels: int, **extra: Any) -> np.ndarray:
        """``uint8 (height, width, channels)`` in display orientation, scaled by swscale to ``fmt``.

        A view of the scaled frame's buffer, no copy (see :func:`~overlap_desktop.core.ingest.frames.packed_view`).
        """
        q = self._quarter_turns
        # A turned picture is scaled (stored orientation) to the transposed size, then turned.
        w, h = (height, width) if q % 2 else (width, height)
        options = dict(width=w, height=h, format=fmt, **extra, **scale_options())
        # One reformatter per stream keeps its swscale context: building an area filter for
        # every frame cost ~1 ms, more than the scaling itself. The pixels are the same.
        out = self._scaler.reformat(self._frame, **options) if self._scaler is not None else \
            self._frame.reformat(**options)
        arr = packed_view(out, w, h, channels)
        if q:
            arr = np.ascontiguousarray(np.rot90(arr, q))
        return arr

    def to_rgb(self, width: int, height: int) -> np.ndarray:
        """``uint8 (height, width, 3)`` in display orientation, scaled by swscale."""
        return self._display(width, height, "rgb24", 3)


class _AvLumaFrame(_AvFrame):
    """A frame that also hands out luma from the scaler (:class:`~overlap_desktop.core.types.LumaFrame`)."""

    __slots__ = ()

    def to_luma(self, width: int, height: int) -> np.ndarray:
        """Full-range luma ``uint8 (height, width)`` in display orientation, scaled by swscale."""
        return self._display(width, height, "gray", 1, dst_color_range="JPEG")[:, :, 0]


#: Seconds before a resume point the reader seeks to (then the keyframe at or before that): a margin
#: for demuxers that seek by decoding time, whose keyframe may otherwise show after the point.
RESUME_LEAD_S = 2.0


class VideoReader:
    """Reader for ordinary video files through PyAV.

    With a sampling rate (``sample_fps``, set by ``overlap index`` through
    :meth:`configure`) the reader decodes for the sampler, not for the eye: frames no
    grid point uses are skipped where the codec allows, and, unless ``exact``, H.264 and
    H.265 are decoded without their loop filter (:data:`FAST_DECODE_CODECS`), a used
    non-reference frame may be replaced by its decoded neighbour up to
    :data:`~overlap_desktop.core.ingest.decode_plan.NEIGHBOUR_MAX_S` earlier, and frames
    hand out their luma from the scaler (:data:`LUMA_CODECS`, ``to_luma``). Each costs a
    few bits of PDQ distance against an exact decode (bounded by the tests, measured in
    bench/RESULTS.md). Without a sampling rate every frame is decoded exactly and gives RGB
    only (previews, tools, anything that shows frames).

    Args:
        limits: Size caps checked before decoding (default :class:`ReaderLimits`).
        threads: Decoder threads; 0 lets FFmpeg choose.
        sample_fps: The sampler's grid rate, ``None`` to decode every frame.
        exact: With a sampling rate, still decode every used frame bit-exactly
            (only frames no grid point uses are skipped).
    """

    name = "video"
    #: :meth:`frames` can start inside the stream (``start_ns``), so an interrupted file resumes.
    resumable = True
    description = "Video files (mp4, mkv, avi, mov, webm...) decoded with FFmpeg via PyAV"
    extensions = VIDEO_EXTENSIONS

    def __init__(self, limits: ReaderLimits | None = None, *, threads: int = 0,
                 sample_fps: float | None = None, exact: bool = False) -> None:
        self.limits = limits or ReaderLimits()
        self.threads = threads
        self.sample_fps = sample_fps
        self.exact = exact

    def configure(self, config: Any) -> None:
        """Take ``index.threads`` (decoder threads, 0 = automatic) and ``index.fps`` from ``config``.

        With the sampling rate known, frames the sampler will not use are not decoded
        where the codec allows it (:mod:`~overlap_desktop.core.ingest.decode_plan`).
        """
        self.threads = int(config["index.threads"])
        try:
            self.sample_fps = float(config["index.fps"])
        except KeyError:
            self.sample_fps = None

    # ------------------------------------------------------------------ discovery

    def can_open(self, path: Path) -> bool:
        """True for a regular file with a video suffix."""
        p = Path(path)
        return p.suffix.lower() in self.extensions and p.is_file()

    def _open(self, path: Path) -> Any:
        import av

        p = Path(path)
        try:
            size = p.stat().st_size
        except FileNotFoundError:
            raise MediaError("file not found", path=p) from None
        except OSError as exc:
            raise MediaError(f"cannot read: {exc.strerror}", path=p) from exc
        if not p.is_file():
            raise MediaError("not a regular file", path=p)
        if size == 0:
            raise MediaError("empty file (0 bytes)", path=p)
        try:
            return av.open(str(p), mode="r")
        except av.error.FFmpegError as exc:
            raise MediaError(_describe_open_failure(p, exc), path=p, detail=str(exc)) from exc
        except OSError as exc:
            raise MediaError(f"cannot read: {exc.strerror or exc}", path=p) from exc

    @staticmethod
    def _video_streams(container: Any) -> list[Any]:
        from av.stream import Disposition

        out = []
        for s in container.streams.video:
            if s.disposition & Disposition.attached_pic:  # cover art, not footage
                continue
            out.append(s)
        return out

    @staticmethod
    def _duration_s(container: Any, stream: Any) -> float | None:
        if stream.duration is not None and stream.time_base is not None:
            return float(stream.duration * stream.time_base)
        if container.duration is not None:
            return container.duration / 1_000_000
        return None

    def _choose(self, container: Any, streams: list[Any]) -> Any:
        from av.stream import Disposition

        def score(s: Any) -> tuple[Any, ...]:
            ctx = s.codec_context  # None for a codec FFmpeg does not know
            px = (ctx.width or 0) * (ctx.height or 0) if ctx is not None else 0
            default = bool(s.disposition & Disposition.default)
            dur = self._duration_s(container, s) or 0.0
            return (px, default, dur, -s.index)

        return max(streams, key=score)

    def _cap_decoder(self, stream: Any, *, fast: bool = False) -> None:
        """Make FFmpeg itself refuse pictures over the pixel cap, on every frame.

        ``max_pixels`` is checked by FFmpeg whenever a frame's size is set, before the
        picture is allocated, so a stream that switches mid-way from 64x48 to 16000x16000
        fails that packet instead of allocating hundreds of megabytes. With ``fast``, a
        decoder in :data:`FAST_DECODE_CODECS` also skips its loop filter.
        """
        ctx = stream.codec_context
        if ctx is not None:
            opts = dict(ctx.options or {})
            opts["max_pixels"] = str(int(self.limits.max_pixels))
            if fast and ctx.name in FAST_DECODE_CODECS:
                opts["skip_loop_filter"] = "all"
            ctx.options = opts

    @property
    def _approximate(self) -> bool:
        """Decoding for a sampler that accepts the bounded approximations (see the class)."""
        return bool(self.sample_fps) and not self.exact

    def _check_frame_size(self, path: Path, w: int, h: int, t_s: float) -> None:
        lim = self.limits
        if w <= 0 or h <= 0 or w > lim.max_dimension or h > lim.max_dimension or w * h > lim.max_pixels:
            raise MediaError(f"absurd frame size {w}x{h} at {t_s:.3f} s: the picture size changed mid-stream "
                             f"(limit {lim.max_dimension} px per side, {lim.max_pixels} pixels)", path=path)

    def _check_still_packet(self, path: Path, packet: Any, t_s: float) -> None:
        """Read the size a still-image packet (MJPEG) declares and refuse it over the caps."""
        from overlap_desktop.core.ingest.readers._decoders import ImageError, compressed_size

        try:
            size = compressed_size(bytes(packet), "jpeg")
        except ImageError:
            return  # not parseable: the decoder (with max_pixels) decides
        if size is not None:
            self._check_frame_size(path, size[0], size[1], t_s)

    def _check_stream(self, path: Path, stream: Any) -> None:
        ctx = stream.codec_context
        name = ctx.name if ctx is not None else None
        if ctx is None or ctx.codec is None or not getattr(ctx.codec, "is_decoder", True):
            raise MediaError(f"unsupported video codec {name or 'unknown'!r}: FFmpeg has no decoder for it",
                             path=path)
        w, h = ctx.width or 0, ctx.height or 0
        lim = self.limits
        if w <= 0 or h <= 0:
            raise MediaError(f"video stream has no frame size ({w}x{h})", path=path)
        if w > lim.max_dimension or h > lim.max_dimension or w * h > lim.max_pixels:
            raise MediaError(f"absurd frame size {w}x{h} (limit {lim.max_dimension} px per side, "
                             f"{lim.max_pixels} pixels)", path=path)

    def streams(self, path: Path) -> list[StreamInfo]:
        """Describe the main video stream of ``path`` (decodes its first frame).

        Raises:
            MediaError: unreadable file, no video stream, unsupported codec, absurd
                frame size, or no decodable frame.
        """
        import av

        p = Path(path)
        container = self._open(p)
        try:
            candidates = self._video_streams(container)
            if not candidates:
                kinds = sorted({s.type for s in container.streams})
                what = f" (it has {', '.join(kinds)})" if kinds else ""
                raise MediaError(f"no video stream{what}", path=p)
            stream = self._choose(container, candidates)
            self._check_stream(p, stream)
            self._cap_decoder(stream)
            rotation, first_ok, grid = 0, False, False
            try:
                for frame in container.decode(stream):
                    self._check_frame_size(p, frame.width, frame.height, 0.0)
                    rotation = int(round(getattr(frame, "rotation", 0) or 0)) % 360
                    first_ok = True
                    # A 2x2 preview grid is told by its seams in the first picture (readers/tiles.py).
                    grid = rotation == 0 and _grid_picture(frame)
                    break
            except av.error.FFmpegError as exc:
                raise MediaError(f"cannot decode the video: {exc}", path=p, detail=str(exc)) from exc
            if not first_ok:
                raise MediaError("no decodable video frame (truncated or corrupt)", path=p)
            rotation = (round(rotation / 90) * 90) % 360
            ctx = stream.codec_context
            w, h = ctx.width, ctx.height
            if rotation in (90, 270):
                w, h = h, w
            rate = stream.average_rate or stream.guessed_rate
            key_no = [s.index for s in container.streams.video].index(stream.index)
            others = [f"v:{i}" for i, s in enumerate(container.streams.video) if s is not stream
                      and s in candidates]
            whole = StreamInfo(
                key=f"v:{key_no}",
                width=int(w),
                height=int(h),
                duration_s=self._duration_s(container, stream),
                codec=ctx.name,
                rate_hint=float(rate) if rate else None,
                rotation=rotation,
                extra={"stream_index": stream.index, "other_video_streams": others,
                       "pix_fmt": ctx.pix_fmt, "decode_errors": 0},
            )
            # A preview of cameras side by side: each tile is a stream too (readers/tiles.py).
            return [whole, *tile_streams(whole, grid=grid)]
        finally:
            container.close()

    # ------------------------------------------------------------------ decoding

    def frames(self, path: Path, stream: StreamInfo, *, cancel: CancelCallback | None = None,
               start_ns: int = 0) -> Iterator[TimedFrame]:
        """Yield every decoded frame of ``stream`` in presentation order.

        Every frame's size is checked against the caps (a stream may change size
        mid-way); gaps in the frame times longer than ``MAX_HOLD_S`` are noted in
        ``stream.extra["timing_gaps"]`` and logged.

        ``start_ns`` > 0 continues an interrupted read (:mod:`~overlap_desktop.core.ingest.resume`):
        the file is sought to a keyframe at least :data:`RESUME_LEAD_S` before that time, decoded
        forward, and only frames from ``start_ns`` on are yielded, with the same times (from the
        stream's first frame) as a read from the start.

        Raises:
            MediaError: the stream is gone, too damaged to use, or a frame is over the caps.
            Cancelled: when ``cancel()`` turns true.
        """
        if tile_of(stream.key) is not None and isinstance(stream.extra.get("whole"), list):
            whole = StreamInfo(key=base_key(stream.key), width=int(stream.extra["whole"][0]),
                               height=int(stream.extra["whole"][1]), duration_s=stream.duration_s,
                               rotation=stream.rotation, extra={})
            return tile_frames(self.frames(path, whole, cancel=cancel, start_ns=start_ns), stream)
        origin: int | None = None
        if start_ns > 0:
            first: list[int] = []
            probe = self._frames(path, stream, cancel=cancel, origin=first)
            next(probe, None)  # decodes one frame: the stream's first time, for the seek
            probe.close()
            origin = first[0] if first else None
        return noting_gaps(self._frames(path, stream, cancel=cancel, origin=origin, start_ns=start_ns),
                           extra=stream.extra, path=path)

    def _seek(self, container: Any, st: Any, tb: Fraction, t_ns: int) -> None:
        """Seek ``st`` to the keyframe at or before ``t_ns`` (absolute, ns) less :data:`RESUME_LEAD_S`."""
        target = max(0, t_ns - int(RESUME_LEAD_S * _NS))
        container.seek(target * tb.denominator // (tb.numerator * _NS), stream=st, backward=True, any_frame=False)

    def _frames(self, path: Path, stream: StreamInfo, *, cancel: CancelCallback | None = None,
                origin: int | list[int] | None = None, start_ns: int = 0) -> Generator[_AvFrame, None, None]:
        """The frames; ``origin``: a list receives the first frame's absolute time; an int is that time,
        already known, for a read from ``start_ns`` (a resume)."""
        import av
        from av.video.reformatter import VideoReformatter

        p = Path(path)
        container = self._open(p)
        try:
            try:
                key_no = int(stream.key.split(":", 1)[1])
                st = container.streams.video[key_no]
            except (ValueError, IndexError):
                raise MediaError(f"video stream {stream.key!r} not found", path=p) from None
            self._check_stream(p, st)
            self._cap_decoder(st, fast=self._approximate)
            still = (st.codec_context.name or "") in _STILL_CODECS
            st.thread_type = "AUTO"
            if self.threads:
                st.codec_context.thread_count = self.threads
            quarter_turns = (stream.rotation // 90) % 4
            tb = st.time_base or Fraction(1, 90000)
            nominal = (1 / float(stream.rate_hint)) if stream.rate_hint else 1 / 30
            t0: int | None = origin if isinstance(origin, int) else None
            if t0 is not None:
                self._seek(container, st, tb, t0 + start_ns)
            last_t = None
            packets = errors = produced = 0
            failure: str | None = None
            ctx = st.codec_context
            ref_of = ref_reader_for(ctx.name, ctx.extradata) if self._approximate else None
            feed = PacketFeed(container.demux(st), ctx, tb, self.sample_fps, ref_of)
            scaler = VideoReformatter()
            luma = self._approximate and ctx.name in LUMA_CODECS and scaler_gives_luma()
            frame_type = _AvLumaFrame if luma else _AvFrame
            while True:
                check_cancel(cancel)
                packet = feed.next(t0)
                if packet is None:
                    if feed.failure is not None:
                        # A broken tail (truncated download): keep what decoded so far.
                        failure = feed.failure
                        errors += 1
                    break
                packets += 1
                if still and packet.size:
                    pt = packet.pts if packet.pts is not None else packet.dts
                    self._check_still_packet(p, packet, float(pt * tb) - (t0 or 0) / _NS if pt is not None else 0.0)
                if feed.drop:
                    continue  # an intra-only stream: an unused picture is simply not decoded
                try:
                    decoded = packet.decode()
                except av.error.FFmpegError as exc:
                    errors += 1
                    log.debug("%s: skipped undecodable packet: %s", p, exc)
                    continue
                for frame in decoded:
                    pts = frame.pts if frame.pts is not None else frame.dts
                    ftb = frame.time_base or tb
                    if pts is not None:
                        t = ns_of(pts, ftb.numerator * _NS, ftb.denominator)
                    elif last_t is not None:
                        t = last_t + int(round(nominal * _NS))
                    else:
                        t = 0
                    if t0 is None:
                        t0 = t
                        if isinstance(origin, list):
                            origin.append(t)
                    self._check_frame_size(p, frame.width, frame.height, (t - t0) / _NS)
                    last_t = t
                    produced += 1
                    if t - t0 < start_ns:
                        continue  # decoded from the keyframe before the resume point, not handed out
                    yield frame_type(frame, t - t0, quarter_turns, scaler)
                    check_cancel(cancel)
            stream.extra["decode_errors"] = errors
            stream.extra["skippable_frames"] = feed.skipped
            stream.extra["neighbour_frames"] = feed.neighbours
            if produced == 0:
                why = f": {failure}" if failure else ""
                raise MediaError(f"no decodable video frame (truncated or corrupt){why}", path=p)
            if errors and errors * 2 > max(packets, 1):
                raise MediaError(f"too damaged: {errors} of {packets} video packets failed to decode",
                                 path=p)
            if errors:
                log.warning("%s: %d undecodable video packet(s) skipped", p, errors)
        finally:
            container.close()
