"""Comparisons: an offer against the owned index, the index against itself, two offers
against each other, and a manifest against the sample footage a buyer was shown.

All four share one engine: query streams (identity codes, usually from a manifest)
are looked up shard by shard in a corpus (the index, or a temporary shard built from
a manifest or sample), seed matches are grouped per (query stream, corpus stream),
and :func:`~overlap_desktop.core.match.lines.match_streams` turns them into segments. The
result is a :class:`~overlap_desktop.core.report.model.Report`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overlap_desktop.core.index.search import QUERY_BATCH
from overlap_desktop.core.ingest.orient import orientations_setting
from overlap_desktop.core.manifest.vendors import check_signed
from overlap_desktop.core.match.annotations import (
    annotation_overlap,
    fill_episodes,
    index_episode_lookup,
    manifest_episode_lookup,
)
from overlap_desktop.core.match.engine import IndexCorpus, MemoryCorpus, compare_streams, emit_progress, match_params
from overlap_desktop.core.match.engine import QueryStream as QueryStream
from overlap_desktop.core.match.orientations import search_orientations
from overlap_desktop.core.match.repeats import fill_repeats
from overlap_desktop.core.match.results import (
    audit_files,
    build_report,
    check_ids,
    file_results,
    load_manifest,
    manifest_facts,
    manifest_queries,
    report_settings,
)
from overlap_desktop.core.match.results import speed_change as speed_change
from overlap_desktop.core.match.segments import RawSegment
from overlap_desktop.core.report.model import Report
from overlap_desktop.core.types import CancelCallback, ProgressCallback, StreamFingerprints, check_cancel
from overlap_desktop.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.manifest.format import Manifest

__all__ = [
    "QueryStream",
    "audit_sample",
    "compare",
    "compare_offers",
    "compare_streams",
    "match_params",
    "self_dedupe",
]


# --------------------------------------------------------------------------- public API


def compare(manifest: Manifest | Path | str, index: Index | Path | str | None = None, *,
            config: Config | None = None, floor_seconds: float | None = None,
            eval_files: Sequence[str | os.PathLike[str]] | None = None,
            eval_fields: Sequence[str] | None = None,
            progress: ProgressCallback | None = None, cancel: CancelCallback | None = None,
            cluster: str | None = None, require_signed: bool | None = None) -> Report:
    """How much of an offer (a manifest) matches footage the index holds.

    Args:
        manifest: A :class:`Manifest` or the path of a ``.ovlm`` file.
        index: An open :class:`Index`, an index folder, or ``None`` for the configured one.
        config: Settings (``match.*``, ``index.path``); default: loaded.
        floor_seconds: Evidence floor overriding ``match.floor_seconds``.
        eval_files: The lab's evaluation set, checked against the manifest's annotation
            n-gram hashes (``Report.text_overlap``; see core/annotations.py).
        eval_fields: JSON fields of ``eval_files`` holding the text.
        progress: Receives :class:`Progress` (stages ``search`` then ``match``).
        cancel: Polled between shards and stream pairs.
        cluster: A Dask scheduler address: search the shards on its workers (core/index/search.py).
        require_signed: Refuse an unsigned offer, or one whose key differs from the key
            recorded for its vendor (default ``compare.require_signed``).

    Returns:
        A ``compare`` :class:`Report` (``FileResult.episodes`` filled for LeRobot streams).

    Raises:
        ManifestError: the manifest is malformed or uses another algo/prep than the index.
        IndexError_: the index is missing or unusable.
        Cancelled: ``cancel()`` turned true.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.store import Index as _Index
    from overlap_desktop.core.index.store import open_index

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    own = not isinstance(index, _Index)
    idx = index if isinstance(index, _Index) else open_index(index, config=config, create=False)
    try:
        m, mpath = load_manifest(manifest, expect_algo=idx.algo_id, expect_prep=idx.prep_id)
        check_ids(m, idx.algo_id, idx.prep_id, what="this index", path=mpath)
        check_signed(m, mpath, bool(config["compare.require_signed"] if require_signed is None else require_signed))
        # Before the long footage search, so a bad evaluation file fails fast.
        text_block = None if eval_files is None else annotation_overlap(m, eval_files, fields=eval_fields)
        queries = manifest_queries(m)
        corpus: Any = IndexCorpus(idx)
        if cluster:
            from overlap_desktop.core.index.search import ClusterCorpus

            corpus = ClusterCorpus(corpus, cluster)
        # Issue 19: rotated and flipped offers, found by turning the offered codes (core/ingest/orient.py).
        found, corpus = search_orientations(compare_streams, queries, corpus, params, progress=progress, cancel=cancel)
        files = file_results(queries, found, corpus, params)
        fill_episodes(files, manifest_episode_lookup(m), index_episode_lookup(idx))
        facts = manifest_facts(m)
        if mpath:
            facts["path"] = mpath
        report = build_report("compare", files, manifest=facts,
                         settings=report_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx))
        # Say how the verdict was reached: which orientations of the offer were searched, and how.
        report.settings["search"]["orientations"] = orientations_setting()
        report.text_overlap = text_block
        # The offer against itself: internal repeats and the new footage a buyer would get.
        fill_repeats(report, queries, params, progress=progress, cancel=cancel,
                     sha256={f.name: f.sha256 for f in m.files})
        return report
    finally:
        if own:
            idx.close()


