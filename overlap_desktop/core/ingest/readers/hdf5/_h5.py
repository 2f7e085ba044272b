"""HDF5 plumbing shared by the ALOHA and robomimic readers: safe opening, links that leave
the file, and chunk-by-chunk reads whose decompression is bounded.

h5py is imported only here and in the readers of this package (``robotdata`` extra).

What is refused before anything is read:

* external links (a group member pointing into another file), virtual datasets (frames
  mapped from other files) and external storage (raw data kept in other files): a
  dataset must hold its own frames;
* filters other than deflate (gzip), shuffle, fletcher32 and LZF;
* chunks whose stored size is over the per-chunk cap, and deflated chunks that do not
  expand to exactly their declared size: each deflated chunk is first inflated here in
  bounded steps (:class:`~overlap_desktop.core.ingest.readers._bounded.Budget`), since the
  HDF5 library grows its buffer for as long as the data expands. The total expansion of
  a file is capped like a recording's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from overlap_desktop.core.fsutil import is_regular_file
from overlap_desktop.core.ingest.readers._bounded import Budget, CorruptData
from overlap_desktop.core.ingest.readers.arraydata import FrameLayout, read_plan, require
from overlap_desktop.core.ingest.readers.base import ReaderLimits
from overlap_desktop.errors import MediaError

__all__ = ["HDF5_SIGNATURE", "SUFFIXES", "check_dataset", "dataset_frames", "is_hdf5", "member", "open_h5", "probe"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
SUFFIXES = (".hdf5", ".h5", ".he5")
#: HDF5 filter ids: deflate, shuffle, fletcher32, LZF (h5py's own).
_DEFLATE, _SHUFFLE, _FLETCHER, _LZF = 1, 2, 3, 32000
_FILTER_NAMES = {4: "szip", 5: "nbit", 6: "scale-offset", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle",
                 32015: "zstd"}
#: LZF expands at most ~90 times (a 3-byte back-reference copies up to 264 bytes).
_LZF_MAX_RATIO = 100


def is_hdf5(path: Path) -> bool:
    """True for a regular file starting with the HDF5 signature (user blocks aside)."""
    if not is_regular_file(path):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(8) == HDF5_SIGNATURE
    except OSError:
        return False


def probe(path: Path, test: Callable[[Any], bool]) -> bool:
    """A reader's ``can_open``: an HDF5 file (by suffix and signature) for which ``test(file)``
    holds. Claimed when h5py is missing, so the user is told to install the extra, and when HDF5
    cannot open it, so it is reported as a damaged HDF5 file."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES or not is_hdf5(path):
        return False
    try:
        import h5py
    except ImportError:
        return True
    try:
        f = h5py.File(path, "r", locking=False)
    except (OSError, ValueError):
        # An HDF5 file by name and signature that HDF5 cannot open is damaged (truncated): claimed,
        # so opening it says so and the file is listed as failed, never silently left out.
        return True
    try:
        with f:
            return bool(test(f))
    except (OSError, ValueError, KeyError):
        return False


def open_h5(path: Path) -> Any:
    """Open ``path`` read-only with h5py.

    Raises:
        MediaError: h5py is missing, or the file is not a readable HDF5 file.
    """
    h5py = require("h5py", what="HDF5 robot datasets", path=path)
    if not is_regular_file(path):
        raise MediaError("not a regular file", path=path)
    try:
        return h5py.File(os.fspath(path), "r", locking=False)
    except (OSError, ValueError) as exc:
        raise MediaError(f"damaged HDF5 file: HDF5 cannot open it (truncated or corrupt?): {exc}; copy it again "
                         "from its source", path=path) from exc


#: Soft links followed in one lookup before it is refused (a chain or a loop of links).
_MAX_LINK_HOPS = 16


