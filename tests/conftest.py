"""Session-wide test setup.

Qt runs offscreen (no display in CI). Generated footage is cached per session in
``tmp_path_factory`` folders by the fixtures that need it.

The shared fixture modules are registered once here, through ``pytest_plugins``, instead of
being star-imported into each test module: an imported fixture is a new fixture definition
in every module that imports it, so a session-scoped one was built once per module (several
times per worker). Registered as plugins, each session fixture is built at most once per
xdist worker, and test modules just name the fixture as an argument.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests must never read the developer's own config or index.
os.environ.pop("OVERLAP_INDEX", None)

from pathlib import Path

import pytest

# Only the top-level conftest may declare plugins (pytest refuses them in nested conftests).
pytest_plugins = [
    "tests.fixtures_index",
    "tests.fixtures_matrix",
    "tests.fixtures_recordings",
    "tests.fixtures_scale",
    "tests.reliability.lab21",
]

REALDATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _isolate_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point platformdirs locations at a fresh temp folder for every test.

    Per test, not per session: a test that saves settings (the GUI's settings dialog
    writes the user overlap.toml) must not change the defaults every later test sees.
    """
    home = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    for key in list(os.environ):
        if key.startswith("OVERLAP_"):
            monkeypatch.delenv(key, raising=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order test modules for pytest-xdist: modules marked ``schedule_first`` first, then the
    others by their number of tests, most first (xdist's own heuristic, which
    ``--no-loadscope-reorder`` in addopts turns off so that this order is kept).

    With ``--dist loadfile`` each module is one unit of work handed out in this order, so the
    two halves of the detection matrix (minutes each) start at once on two workers instead of
    one of them starting last and finishing long after everything else.
    """
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def key(name: str) -> tuple[bool, int]:
        return (not any(i.get_closest_marker("schedule_first") for i in modules[name]), -len(modules[name]))

    items[:] = [item for name in sorted(modules, key=key) for item in modules[name]]
