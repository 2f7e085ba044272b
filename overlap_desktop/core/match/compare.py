"""Comparisons: an offer against the owned index, the index against itself, two offers
against each other, and a manifest against the sample footage a buyer was shown.

Each public function is a short driver over the stages of a comparison, called in order
(docs/architecture.md has the picture)::

    offer (.offer)  ->  candidate hits (.candidates)  ->  per stream pair: lines -> refined
    segments -> evidence (.pair)  ->  per-file results (.results)  ->  report model (.reporting)

:mod:`.pipeline` runs the matching part (with the orientation stage, :mod:`.orientations`, for
``compare``); the settings go in through :func:`~.settings.match_params` and come out in the
report through :func:`~.settings.report_settings`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.search import QUERY_BATCH, ClusterSearch
from overlap_desktop.core.ingest.orient import orientations_setting
from overlap_desktop.core.manifest.vendors import check_signed
from overlap_desktop.core.match.annotations import (
    annotation_overlap,
    fill_episodes,
    index_episode_lookup,
    manifest_episode_lookup,
)
from overlap_desktop.core.match.corpora import IndexCorpus, MemoryCorpus
from overlap_desktop.core.match.offer import check_ids, index_queries, load_manifest, manifest_facts, manifest_queries
from overlap_desktop.core.match.pipeline import compare_streams, emit_progress, search_orientations
from overlap_desktop.core.match.repeats import fill_repeats
from overlap_desktop.core.match.reporting import build_report, report_settings
from overlap_desktop.core.match.results import audit_files, file_results
from overlap_desktop.core.match.settings import match_params
from overlap_desktop.core.match.types import Found, QueryStream
from overlap_desktop.core.report.model import Report
from overlap_desktop.core.types import CancelCallback, ProgressCallback, StreamFingerprints, check_cancel
from overlap_desktop.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config
    from overlap_desktop.core.index.store import Index
    from overlap_desktop.core.manifest.format import Manifest

__all__ = ["audit_sample", "compare", "compare_offers", "self_dedupe"]


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

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    with _opened(index, config) as idx:
        m, mpath = load_manifest(manifest, expect_algo=idx.algo_id, expect_prep=idx.prep_id)
        check_ids(m, idx.algo_id, idx.prep_id, what="this index", path=mpath)
        check_signed(m, mpath, bool(config["compare.require_signed"] if require_signed is None else require_signed))
        # Before the long footage search, so a bad evaluation file fails fast.
        text_block = None if eval_files is None else annotation_overlap(m, eval_files, fields=eval_fields)
        queries = manifest_queries(m)
        # Issue 19: rotated and flipped offers, found by turning the offered codes (core/ingest/orient.py).
        found, streams = search_orientations(queries, IndexCorpus(idx), params,
                                             search=ClusterSearch(idx, cluster) if cluster else None,
                                             twins=True, progress=progress, cancel=cancel)
        files = file_results(queries, found, streams, params)
        fill_episodes(files, manifest_episode_lookup(m), index_episode_lookup(idx))
        settings = report_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx)
        # Say how the verdict was reached: which orientations of the offer were searched, and how.
        settings["search"]["orientations"] = orientations_setting()
        report = build_report("compare", files, manifest=_facts(m, mpath), settings=settings,
                              text_overlap=text_block)
        # The offer against itself: internal repeats and the new footage a buyer would get.
        fill_repeats(report, queries, params, progress=progress, cancel=cancel,
                     sha256={f.name: f.sha256 for f in m.files})
        return report


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

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    with _opened(index, config) as idx:
        corpus = IndexCorpus(idx)
        queries = index_queries(idx, paths)

        def pair_filter(qi: int, sid: int) -> str:
            own_sid = queries[qi].stream_id
            if sid == own_sid:
                return "diagonal"
            # Report each duplicate pair once: on the later stream (the redundant copy).
            return "keep" if sid < own_sid else "skip"

        found: list[Found] = []
        for batch in _batches(queries):
            part = compare_streams([queries[j] for j in batch], corpus, params,
                                   pair_filter=_in_batch(batch, pair_filter),
                                   progress=progress, cancel=cancel)
            found.extend(Found(batch[a], s, seg) for a, s, seg in part)
        files = file_results(queries, found, corpus, params)
        fill_episodes(files, index_episode_lookup(idx), index_episode_lookup(idx))
        st = idx.stats()
        facts = {"label": f"index {idx.path}", "files": st.get("files_ok"), "hours": st.get("hours"),
                 "algo_id": idx.algo_id, "prep_id": idx.prep_id}
        return build_report("self-dedupe", files, manifest=facts,
                            settings=report_settings(params, algo=idx.algo_id, prep=idx.prep_id, index=idx))


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
    return build_report("compare-offers", files, manifest=_facts(ma, pa),
                        settings=report_settings(params, algo=ma.algo_id, prep=ma.prep_id,
                                                 extra={"other_manifest": _facts(mb, pb)}))


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
    from overlap_desktop.core.ingest.fingerprint import ALGO_ID
    from overlap_desktop.core.ingest.prep import PREP_ID

    config = config if config is not None else load_config()
    params = match_params(config, floor_seconds)
    m, mpath = load_manifest(manifest, expect_algo=ALGO_ID, expect_prep=PREP_ID)
    check_ids(m, ALGO_ID, PREP_ID, what="this program", path=mpath)
    samples, durations = _fingerprint_samples(Path(sample_dir), config, progress, cancel)
    corpus = MemoryCorpus(samples)
    try:
        queries = manifest_queries(m)
        found = compare_streams(queries, corpus, params, progress=progress, cancel=cancel)
    finally:
        corpus.close()
    files = audit_files(samples, durations, queries, found, params)
    return build_report("audit", files, manifest=_facts(m, mpath),
                        settings=report_settings(params, algo=m.algo_id, prep=m.prep_id,
                                                 extra={"sample_dir": str(sample_dir)}))


# --------------------------------------------------------------------------- helpers


@contextmanager
def _opened(index: Index | Path | str | None, config: Config) -> Iterator[Index]:
    """``index`` itself when it is open, else the index it names, opened here and closed after."""
    from overlap_desktop.core.index.store import Index as _Index
    from overlap_desktop.core.index.store import open_index

    if isinstance(index, _Index):
        yield index
        return
    idx = open_index(index, config=config, create=False)
    try:
        yield idx
    finally:
        idx.close()


def _facts(m: Manifest, path: str | None) -> dict[str, Any]:
    """The report's facts about an offer, with the file it was read from."""
    facts = manifest_facts(m)
    if path:
        facts["path"] = path
    return facts