def member(group: Any, name: str, path: Path) -> Any:
    """``group[name]``, resolving every link on the way and refusing any that leaves the file.

    ``name`` may be a path (``"observations/images"``, or absolute from the file's root).
    Each part is looked up as a link: a soft link is followed by resolving its target the
    same way (so a soft link to an external link, or to a group reached through one, is
    caught), at most :data:`_MAX_LINK_HOPS` of them; an external link anywhere in the chain
    is refused.

    Raises:
        MediaError: an external link in the chain, too many soft links, or an unreadable object;
            KeyError: absent.
    """
    return _resolve(group, name, path, [0])


def _resolve(group: Any, name: str, path: Path, hops: list[int]) -> Any:
    import h5py

    cur = group.file["/"] if name.startswith("/") else group
    for part in (p for p in name.split("/") if p and p != "."):
        where = f"{cur.name.rstrip('/')}/{part}"
        link = cur.get(part, getlink=True)
        if link is None:
            raise KeyError(name)
        if isinstance(link, h5py.ExternalLink):
            raise MediaError(f"{where} is an external link to {link.filename!r}; links into other files are not "
                             "followed (copy the data into this file)", path=path)
        if isinstance(link, h5py.SoftLink):
            hops[0] += 1
            if hops[0] > _MAX_LINK_HOPS:
                raise MediaError(f"{where}: more than {_MAX_LINK_HOPS} soft links in a row (a loop?)", path=path)
            try:
                cur = _resolve(cur, str(link.path), path, hops)  # relative targets start at the link's group
            except KeyError:
                raise MediaError(f"{where} is a soft link to {link.path!r}, which does not exist", path=path) from None
            continue
        try:
            cur = cur[part]
        except (KeyError, OSError, ValueError) as exc:  # a damaged object header
            raise MediaError(f"{where} cannot be read: {exc}", path=path) from exc
        if not isinstance(cur, (h5py.Group, h5py.Dataset)):
            raise MediaError(f"{where} is neither a group nor a dataset", path=path)
    return cur


def check_dataset(dset: Any, path: Path) -> None:
    """Refuse a dataset whose data lives outside the file or that needs an unsupported filter.

    Raises:
        MediaError: virtual, external storage, or an unsupported filter.
    """
    where = dset.name
    if dset.is_virtual:
        raise MediaError(f"{where} is a virtual dataset (its frames are mapped from other files); only datasets "
                         "holding their own frames are read", path=path)
    if dset.external:
        raise MediaError(f"{where} keeps its data in external files ({dset.external[0][0]!r}...); only datasets "
                         "holding their own frames are read", path=path)
    for code in _filters(dset):
        if code not in (_DEFLATE, _SHUFFLE, _FLETCHER, _LZF):
            name = _FILTER_NAMES.get(code, f"filter {code}")
            raise MediaError(f"{where} is compressed with {name}, which is not supported (supported: gzip, lzf or "
                             "none); re-save it with h5py's compression='gzip'", path=path)


