"""The engines layer (core/engines, issue 35): functions run here or in worker processes, with the
task's progress, cancel and shared values, and the same results whichever engine ran them."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from overlap_desktop.core.engines import Done, Task, engine_for, engine_named, run_each
from overlap_desktop.core.types import CancelToken
from overlap_desktop.errors import Cancelled, InputError


def scaled(x: int, table: dict[str, int], *, task: Task) -> tuple[int, bool]:
    """A work function: module level, so worker processes can import it."""
    if task.progress is not None:
        task.progress(0.5)
    task.check()
    if x < 0:
        raise InputError(f"negative input {x}")
    return x * table["factor"], task.remote


def test_the_engine_is_chosen_by_name_in_one_place() -> None:
    assert engine_for(cluster=None, workers=1) == "serial"
    assert engine_for(cluster=None, workers=4) == "processes"
    assert engine_for(cluster="tcp://h:8786", workers=4) == "dask"
    with pytest.raises(ValueError, match="unknown engine 'threads'"):
        engine_named("threads")


def test_serial_runs_in_submit_order_reports_progress_and_hands_errors_back() -> None:
    seen: list[tuple[Hashable, float]] = []
    engine = engine_named("serial", on_progress=lambda key, value: seen.append((key, value)))
    table = engine.share({"factor": 3})
    done = list(run_each(engine, scaled, [("a", (2, table)), ("b", (-1, table)), ("c", (5, table))], cancel=None))
    assert [d.key for d in done] == ["a", "b", "c"]
    assert done[0].result() == (6, False) and done[2].result() == (15, False)
    # A failing call comes back as its Done, raised where the result is asked for.
    with pytest.raises(InputError, match="negative input -1"):
        done[1].result()
    assert seen == [("a", 0.5), ("b", 0.5), ("c", 0.5)]
    engine.close()


def test_a_cancel_stops_a_serial_run_at_once() -> None:
    token = CancelToken()
    calls: list[int] = []

    def counted() -> Any:
        for i in range(10):
            calls.append(i)
            if i == 2:
                token.cancel()
            yield i, (i, {"factor": 1})

    engine = engine_named("serial", cancel=token)
    with pytest.raises(Cancelled):
        list(run_each(engine, scaled, counted(), cancel=token))
    assert calls == [0, 1, 2]  # nothing after the cancelled call was started


def test_worker_processes_give_the_serial_results() -> None:
    calls = [(k, (k, None)) for k in range(6)]
    serial = engine_named("serial")
    want = sorted((d.key, d.result()) for d in run_each(serial, scaled, _with(calls, serial), cancel=None))
    engine = engine_named("processes", workers=2, threads=1)
    try:
        assert engine.capacity == 4 and engine.description == "2 worker processes"
        got = sorted((d.key, d.result()) for d in run_each(engine, scaled, _with(calls, engine), cancel=None))
        # A share after the first call is refused: the workers already started without it.
        with pytest.raises(RuntimeError):
            engine.share({"factor": 1})
    finally:
        engine.close()
    assert got == want and [v for _, (v, _) in got] == [0, 2, 4, 6, 8, 10]


def _with(calls: list[tuple[int, tuple[int, None]]], engine: Any) -> list[tuple[int, tuple[int, Any]]]:
    """The calls with the table shared once through ``engine``."""
    table = engine.share({"factor": 2})
    return [(k, (x, table)) for k, (x, _) in calls]


def test_a_done_without_an_error_is_its_value() -> None:
    assert Done("k", 7).result() == 7
