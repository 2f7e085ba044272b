"""The values that flow down a comparison, one type per stage boundary.

A comparison is a one-way chain (see docs/architecture.md)::

    QueryStream (the offer)  --candidates-->  PairSeeds  --pair-->  RawSegment
        --> Found (query, corpus stream, segment)  --results-->  FileResult  --reporting-->  Report

Thresholds (:class:`~overlap_desktop.core.match.segments.MatchParams`) and a verified segment
(:class:`~overlap_desktop.core.match.segments.RawSegment`) live in :mod:`.segments`, beside the
line fit every stage shares; the report's types live in :mod:`overlap_desktop.core.report.model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.types import StreamFingerprints

__all__ = ["Found", "PairSeeds", "QueryStream"]


@dataclass(slots=True)
class QueryStream:
    """One offered stream: the file it belongs to and its fingerprints."""

    file: str
    file_duration: float
    key: str
    fp: StreamFingerprints
    #: Index stream id when the query comes from the index (self-dedupe), else -1.
    stream_id: int = -1
    #: The dataset episode the stream is one camera of, when the offer says (one episode span
    #: covering the stream); streams of different episodes never share a timeline.
    episode: int | None = None


@dataclass(frozen=True, slots=True)
class PairSeeds:
    """The candidate hits of one (query stream, corpus stream) pair: the output of the search.

    Attributes:
        query: Position of the query stream in the comparison's query list.
        stream: Corpus stream id.
        q_rows: Query frame rows of the seeds (int64).
        c_rows: Corpus frame rows of the seeds (int64).
        variants: Corpus variant positions of the seeds (int64).
        distances: Hamming distances of the seeds (int64).
    """

    query: int
    stream: int
    q_rows: np.ndarray
    c_rows: np.ndarray
    variants: np.ndarray
    distances: np.ndarray


class Found(NamedTuple):
    """A verified, assessed segment between a query stream and a corpus stream.

    A named tuple, so ``for qi, sid, seg in found`` reads as before.
    """

    query: int
    stream: int
    segment: RawSegment
