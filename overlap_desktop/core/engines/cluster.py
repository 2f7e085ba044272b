"""The workers of a Dask distributed cluster (the optional ``cluster`` extra).

The only module that imports ``distributed``, and only when a scheduler address is given,
so the desktop bundle does not need Dask. Worker loss is Dask's business: a call whose
worker dies is rerun on another worker (up to the scheduler's ``allowed-failures``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Hashable
from typing import Any

from overlap_desktop.core.engines.base import Done, Task, default_workers, where
from overlap_desktop.errors import ConfigError, MissingDependencyError, UsageError

log = logging.getLogger(__name__)

__all__ = ["CONNECT_TIMEOUT_S", "DaskEngine", "connect"]

#: A call polls the cluster-wide cancel flag at most this often (seconds): each poll is a
#: round trip to the scheduler.
CANCEL_POLL_S = 1.0
#: Seconds to wait for the scheduler to answer and for at least one worker.
CONNECT_TIMEOUT_S = 30.0


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise MissingDependencyError(
            "--cluster needs Dask distributed, which is not installed here; install the optional extra with "
            "`pip install \"overlap-desktop[cluster]\"` (on this computer and on every worker)") from exc
    return distributed


def _facts(extra: Callable[[], tuple[str, ...]] | None) -> tuple[str, ...]:
    """What must agree between this computer and every worker: the version, then ``extra()``."""
    from overlap_desktop import __version__

    return (__version__, *(extra() if extra is not None else ()))


def connect(address: str, *, timeout: float | None = None, facts: Callable[[], tuple[str, ...]] | None = None) -> Any:
    """A ``distributed.Client`` for the scheduler at ``address``, checked for use by overlap.

    ``facts`` (a module-level function, run on every worker) names what else must agree with
    this computer, such as the fingerprint pipeline's ids.

    Raises:
        MissingDependencyError: Dask distributed is not installed.
        UsageError: the scheduler cannot be reached or has no workers.
        ConfigError: a worker runs another overlap version or fingerprint pipeline, or cannot
            import overlap desktop at all.
    """
    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    distributed = _distributed()
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({exc}); check the address "
                         "(tcp://HOST:8786), that `dask scheduler` is running there, and the firewall") from exc
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as exc:
            raise UsageError(f"the Dask scheduler at {address} has no workers; start some with "
                             f"`dask worker {address}`") from exc
        try:
            seen = client.run(_facts, facts)
        except (ImportError, ModuleNotFoundError) as exc:
            raise ConfigError(f"a worker of {address} cannot import overlap desktop ({exc}); install the "
                              "same version with the 'cluster' extra on every worker") from exc
        mine = _facts(facts)
        for worker, theirs in sorted(seen.items()):
            if tuple(theirs) != mine:
                raise ConfigError(
                    f"worker {worker} runs overlap {_said(tuple(theirs), 'fingerprints ')}, this computer runs "
                    f"{_said(mine, '')}; install the same version on every worker")
    except BaseException:
        client.close()
        raise
    return client


def _said(facts: tuple[str, ...], word: str) -> str:
    """``1.2 (fingerprints pdq-x, prep-y)``: a version and its other facts, for an error message."""
    return facts[0] + (f" ({word}{', '.join(facts[1:])})" if len(facts) > 1 else "")


def _n_threads(client: Any) -> int:
    return max(1, sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values()))


def _host(address: str) -> str:
    """``tcp://10.0.0.5:40123`` -> ``10.0.0.5`` (the machine a worker runs on)."""
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


def _slots_by_host(client: Any) -> dict[str, int]:
    """Task slots (worker threads) per machine of the cluster: calls run at once there."""
    slots: dict[str, int] = {}
    for address, w in client.scheduler_info()["workers"].items():
        slots[_host(address)] = slots.get(_host(address), 0) + max(1, int(w.get("nthreads", 1)))
    return slots