def _batches(queries: Sequence[QueryStream]) -> list[list[int]]:
    """Positions of the query streams in batches that bound the size of the query code array."""
    batches: list[list[int]] = []
    n_codes = 0
    for i, q in enumerate(queries):
        if not batches or n_codes + len(q.fp) > QUERY_BATCH:
            batches.append([])
            n_codes = 0
        batches[-1].append(i)
        n_codes += len(q.fp)
    return batches


def _fingerprint_samples(sample_dir: Path, config: Config, progress: ProgressCallback | None,
                         cancel: CancelCallback | None
                         ) -> tuple[list[tuple[str, str, StreamFingerprints]], dict[str, float]]:
    """The sample footage fingerprinted like an index would: ``(file, stream key, fingerprints)``
    per stream, and each file's duration."""
    from overlap_desktop.core.index.fingerprinting import fingerprint_file
    from overlap_desktop.core.index.walk import walk_candidates
    from overlap_desktop.core.ingest.fingerprint import variants_from_config

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
    return samples, durations


def _in_batch(batch: list[int], pair_filter: Callable[[int, int], str]) -> Callable[[int, int], str]:
    """``pair_filter`` for a batch of query streams (positions in the batch, not in all queries)."""
    return lambda a, sid: pair_filter(batch[a], sid)
