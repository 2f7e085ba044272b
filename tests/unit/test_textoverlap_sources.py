"""Text overlap at scale: mixed training folders, exact merging across workers, resume."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pytest
import zstandard

from overlap_desktop.core.text import fanout, scan, sources
from overlap_desktop.core.text import overlap as to
from overlap_desktop.errors import InputError

RNG = np.random.default_rng(11)
VOCAB = [f"tok{i}" for i in range(20000)]


def _words(k: int) -> list[str]:
    return RNG.choice(VOCAB, size=k).tolist()


def _filler(lines: int) -> list[str]:
    return [" ".join(_words(30)) for _ in range(lines)]


def _docs(texts: list[str]) -> list[to.Document]:
    return [to.Document(t, "test", f"example {i}") for i, t in enumerate(texts)]


@pytest.fixture()
def mixed(tmp_path: Path) -> tuple[Path, list[str], dict[int, tuple[str, str]]]:
    """A folder of plain text, .jsonl.gz, .txt.zst, Parquet, .json.xz and .ndjson.bz2 with one
    planted test example each, a near-miss of another, and a binary file to skip."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tests = [" ".join(_words(20)) for _ in range(8)]
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    # Plain text, big enough to be split into several byte ranges (BLOCK_BYTES is lowered).
    plain = _filler(400)
    plain[250] = "Intro: " + tests[0].upper() + "!"  # case and punctuation do not hide it
    near = tests[5].split()
    near[12] = "changed"  # shares 12 tokens, never 13 (n = 13): must not match
    plain[300] = " ".join(near)
    (root / "a.txt").write_text("\n".join(plain) + "\n", encoding="utf-8")
    rows = [{"id": i, "text": t} for i, t in enumerate(_filler(50))]
    rows[7]["text"] = "x " + tests[1] + " y"
    (root / "b.jsonl.gz").write_bytes(gzip.compress("\n".join(json.dumps(r) for r in rows).encode()))
    z = _filler(60)
    z[41] = tests[2]
    (root / "sub" / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress("\n".join(z).encode()))
    col = _filler(100)
    col[64] = "start " + tests[3]
    pq.write_table(pa.table({"text": col, "lang": ["en"] * 100, "n": list(range(100))}),
                   root / "d.parquet", row_group_size=30)
    items = [{"text": t} for t in _filler(40)]
    items[3]["text"] = tests[4] + " end"
    (root / "e.json.xz").write_bytes(lzma.compress(json.dumps(items).encode()))
    nd = [{"body": t} for t in _filler(30)]
    nd[29]["body"] = tests[6]
    (root / "sub" / "f.ndjson.bz2").write_bytes(bz2.compress("\n".join(json.dumps(r) for r in nd).encode()))
    (root / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (root / ".hidden.txt").write_text(tests[7], encoding="utf-8")  # hidden: not read
    expected = {0: ("a.txt", "line 251"), 1: ("b.jsonl.gz", "line 8 field text"),
                2: ("c.txt.zst", "line 42"), 3: ("d.parquet", "row 64 column text"),
                4: ("e.json.xz", "item 3 field text"), 6: ("f.ndjson.bz2", "line 30 field body")}
    return root, tests, expected


@pytest.mark.parametrize("workers", [1, 2])
def test_mixed_folder_finds_every_planted_example_once(
        mixed: tuple[Path, list[str], dict[int, tuple[str, str]]], workers: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root, tests, expected = mixed
    monkeypatch.setattr(sources, "BLOCK_BYTES", 16 * 1024)  # a.txt becomes several ranges
    r = to.text_overlap(_docs(tests), [root], workers=workers)
    assert r.n == 13
    assert r.matched_examples == sorted(expected)  # not 5 (near miss), not 7 (hidden file)
    assert r.files == 6 and r.skipped_files == 1
    for ex, (name, where) in expected.items():
        found = {(Path(m.train_source).name, m.train_locator) for m in r.matches if m.example == ex}
        assert found == {(name, where)}, ex
        # 20 tokens, n = 13: the 8 n-grams of the example, each found once.
        assert sorted(m.position for m in r.matches if m.example == ex) == list(range(8))
    by_name = {Path(s.source).name: (s.examples, s.occurrences) for s in r.sources}
    assert by_name == {name: (1, 8) for name, _ in expected.values()}


def test_workers_give_identical_results(mixed: tuple[Path, list[str], dict[int, tuple[str, str]]],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root, tests, _ = mixed
    monkeypatch.setattr(sources, "BLOCK_BYTES", 8 * 1024)
    # Many copies of one example: the per-n-gram cap must keep the same first occurrences.
    (root / "z.txt").write_text("\n".join([tests[0]] * 40) + "\n", encoding="utf-8")
    one = to.text_overlap(_docs(tests), [root], workers=1).to_dict()
    two = to.text_overlap(_docs(tests), [root], workers=2).to_dict()
    assert one == two
    z = [m for m in one["matches"] if m["train_source"].endswith("z.txt") and m["position"] == 0]
    assert [m["train_locator"] for m in z] == ["line 1", "line 2", "line 3", "line 4"]  # a.txt holds 1


def test_line_numbers_count_across_byte_ranges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "BLOCK_BYTES", 1000)
    test = " ".join(_words(15))
    lines = _filler(200)
    lines[177] = test
    p = tmp_path / "t.txt"
    p.write_text("\n".join(lines), encoding="utf-8")  # no final newline
    assert len(sources.plan_tasks(sources.expand_sources([p])[0], 0)) > 10
    r = to.text_overlap(_docs([test]), [p], workers=1)
    assert {m.train_locator for m in r.matches} == {"line 178"}


@pytest.mark.parametrize("tokenizer", sorted(to.TOKENIZERS))
def test_byte_normalisation_equals_the_tokenizer(tokenizer: str) -> None:
    """The scanner's byte-level tokenizer gives exactly the Python tokenizer's tokens."""
    alphabet = list("abcXYZ019 _-.,!'\t\r\x0b\x0c\x1c\x1f\x01\x7f") + ["é", "ß", "İ", "Σ", "\u00a0", "\u2028",
                                                                        "\u3000", "日", "😀", "\u0301"]
    rng = np.random.default_rng(5)
    fn = to.TOKENIZERS[tokenizer]
    for _ in range(300):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 40))).tolist())
        want = [t.encode("utf-8") for t in fn(text)]
        doc = scan.normalize_docs([text, "next"], tokenizer, fn)
        assert doc.split(b"\n")[0].split() == want and doc.count(b"\n") == 1, repr(text)
        assert not set(doc) & set(b"\t\r\x0b\x0c\x1c\x1d\x1e\x1f")  # only spaces separate tokens
        line = scan.normalize_lines(text.replace("\n", " ").encode("utf-8"), tokenizer, fn)
        assert line.split() == want, repr(text)


