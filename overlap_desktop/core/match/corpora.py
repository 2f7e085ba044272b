"""Where a comparison looks: the owned index, or streams held in memory (a manifest, sample footage).

Both implement :class:`~overlap_desktop.core.index.search.Corpus`: shards to search, and the
fingerprints and names of the streams the shards hold.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from overlap_desktop.core.index.shards import Shard, build_shard
from overlap_desktop.core.types import StreamFingerprints

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.core.index.store import Index

__all__ = ["IndexCorpus", "MemoryCorpus"]


class IndexCorpus:
    """The owned index as a corpus (shards from :meth:`Index.shards`)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._cache: OrderedDict[int, StreamFingerprints] = OrderedDict()

    def shards(self) -> Iterator[Shard]:
        return self.index.shards()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        fp = self._cache.get(stream_id)
        if fp is None:
            fp = self.index.stream_fingerprints(stream_id)
            self._cache[stream_id] = fp
            while len(self._cache) > 64:  # a few dozen streams: bounded memory
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(stream_id)
        return fp

    def describe(self, stream_id: int) -> tuple[str, str]:
        f, key = self.index.stream_info(stream_id)
        return f.path, key

    def searched_seconds(self) -> float:
        """Footage seconds in the whole index: how many places a chance line could land."""
        return float(self.index.stats().get("hours") or 0.0) * 3600.0


class MemoryCorpus:
    """Streams held in memory (a manifest, fingerprinted sample footage) as a corpus.

    One temporary shard is built on disk on first use and removed by :meth:`close`.
    """

    def __init__(self, streams: Sequence[tuple[str, str, StreamFingerprints]]) -> None:
        self.streams = list(streams)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def shards(self) -> Iterator[Shard]:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="overlap-corpus-")
            codes_l, sid_l, f_l, v_l = [], [], [], []
            for sid, (_, _, fp) in enumerate(self.streams):
                rows = np.flatnonzero(fp.usable).astype(np.int32)
                v = fp.codes.shape[1]
                if rows.size == 0:
                    continue
                codes_l.append(fp.codes[rows].reshape(-1, 32))
                f_l.append(np.repeat(rows, v))
                v_l.append(np.tile(np.arange(v, dtype=np.int16), rows.size))
                sid_l.append(np.full(rows.size * v, sid, np.int64))
            if codes_l:
                try:
                    build_shard(Path(self._tmp.name) / "shard", np.concatenate(codes_l), np.concatenate(sid_l),
                                np.concatenate(f_l), np.concatenate(v_l))
                except OSError as exc:
                    # The temporary search table of an offer (a full temp disk, a file-size limit).
                    from overlap_desktop.core.fsutil import os_write_error

                    raise os_write_error(exc, self._tmp.name, "cannot write the temporary search table of "
                                         "this comparison (in the system's temporary folder; set TMPDIR "
                                         "to use another disk)") from exc
        shard_dir = Path(self._tmp.name) / "shard"
        if shard_dir.exists():
            shard = Shard.open(shard_dir)
            try:
                yield shard
            finally:
                shard.close()

    def fingerprints(self, stream_id: int) -> StreamFingerprints:
        return self.streams[stream_id][2]

    def describe(self, stream_id: int) -> tuple[str, str]:
        name, key, _ = self.streams[stream_id]
        return name, key

    def searched_seconds(self) -> float:
        return float(sum(max(fp.duration_s, 0.0) for _, _, fp in self.streams))

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