def _check_stored(dset: Any, path: Path) -> None:
    """Refuse a dataset that declares more frames than it stores.

    Frames that were declared but never written cost the library nothing to declare (a 19 KB
    file can declare 100 million) but would cost the reader time for each: unwritten data
    is not footage. The check costs one call whatever the size: HDF5 counts the stored chunks
    (or the bytes of contiguous storage) without reading them.
    """
    if dset.ndim == 0 or dset.shape[0] == 0:
        return
    frames = int(dset.shape[0])
    if dset.chunks is None:
        row_bytes = int(np.prod(dset.shape[1:], dtype=np.int64)) * dset.dtype.itemsize
        stored = int(dset.id.get_storage_size()) // row_bytes if row_bytes else frames
    else:
        step = int(dset.chunks[0])
        per_row = int(np.prod([-(-int(s) // int(c)) for s, c in zip(dset.shape[1:], dset.chunks[1:])],
                              dtype=np.int64))
        stored = int(dset.id.get_num_chunks()) // max(per_row, 1) * step
    if stored < frames:
        raise MediaError(f"{dset.name} declares {frames:,} frames but stores data for only {min(stored, frames):,}; "
                         "frames that were never written are not footage, so it is refused (a writer that stopped "
                         "early? re-save the file with only the frames it holds)", path=path)


def _filters(dset: Any) -> list[int]:
    plist = dset.id.get_create_plist()
    return [int(plist.get_filter(i)[0]) for i in range(plist.get_nfilters())]


def _chunk_rows(dset: Any) -> dict[int, list[Any]]:
    """Stored chunks (h5py ``StoreInfo``) grouped by their row along the time axis."""
    rows: dict[int, list[Any]] = {}
    step = int(dset.chunks[0])

    def add(info: Any) -> None:
        rows.setdefault(int(info.chunk_offset[0]) // step, []).append(info)

    if hasattr(dset.id, "chunk_iter"):
        dset.id.chunk_iter(add)
    else:  # pragma: no cover - HDF5 older than 1.12.3
        for i in range(dset.id.get_num_chunks()):
            add(dset.id.get_chunk_info(i))
    return rows


def _check_chunks(dset: Any, infos: list[Any], filters: list[int], budget: Budget, path: Path) -> None:
    """Bound every stored chunk of one row before the HDF5 library decodes it."""
    decoded = int(np.prod(dset.chunks)) * dset.dtype.itemsize
    budget.check_declared(decoded, f"a chunk of {dset.name}")
    for info in infos:
        where = f"the chunk of {dset.name} at {tuple(int(x) for x in info.chunk_offset)}"
        size = int(info.size)
        used = [f for i, f in enumerate(filters) if not (int(info.filter_mask) >> i) & 1]
        if size > budget.chunk_cap:
            raise MediaError(f"{where} is stored in {size} bytes, over the limit of {budget.chunk_cap}", path=path)
        if _LZF in used and size * _LZF_MAX_RATIO > budget.chunk_cap:
            raise MediaError(f"{where} is {size} bytes of LZF data, which could expand past the per-chunk limit",
                             path=path)
        if _DEFLATE not in used:
            budget.charge(decoded, where)
            continue
        _mask, raw = dset.id.read_direct_chunk(tuple(int(x) for x in info.chunk_offset))
        data = memoryview(raw)
        if used and used[-1] == _FLETCHER:  # applied last on writing: its checksum trails the data
            data = data[:-4]
        try:
            budget.decompress(data, "zlib", declared=decoded, what=where)
        except CorruptData as exc:
            raise MediaError(f"{exc}; the file is damaged", path=path) from exc


def dataset_frames(dset: Any, layout: FrameLayout, path: Path, limits: ReaderLimits,
                   budget: Budget | None = None, keep: Iterable[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """The frames of an image dataset in time order as ``(index, pixels)``, read in whole chunk
    rows (bounded slabs).

    Args:
        keep: The frames wanted (increasing; default all): a chunk row none of them is in is
            never read nor decompressed, a row read once gives all its wanted frames, and
            unfiltered data (nothing to decompress) is read frame by frame.

    Raises:
        MediaError: a chunk is over the caps or damaged, or HDF5 cannot read it.
    """
    check_dataset(dset, path)
    _check_stored(dset, path)
    budget = budget or Budget(path, limits)
    frames = layout.frames
    if dset.chunks is None:  # contiguous: no filters, the declared shape bounds every read
        rows: dict[int, list[Any]] = {}
        step = 1
    else:
        rows = _chunk_rows(dset)
        step = int(dset.chunks[0])
    filters = _filters(dset)
    checked: set[int] = set()

    def read(a: int, b: int) -> np.ndarray:
        if dset.chunks is not None:
            for r in range(a // step, (b - 1) // step + 1):
                if r not in checked:
                    _check_chunks(dset, rows.get(r, []), filters, budget, path)
                    checked.add(r)
        try:
            return np.asarray(dset[a:b])
        except (OSError, ValueError, TypeError) as exc:
            raise MediaError(f"{dset.name}: frames {a}-{b - 1} cannot be read (damaged or truncated file): {exc}",
                             path=path) from exc

    unit = step if filters else 1  # a filtered chunk is decoded whole: read it once
    for a, b, picks in read_plan(range(frames) if keep is None else keep, unit, layout.frame_bytes):
        b = min(b, frames)
        slab = read(a, b)
        for i in picks:
            yield i, slab[i - a]
        del slab