def _decoder_share(slots_by_host: dict[str, int]) -> int:
    """On a worker: decoder threads for one call, the machine's cores shared among its task slots
    (FFmpeg's automatic count would give every concurrent file all of them)."""
    from distributed import get_worker

    try:
        here = slots_by_host.get(_host(get_worker().address), 1)
    except ValueError:  # not inside a worker (a test calling the task directly)
        return 0
    return max(1, default_workers() // here)


def _dask_call(func: Callable[..., Any], args: tuple[Any, ...], cancel_name: str,
               slots_by_host: dict[str, int]) -> Any:
    """Runs on a Dask worker: ``func(*args, task=...)``, polling the run's cancel flag now and then."""
    from distributed import Event

    flag = Event(cancel_name)
    state = [0.0, False]

    def cancelled() -> bool:
        now = time.monotonic()
        if now - state[0] >= CANCEL_POLL_S:
            state[0] = now
            state[1] = bool(flag.is_set())
        return bool(state[1])

    task = Task(cancelled=cancelled, threads=_decoder_share(slots_by_host), remote=True, where=where())
    return func(*args, task=task)


class DaskEngine:
    """Calls on the workers of a Dask cluster (an :class:`~overlap_desktop.core.engines.base.Engine`).

    At most :attr:`capacity` calls are in flight (twice the cluster's worker threads), so
    neither the scheduler nor this process piles up results; each result is fetched and
    released as soon as it is done. Workers must see the same files at the same paths.

    Args:
        address: The scheduler, ``tcp://HOST:8786``.
        client: An open client to use instead of connecting (not closed by :meth:`close`).
        name: A word for the keys of this engine's calls on the dashboard ("fingerprint", "search").
        facts: What else every worker must agree on (see :func:`connect`).
    """

    def __init__(self, address: str, *, client: Any = None, name: str = "call",
                 facts: Callable[[], tuple[str, ...]] | None = None) -> None:
        distributed = _distributed()
        self._own = client is None
        self.client = connect(address, facts=facts) if client is None else client
        self.address = address
        self.name = name
        n_threads = _n_threads(self.client)
        self._slots = _slots_by_host(self.client)
        self.capacity = 2 * n_threads
        self.threads = 0  # each call works out its machine's share (_decoder_share)
        self.description = f"Dask cluster {address} ({n_threads} worker threads)"
        self._cancel_name = f"overlap-cancel-{uuid.uuid4().hex}"
        self._cancel = distributed.Event(self._cancel_name, client=self.client)
        self._futures: dict[Any, Hashable] = {}

    def share(self, value: Any) -> Any:
        # One copy per worker, not one per call; a call receives the value itself.
        return self.client.scatter(value, broadcast=True, hash=False)

    def submit(self, key: Hashable, func: Callable[..., Any], *args: Any) -> None:
        fut = self.client.submit(_dask_call, func, args, self._cancel_name, self._slots,
                                 pure=False, key=f"overlap-{self.name}-{uuid.uuid4().hex}")
        self._futures[fut] = key

    def fractions(self) -> dict[Hashable, float]:
        # Within-call progress would cost a message per call per interval across the network;
        # the caller's aggregate progress moves per finished call instead.
        return {}

    def wait(self, timeout: float) -> list[Done]:
        if not self._futures:
            return []
        # Future.done() is local state kept current by the client's connection: polling it is cheap,
        # and unlike distributed.wait it needs no process-wide default client.
        deadline = time.monotonic() + timeout
        while True:
            done = [f for f in self._futures if f.done()]
            if done or time.monotonic() >= deadline:
                break
            time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))
        out: list[Done] = []
        for fut in done:
            key = self._futures.pop(fut)
            try:
                out.append(Done(key, fut.result()))
            except Exception as exc:
                out.append(Done(key, error=exc))
            finally:
                fut.release()
        return out

    def stop(self) -> list[Done]:
        # Running calls see the flag within a second and stop; queued ones are dropped.
        self._cancel.set()
        futures = list(self._futures)
        self._futures.clear()
        self.client.cancel(futures)
        return []

    def close(self) -> None:
        if self._futures:
            self.stop()
        try:
            self._cancel.clear()
        except Exception:
            log.debug("could not clear the cancel flag on %s", self.address, exc_info=True)
        if self._own:
            self.client.close()
