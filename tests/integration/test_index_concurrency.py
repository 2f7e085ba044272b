"""One writer at a time per index; readers work while a writer runs (another process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.types import Progress
from overlap_desktop.errors import IndexBusyError
from tests.fixtures_index import seed_codes

ROOT = Path(__file__).resolve().parents[2]

# Holds the writer lock AND an open write transaction until stdin closes.
_HOLDER = r"""
import sys
from overlap_desktop.core.index.store import open_index
idx = open_index(sys.argv[1])
with idx.writer():
    idx._db.execute("BEGIN IMMEDIATE")
    idx._db.execute("UPDATE files SET error = 'held' WHERE 0")
    print("locked", flush=True)
    sys.stdin.read()
    idx._db.execute("ROLLBACK")
idx.close()
"""


@pytest.fixture
def held_index(clip_folder: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    ix = tmp_path / "ix"
    index_paths([clip_folder / "a.mp4"], index=ix, config=load_config(environ={}))
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(ix)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked", proc.stderr
        yield ix, proc.pid
    finally:
        proc.communicate(input="", timeout=60)
        assert proc.returncode == 0


def test_second_writer_is_refused_naming_the_holder(held_index: tuple[Path, int], clip_folder: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ix, pid = held_index
    with pytest.raises(IndexBusyError, match=f"pid {pid}"):
        index_paths([clip_folder], index=ix, config=load_config(environ={}))
    capsys.readouterr()
    assert main(["index", str(clip_folder), "--index", str(ix), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"pid {pid}" in err and "writing to this index" in err


def test_readers_work_while_another_process_writes(held_index: tuple[Path, int],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ix, _ = held_index
    # The holder keeps its write transaction open for the whole test, so a read that
    # waited on it would time out (10 s busy timeout) and raise instead of returning.
    with open_index(ix, readonly=True) as idx:
        assert [f.status for f in idx.files()] == ["ok"]
        assert len(list(idx.streams())) == 1
        assert sum(len(s) for s in idx.shards()) == seed_codes(idx) > 0
    # A read-write open (what compare and the GUI do) also reads; sealing is skipped, not waited for.
    with open_index(ix) as idx:
        assert sum(len(s) for s in idx.shards()) > 0
    assert main(["files", "--index", str(ix), "--json"]) == 0
    assert '"status": "ok"' in capsys.readouterr().out


def test_reader_during_indexing_in_process(clip_folder: Path, tmp_path: Path) -> None:
    ix = tmp_path / "ix"
    seen: list[int] = []

    def progress(p: Progress) -> None:
        if p.stage == "index" and p.message:
            with open_index(ix, readonly=True) as reader:
                seen.append(len(reader.files("ok")))
                # Streams committed so far are visible before they are sealed into shards.
                assert sum(len(s) for s in reader.shards()) == seed_codes(reader)

    index_paths([clip_folder], index=ix, config=load_config(environ={}), progress=progress)
    assert seen == [1, 2, 3]
