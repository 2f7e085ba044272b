"""The installed Qt binding must not leak references on signal emission.

PySide6 6.12.0 returns ``True`` from ``SignalInstance.emit()`` without owning a reference:
every emit lowers ``True``'s reference count until the interpreter aborts
("bool_dealloc: deallocating True") on CPython < 3.12. pyproject.toml excludes that
release; this test fails if a leaking build is installed anyway.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal


class _Probe(QObject):
    ping = Signal(object)


def test_emit_keeps_reference_counts(qapp) -> None:  # type: ignore[no-untyped-def]
    probe = _Probe()
    probe.ping.connect(lambda value: None)
    before_true, before_none = sys.getrefcount(True), sys.getrefcount(None)
    for _ in range(200):
        probe.ping.emit(1)
    if sys.version_info < (3, 12):  # from 3.12 True/None are immortal and their counts are fixed
        assert sys.getrefcount(True) >= before_true - 5
        assert sys.getrefcount(None) >= before_none - 5
