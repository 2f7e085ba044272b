"""Which engine the default picks for which job (issue 38, item 3): the policy alone, no timing.

The figures that set its constants are measured in bench/bench_index.py (``small``); here only
the decisions are checked, against the model they come from."""

from __future__ import annotations

import pytest

from overlap_desktop.core.index import parallel
from overlap_desktop.core.index.parallel import (
    CLUSTER_MIN_BYTES,
    MIN_GAIN,
    START_BYTES,
    EngineChoice,
    choose_engine,
    estimated_speedup,
    free_cores,
)

MB = 1024 * 1024


def test_no_files_and_one_file_stay_in_this_process() -> None:
    assert choose_engine([], workers=0, cores=8) == EngineChoice("here")
    assert choose_engine([10_000 * MB], workers=0, cores=8) == EngineChoice("here")
    assert choose_engine([10_000 * MB], workers=4, cores=8) == EngineChoice("here")


def test_a_few_short_files_stay_in_this_process() -> None:
    # Six 12 s clips at 426x240 (about 0.3 MB each): worker start-up would cost more than it saves.
    small = [300_000] * 6
    assert estimated_speedup(small, 2) < MIN_GAIN
    assert choose_engine(small, workers=0, cores=2) == EngineChoice("here")
    assert choose_engine(small, workers=0, cores=16) == EngineChoice("here")


def test_a_library_of_episodes_uses_every_core() -> None:
    episodes = [4 * MB] * 200
    assert choose_engine(episodes, workers=0, cores=2) == EngineChoice("processes", 2)
    assert choose_engine(episodes, workers=0, cores=8) == EngineChoice("processes", 8)


def test_workers_are_not_started_for_files_they_cannot_share() -> None:
    # One big file and two tiny ones: a second worker would only take the tiny ones.
    lopsided = [500 * MB, 1 * MB, 1 * MB]
    assert estimated_speedup(lopsided, 2) < 1.0
    assert choose_engine(lopsided, workers=0, cores=4) == EngineChoice("here")
    # Three equal files on 8 cores: three workers, not eight (one per file at most).
    assert choose_engine([100 * MB] * 3, workers=0, cores=8) == EngineChoice("processes", 3)


def test_the_chosen_count_is_the_fastest_estimate_that_clears_the_margin() -> None:
    for sizes in ([2 * MB] * 5, [12 * MB] * 4, [30 * MB, 8 * MB, 8 * MB, 8 * MB], [64 * MB] * 9):
        for cores in (2, 4, 8):
            choice = choose_engine(sizes, workers=0, cores=cores)
            best = max(range(1, min(cores, len(sizes)) + 1), key=lambda n: estimated_speedup(sizes, n))
            if estimated_speedup(sizes, best) > MIN_GAIN:
                assert choice == EngineChoice("processes", best), (sizes, cores)
            else:
                assert choice == EngineChoice("here"), (sizes, cores)


def test_start_up_is_paid_once_per_worker_not_per_file() -> None:
    # The same footage as many small files or few big ones: the same estimate when it divides evenly.
    few, many = [40 * MB] * 4, [1 * MB] * 160
    assert estimated_speedup(few, 2) == pytest.approx(estimated_speedup(many, 2))
    assert estimated_speedup(few, 2) == pytest.approx((160 * MB / parallel.SERIAL_CORES) / (80 * MB + START_BYTES))


def test_an_explicit_worker_count_is_obeyed_up_to_one_per_file() -> None:
    assert choose_engine([300_000] * 6, workers=2, cores=2) == EngineChoice("processes", 2)
    assert choose_engine([300_000] * 3, workers=8, cores=2) == EngineChoice("processes", 3)
    assert choose_engine([300_000] * 6, workers=1, cores=8) == EngineChoice("here")


def test_a_cluster_is_used_for_a_big_job_and_a_small_one_says_why_it_stays_here() -> None:
    big = [CLUSTER_MIN_BYTES // 4] * 4
    assert choose_engine(big, workers=0, cores=2, cluster="tcp://h:8786") == EngineChoice("cluster", 0)
    small = [300_000] * 6
    choice = choose_engine(small, workers=0, cores=2, cluster="tcp://h:8786")
    assert (choice.kind, choice.workers) == ("here", 1)
    assert "cluster was not used" in choice.note and "6 file(s), 1.8 MB" in choice.note
    # Not worth a cluster, worth this computer's cores: the local default's choice, with the note.
    middle = [8 * MB] * 20
    choice = choose_engine(middle, workers=0, cores=2, cluster="tcp://h:8786")
    assert (choice.kind, choice.workers) == ("processes", 2) and choice.note


def test_a_busy_machine_leaves_the_default_only_its_free_cores() -> None:
    episodes = [4 * MB] * 200
    assert free_cores(2, None) == 2 and free_cores(8, float("nan")) == 8  # no load average (Windows)
    assert free_cores(2, 0.3) == 2 and free_cores(2, 1.2) == 2  # a run that just ended still counts for a minute
    assert free_cores(2, 1.6) == 1 and free_cores(2, 3.5) == 1 and free_cores(8, 4.0) == 5
    assert choose_engine(episodes, workers=0, cores=2, load=3.0) == EngineChoice("here")
    assert choose_engine(episodes, workers=0, cores=8, load=4.0) == EngineChoice("processes", 5)
    assert choose_engine(episodes, workers=0, cores=2, load=0.5) == EngineChoice("processes", 2)
    # An explicit count is the user's: obeyed whatever the load.
    assert choose_engine(episodes, workers=2, cores=2, load=3.0) == EngineChoice("processes", 2)
    # A job too small for the cluster runs here as the default would, load included.
    small = choose_engine(episodes[:2], workers=0, cores=2, cluster="tcp://h:8786", load=3.0)
    assert small.kind == "here" and "cluster was not used" in small.note


def test_two_workers_start_from_about_seven_mb_of_short_episodes() -> None:
    # bench/bench_small_jobs.py on an idle 2-core machine: 2.6 MB broke even, 8.5 MB gained 1.4x.
    assert choose_engine([int(2.6e6 / 6)] * 6, workers=0, cores=2, load=0.0) == EngineChoice("here")
    assert choose_engine([int(8.5e6 / 6)] * 6, workers=0, cores=2, load=0.0) == EngineChoice("processes", 2)