def self_dedupe(index: Index | Path | str | None = None, *, config: Config | None = None,
                floor_seconds: float | None = None, paths: Sequence[str | os.PathLike[str]] | None = None,
                progress: ProgressCallback | None = None, cancel: CancelCallback | None = None) -> Report:
    """Internal duplicates within the index.

    Each indexed stream is compared against every other; a stream against itself only
    counts off the trivial identity line (a file that repeats its own footage). A pair
    of duplicates is reported once, on the later-indexed file, so the matched hours are
    the hours that could be removed without losing footage.

    Args:
        index: An open :class:`Index`, an index folder, or ``None`` for the configured one.
        config: Settings; default: loaded.
        floor_seconds: Evidence floor overriding ``match.floor_seconds``.
        paths: Only files at or under these paths are checked (against the whole index).
        progress: Progress callback.
        cancel: Cancel callback.

    Returns:
        A ``self-dedupe`` :class:`Report` (query files are index paths).
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.store import Index as _Index
    from overlap_desktop.core.index.store import open_index

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    own = not isinstance(index, _Index)
    idx = index if isinstance(index, _Index) else open_index(index, config=config, create=False)
    try:
        corpus = IndexCorpus(idx)
        queries: list[QueryStream] = []
        sid_by_key = {(fid, key): sid for sid, fid, key in idx.stream_ids()}
        for f, key, fp in idx.streams(paths):
            # Only the identity codes are queried; keep memory to that.
            q_fp = StreamFingerprints(fp.times_ns, fp.quality, np.ascontiguousarray(fp.codes[:, :1]),
                                      fp.variants[:1], fp.usable, fp.indeterminate, fp.fps, fp.duration_s)
            queries.append(QueryStream(f.path, float(f.duration_s or fp.duration_s), key, q_fp,
                                       stream_id=sid_by_key.get((f.id, key), -1)))

        def pair_filter(qi: int, sid: int) -> str:
            own_sid = queries[qi].stream_id
            if sid == own_sid:
                return "diagonal"
            # Report each duplicate pair once: on the later stream (the redundant copy).
            return "keep" if sid < own_sid else "skip"

        # Batches of query streams bound the size of the query code array.
        batches: list[list[int]] = []
        n_codes = 0
        for i, q in enumerate(queries):
            if not batches or n_codes + len(q.fp) > QUERY_BATCH:
                batches.append([])
                n_codes = 0
            batches[-1].append(i)
            n_codes += len(q.fp)
        found: list[tuple[int, int, RawSegment]] = []
        for batch in batches:
            part = compare_streams([queries[j] for j in batch], corpus, params,
                                   pair_filter=_in_batch(batch, pair_filter),
                                   progress=progress, cancel=cancel)
            found.extend((batch[a], s, seg) for a, s, seg in part)
        files = file_results(queries, found, corpus, params)
        fill_episodes(files, index_episode_lookup(idx), index_episode_lookup(idx))
        st = idx.stats()
        facts = {"label": f"index {idx.path}", "files": st.get("files_ok"), "hours": st.get("hours"),
                 "algo_id": idx.algo_id, "prep_id": idx.prep_id}
        return build_report("self-dedupe", files, manifest=facts,
                       settings=report_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx))
    finally:
        if own:
            idx.close()


def compare_offers(a: Manifest | Path | str, b: Manifest | Path | str, *, config: Config | None = None,
                   floor_seconds: float | None = None, progress: ProgressCallback | None = None,
                   cancel: CancelCallback | None = None, require_signed: bool | None = None) -> Report:
    """Are two sellers offering the same footage? Offer ``a`` is matched against offer ``b``.

    Both manifests carry identity codes only (no crop ladder), so manipulations that
    need corpus variants (crops, mirror) are not detected between two offers; speed
    changes, trims, splices and re-encodes are.

    Returns:
        A ``compare-offers`` :class:`Report` whose files are ``a``'s and whose corpus
        files are ``b``'s; ``settings["other_manifest"]`` describes ``b``.

    Raises:
        ManifestError: either manifest is bad, or they use different algo/prep.
    """
    from overlap_desktop.config import load_config

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    ma, pa = load_manifest(a)
    mb, pb = load_manifest(b)
    check_ids(mb, ma.algo_id, ma.prep_id, what=f"the first manifest ({pa or ma.label})", path=pb)
    required = bool(config["compare.require_signed"] if require_signed is None else require_signed)
    check_signed(ma, pa, required)
    check_signed(mb, pb, required)
    corpus = MemoryCorpus([(f.name, s.key, s.fingerprints) for f in mb.files for s in f.streams])
    try:
        queries = manifest_queries(ma)
        found = compare_streams(queries, corpus, params, progress=progress, cancel=cancel)
        files = file_results(queries, found, corpus, params)
        fill_episodes(files, manifest_episode_lookup(ma), manifest_episode_lookup(mb),
                      owned_word="offer B")
    finally:
        corpus.close()
    facts = manifest_facts(ma)
    other = manifest_facts(mb)
    if pa:
        facts["path"] = pa
    if pb:
        other["path"] = pb
    return build_report("compare-offers", files, manifest=facts,
                   settings=report_settings(params, algo=ma.algo_id, prep=ma.prep_id,
                                      extra={"other_manifest": other}))


def audit_sample(manifest: Manifest | Path | str, sample_dir: Path | str, *, config: Config | None = None,
                 floor_seconds: float | None = None, progress: ProgressCallback | None = None,
                 cancel: CancelCallback | None = None) -> Report:
    """Does the manifest describe the sample footage you were shown?

    The sample files are fingerprinted like an index would (``index.fps`` and the
    configured variants), the manifest's streams are matched against them, and the
    answer is given per *sample* file: how much of it the manifest covers. In the
    report, ``files`` are the sample files, ``query_*`` fields of a segment are
    sample times and ``corpus_*`` fields the manifest file and its times; ``speed``
    is manifest seconds per sample second.

    Raises:
        ManifestError: the manifest is bad or made with another algo/prep.
        UsageError: the sample folder does not exist or holds no footage.
    """
    from overlap_desktop.config import load_config
    from overlap_desktop.core.index.fingerprinting import fingerprint_file
    from overlap_desktop.core.index.walk import walk_candidates
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID, variants_from_config
    from overlap_desktop.core.ingest.prep import PREP_ID

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    m, mpath = load_manifest(manifest, expect_algo=ALGO_ID, expect_prep=PREP_ID)
    check_ids(m, ALGO_ID, PREP_ID, what="this program", path=mpath)
    sample_dir = Path(sample_dir)
    if not sample_dir.exists():
        raise UsageError("sample folder does not exist", path=sample_dir)
    variants = tuple(variants_from_config(config))
    samples: list[tuple[str, str, StreamFingerprints]] = []
    durations: dict[str, float] = {}
    items = [(p, r) for p, r in walk_candidates([sample_dir]) if r is not None]
    if not items:
        raise UsageError("no footage found in the sample folder", path=sample_dir)
    for k, (p, _) in enumerate(items):
        check_cancel(cancel)
        for info, fp in fingerprint_file(p, config=config, variants=variants, cancel=cancel):
            samples.append((str(p), info.key, fp))
            durations[str(p)] = max(durations.get(str(p), 0.0), float(info.duration_s or fp.duration_s))
        emit_progress(progress, "fingerprint", k + 1, len(items), "files")
    corpus = MemoryCorpus(samples)
    try:
        queries = manifest_queries(m)
        found = compare_streams(queries, corpus, params, progress=progress, cancel=cancel)
    finally:
        corpus.close()
    files = audit_files(samples, durations, queries, found, params)
    facts = manifest_facts(m)
    if mpath:
        facts["path"] = mpath
    return build_report("audit", files, manifest=facts,
                   settings=report_settings(params, algo=m.algo_id, prep=m.prep_id,
                                      extra={"sample_dir": str(sample_dir)}))


def _in_batch(batch: list[int], pair_filter: Callable[[int, int], str]) -> Callable[[int, int], str]:
    """``pair_filter`` for a batch of query streams (positions in the batch, not in all queries)."""
    return lambda a, sid: pair_filter(batch[a], sid)
