"""The serial engine: every call runs in this process, at once, in submission order."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from overlap_desktop.core.engines.base import Done, Task, where
from overlap_desktop.core.types import CancelCallback
from overlap_desktop.errors import Cancelled

__all__ = ["SerialEngine"]


class SerialEngine:
    """Runs each call inside :meth:`submit` (an :class:`~overlap_desktop.core.engines.base.Engine`).

    Progress goes straight to ``on_progress(key, value)`` and the caller's cancel is the task's,
    so a serial run reports and stops within a call, as a plain loop would. A :class:`Cancelled`
    or ``KeyboardInterrupt`` raised by a call passes through :meth:`submit`; any other exception
    comes back in its :class:`Done`, as from the other engines.
    """

    capacity = 1
    description = "this process"
    threads = 0

    def __init__(self, *, on_progress: Callable[[Hashable, float], None] | None = None,
                 cancel: CancelCallback | None = None) -> None:
        self._on_progress = on_progress
        self._cancel = cancel
        self._done: list[Done] = []

    def share(self, value: Any) -> Any:
        return value

    def submit(self, key: Hashable, func: Callable[..., Any], *args: Any) -> None:
        report = self._on_progress
        task = Task(progress=None if report is None else (lambda value: report(key, value)),
                    cancelled=self._cancel, where=where())
        try:
            self._done.append(Done(key, func(*args, task=task)))
        except Cancelled:
            raise
        except Exception as exc:
            self._done.append(Done(key, error=exc))

    def wait(self, timeout: float) -> list[Done]:
        done, self._done = self._done, []
        return done

    def fractions(self) -> dict[Hashable, float]:
        return {}

    def stop(self) -> list[Done]:
        return self.wait(0.0)

    def close(self) -> None:
        self._done.clear()