def test_resume_skips_finished_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = [" ".join(_words(16)) for _ in range(3)]
    folder = tmp_path / "train"
    folder.mkdir()
    for i, name in enumerate(["a.txt", "b.txt", "c.txt"]):
        lines = _filler(50)
        lines[10 + i] = tests[i]
        (folder / name).write_text("\n".join(lines), encoding="utf-8")
    full = to.text_overlap(_docs(tests), [folder], workers=1).to_dict()
    ckpt = tmp_path / "job.ckpt"
    scanned: list[str] = []
    real = fanout.scan_task

    def spy(task: sources.Task, state: fanout.ScanState, **kw: object) -> fanout.TaskResult:
        if Path(task.path).name == "c.txt" and not scanned.count("stop"):
            scanned.append("stop")
            raise KeyboardInterrupt  # the user pressed Ctrl-C during the last file
        scanned.append(Path(task.path).name)
        return real(task, state, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fanout, "scan_task", spy)
    with pytest.raises(KeyboardInterrupt):
        to.text_overlap(_docs(tests), [folder], workers=1, checkpoint=ckpt)
    assert ckpt.is_file()
    scanned.clear()
    scanned.append("stop")
    again = to.text_overlap(_docs(tests), [folder], workers=1, checkpoint=ckpt)
    assert scanned == ["stop", "c.txt"]  # a and b came from the checkpoint
    assert again.resumed_files == 2
    d = again.to_dict()
    assert d.pop("resumed_files") == 2 and full.pop("resumed_files") == 0
    assert d == full
    assert not ckpt.exists()  # removed once the scan completed


def test_checkpoint_of_a_changed_file_or_other_settings_is_not_reused(tmp_path: Path) -> None:
    tests = [" ".join(_words(16))]
    a = tmp_path / "a.txt"
    a.write_text(tests[0] + "\n", encoding="utf-8")
    ckpt = tmp_path / "job.ckpt"
    state = fanout.ScanState("alnum-lower-v1", scan.TestTable(b"", 8), None, 5)
    assert state.max_occurrences == 5
    src = sources.expand_sources([a])[0][0]
    job = fanout.job_digest(["x"])
    c = fanout.Checkpoint(ckpt, job)
    c.open()
    c.add(fanout.SourceResult(src, [], {}))
    c.close(remove=False)
    c2 = fanout.Checkpoint(ckpt, job)
    c2.load()
    assert c2.finished(src) is not None
    a.write_text(tests[0] + " more\n", encoding="utf-8")
    assert c2.finished(sources.expand_sources([a])[0][0]) is None  # size changed: rescan
    c3 = fanout.Checkpoint(ckpt, fanout.job_digest(["y"]))
    c3.load()
    assert c3.finished(src) is None  # another job's checkpoint
    with open(ckpt, "a", encoding="utf-8") as fh:
        fh.write('{"path": "cut sho')  # a crash mid-line
    c4 = fanout.Checkpoint(ckpt, job)
    c4.load()
    assert c4.finished(src) is not None


