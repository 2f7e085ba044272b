"""The audit's decode pass: one delivered item decoded the way indexing decodes it.

The item's readers, sampler, normalisation and hash are the index's own
(:func:`~overlap_desktop.core.index.fingerprinting.fingerprint_item`), so the fingerprints are
exactly what indexing the item would store: with the library's variants they can go into the
library as they are (``--add``), and their identity codes are what the quote must reproduce.
The SHA-256 of the item's bytes is computed on a helper thread while the frames decode
(hashlib releases the GIL), so the bytes check needs no second read of the file.

A *frame tap* (:class:`FrameTap`) sees every decoded frame once, in order, while it is
current: the query-side searches that need the delivered pixels ride on this one decode.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from overlap_desktop.core.index.fingerprinting import CheckpointCallback, describe_failure, fingerprint_item
from overlap_desktop.core.index.walk import changed_since, item_state, sha256_item
from overlap_desktop.core.types import (
    CancelCallback,
    StreamFingerprints,
    StreamInfo,
    TimedFrame,
    Variant,
    check_cancel,
)
from overlap_desktop.errors import Cancelled, MediaError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.ingest.readers.base import Reader
    from overlap_desktop.core.ingest.resume import StreamResume

__all__ = ["Decoded", "FrameTap", "decode_item"]


class FrameTap(Protocol):
    """Sees every decoded frame of the audit's single pass (see the module docstring).

    ``frame`` is called while the frame is current: take its pixels inside the call
    (``frame.to_rgb(w, h)``), never keep the frame itself.
    """

    def begin(self, name: str, path: Path, info: StreamInfo) -> None: ...

    def frame(self, frame: TimedFrame) -> None: ...

    def end(self) -> None: ...


@dataclass(slots=True)
class Decoded:
    """What decoding one delivered item gave.

    Attributes:
        path: The item.
        reader: The reader that read it (``""`` when none claims it).
        size, mtime_ns, stat_key: The item as it was before it was read.
        streams: ``(stream, fingerprints)`` per decoded stream (empty on failure).
        sha256: Digest of its bytes (``None`` when it was not hashed or could not be).
        error: Why it could not be decoded, in plain words (``None`` on success).
        warnings: Sentences for the user (skipped streams, damaged packets).
    """

    path: Path
    reader: str = ""
    size: int = 0
    mtime_ns: int = 0
    stat_key: str = ""
    streams: list[tuple[StreamInfo, StreamFingerprints]] = field(default_factory=list)
    sha256: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


class _TappedReader:
    """A reader whose frames also go through a :class:`FrameTap` (everything else is the reader's)."""

    def __init__(self, reader: Reader, tap: FrameTap, name: str) -> None:
        object.__setattr__(self, "_reader", reader)
        object.__setattr__(self, "_tap", tap)
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Any:
        return getattr(object.__getattribute__(self, "_reader"), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_reader"), attr, value)

    def frames(self, path: Path, stream: StreamInfo, **kwargs: Any) -> Iterator[TimedFrame]:
        tap: FrameTap = object.__getattribute__(self, "_tap")
        reader = object.__getattribute__(self, "_reader")
        tap.begin(object.__getattribute__(self, "_name"), path, stream)
        try:
            for f in reader.frames(path, stream, **kwargs):
                tap.frame(f)
                yield f
        finally:
            tap.end()


# Over 80 lines only because of its argument list and the hashing thread's hand-offs.
def decode_item(path: Path, *, config: Config, variants: Sequence[Variant] = (Variant(),), name: str = "",
                tap: FrameTap | None = None, hash_bytes: bool = True, exact: bool = False,
                on_fraction: Callable[[float], None] | None = None, cancel: CancelCallback | None = None,
                resume: tuple[str, StreamResume] | None = None,
                on_checkpoint: CheckpointCallback | None = None) -> Decoded:
    """Fingerprint one delivered item as indexing would, hashing its bytes on the side.

    Args:
        path: The delivered file or recording folder.
        config: Settings (``index.fps``, quality floor, reader options); pass a copy with another
            ``index.fps`` to sample on another grid.
        variants: Variants to hash (``(Variant(),)`` for the check alone; the library's to add it).
        name: The item's name in the quote (given to the tap).
        tap: Sees every decoded frame (see :class:`FrameTap`).
        hash_bytes: Also compute the SHA-256 of its bytes.
        exact: Decode every used frame exactly (a reader with decoding shortcuts, the video reader,
            leaves them out); readers without shortcuts decode as always.
        on_fraction: Receives the fraction of the item done.
        cancel: Polled between frames.
        resume: Saved progress inside the item to continue from, ``(stream key, progress)``.
        on_checkpoint: Receives progress to save while a long stream is read.

    Returns:
        A :class:`Decoded`; failures are reported in it, never raised.

    Raises:
        Cancelled: ``cancel()`` turned true.
    """
    from overlap_desktop.core.ingest.readers import reader_for

    out = Decoded(path=path)
    try:
        out.size, out.mtime_ns, out.stat_key = item_state(path)
        reader = reader_for(path)
    except OSError as exc:
        out.error = f"cannot be read ({exc.strerror or exc})"
        return out
    except MediaError as exc:
        out.error = exc.message
        return out
    out.reader = reader.name
    if exact and hasattr(reader, "exact"):
        reader = copy.copy(reader)  # the shared reader keeps its settings
        reader.exact = True
    stop = threading.Event()
    sha: list[str | None] = [None]
    sha_error: list[BaseException | None] = [None]

    def hash_it() -> None:
        try:
            sha[0] = sha256_item(path, stop)
        except OSError as exc:
            sha_error[0] = exc

    hasher = threading.Thread(target=hash_it, name="overlap-audit-sha256", daemon=True) if hash_bytes else None
    if hasher is not None:
        hasher.start()
    used: Any = reader if tap is None else _TappedReader(reader, tap, name or path.name)
    try:
        out.streams = fingerprint_item(path, used, config=config, variants=tuple(variants),
                                       on_fraction=on_fraction, cancel=cancel, warnings_out=out.warnings,
                                       resume=resume, on_checkpoint=on_checkpoint)
    except (Cancelled, KeyboardInterrupt):
        stop.set()
        if hasher is not None:
            hasher.join()
        raise
    except Exception as exc:
        out.error = describe_failure(exc)  # a decoder surprise is a bad file, not a crash
    if hasher is not None:
        hasher.join()
        check_cancel(cancel)  # a stopped hash is partial: never use it
        if sha_error[0] is not None:
            out.warnings.append(f"{path}: cannot read its bytes ({describe_failure(sha_error[0])})")
        else:
            out.sha256 = sha[0]
    changed = changed_since(path, out.size, out.mtime_ns, out.stat_key)
    if changed is not None:
        # Fingerprints and digest would describe a mix of old and new bytes.
        out.streams, out.sha256, out.error = [], None, changed.replace("being indexed", "being audited")
    return out