def test_deeply_nested_json_is_a_clear_error(tmp_path: Path) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    for name, body in (("deep.json", deep), ("deep.jsonl", '{"a": "ok"}\n' + deep + "\n"),
                       ("deep2.json", "[" + deep + "]")):
        p = tmp_path / name
        p.write_text(body, encoding="utf-8")
        with pytest.raises(InputError, match="nested too deeply") as err:
            to.text_overlap(_docs(["a b c d e f g h i"]), [p], workers=1)
        assert name in str(err.value)
        with pytest.raises(InputError, match="nested too deeply"):
            list(to.iter_documents(p))


def test_bad_compressed_and_parquet_inputs(tmp_path: Path) -> None:
    gz = tmp_path / "broken.txt.gz"
    gz.write_bytes(gzip.compress(b"hello world\n" * 100)[:-30])
    with pytest.raises(InputError, match="broken.txt.gz.*cannot decompress"):
        to.text_overlap(_docs(["a b c d e f g h i"]), [gz], workers=1)
    pq_ = tmp_path / "bad.parquet"
    pq_.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="bad.parquet.*Parquet"):
        to.text_overlap(_docs(["a b c d e f g h i"]), [pq_], workers=1)
    with pytest.raises(InputError, match="does not exist"):
        to.text_overlap(_docs(["a b"]), [tmp_path / "nope"], workers=1)
    latin = tmp_path / "big.txt"
    latin.write_bytes(b"ok line\n" * 10 + "caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="line 11 is not UTF-8"):
        to.text_overlap(_docs(["a b c d e f g h i"]), [latin], workers=1)


def test_resume_inside_one_large_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One big file split into byte ranges: an interrupted scan resumes at the first range that
    was not finished, and line numbers still count from the start of the file."""
    monkeypatch.setattr(sources, "BLOCK_BYTES", 4096)
    tests = [" ".join(_words(16)) for _ in range(3)]
    lines = _filler(300)
    for i, at in enumerate((20, 150, 280)):
        lines[at] = tests[i]
    big = tmp_path / "big.txt"
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    full = to.text_overlap(_docs(tests), [big], workers=1).to_dict()
    nparts = len(sources.plan_tasks(sources.expand_sources([big])[0], 0))
    assert nparts > 10
    ckpt = tmp_path / "job.ckpt"
    scanned: list[int] = []
    real = fanout.scan_task
    stop_at = [nparts // 2]

    def spy(task: sources.Task, state: fanout.ScanState, **kw: object) -> fanout.TaskResult:
        if task.part == stop_at[0]:
            stop_at[0] = -1
            raise KeyboardInterrupt
        scanned.append(task.part)
        return real(task, state, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(fanout, "scan_task", spy)
    with pytest.raises(KeyboardInterrupt):
        to.text_overlap(_docs(tests), [big], workers=1, checkpoint=ckpt)
    assert scanned == list(range(nparts // 2))
    scanned.clear()
    again = to.text_overlap(_docs(tests), [big], workers=1, checkpoint=ckpt).to_dict()
    assert scanned == list(range(nparts // 2, nparts))  # the first half came from the checkpoint
    assert again == full
    assert {m["train_locator"] for m in again["matches"]} == {"line 21", "line 151", "line 281"}


def test_test_sets_can_be_compressed_or_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    gz = tmp_path / "eval.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"q": "first question", "id": 1}\n\n{"q": "second one"}\n'))
    assert [(d.text, d.locator) for d in to.iter_documents(gz, fields=["q"])] == [
        ("first question", "line 1 field q"), ("second one", "line 3 field q")]
    pqf = tmp_path / "eval.parquet"
    pq.write_table(pa.table({"q": ["a b", None, "c d"], "k": [1, 2, 3]}), pqf)
    assert [(d.text, d.locator) for d in to.iter_documents(pqf)] == [("a b", "row 0 column q"),
                                                                     ("c d", "row 2 column q")]
    xz = tmp_path / "eval.txt.xz"
    xz.write_bytes(lzma.compress(b"one\n\ntwo\n"))
    assert [(d.text, d.locator) for d in to.iter_documents(xz)] == [("one", "line 1"), ("two", "line 3")]
