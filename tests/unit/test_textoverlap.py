"""Text overlap (overlapy / GPT-3 appendix method)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from overlap_desktop.core.text import overlap as to
from overlap_desktop.errors import InputError, UsageError

TRAIN = ["A B A C D E F G", "A C F J K H E", "V L N M Q", "A B A C Ç T Z V E", "L M N O P"]
TEST = ["B A B A C O Q W R", "O P Q F J K H", "W E R E", "I E T Z V E L", "K E K W"]


@pytest.fixture()
def train_file(tmp_path: Path) -> Path:
    p = tmp_path / "train.txt"
    p.write_text("\n".join(TRAIN), encoding="utf-8")
    return p


def _docs(texts: list[str]) -> list[to.Document]:
    return [to.Document(t, "test", f"example {i}") for i, t in enumerate(texts)]


@pytest.mark.parametrize("workers", [1, 2])
def test_reference_example(train_file: Path, workers: int) -> None:
    """The overlapy README example: n = 4, examples 0, 1 and 3 match on the stated n-grams."""
    r = to.text_overlap(_docs(TEST), [train_file], tokenizer="whitespace-v1", min_n=1, workers=workers)
    assert r.n == 4
    assert r.matched_examples == [0, 1, 3]
    grams = {(m.example, m.ngram) for m in r.matches}
    assert grams == {(0, "A B A C"), (1, "F J K H"), (3, "T Z V E")}
    # Example 0 matches training lines 1 and 4; both occurrences are reported with positions.
    ex0 = sorted((m.train_locator, m.position, m.train_position) for m in r.matches if m.example == 0)
    assert ex0 == [("line 1", 1, 0), ("line 4", 1, 0)]


def _overlapy_n(lengths: list[int], p: float = 5.0, min_n: int = 8, max_n: int = 13) -> int:
    """overlapy 0.0.1's rule, written out literally."""
    n = sorted(lengths)[int(len(lengths) * p / 100)]
    return min(max(n, min_n), max_n)


def test_percentile_rule() -> None:
    assert to.choose_n([9, 7, 4, 7, 4], min_n=1) == 4
    assert to.choose_n([9, 7, 4, 7, 4]) == 8  # clamped up to the default minimum
    assert to.choose_n(list(range(20, 200))) == 13  # clamped down to the maximum
    rng = np.random.default_rng(3)
    for size in (1, 5, 20, 21, 99, 100, 500):
        for _ in range(20):
            lengths = rng.integers(1, 60, size=size).tolist()
            for p in (0.0, 5.0, 12.5, 50.0, 99.9):  # 100: overlapy indexes past the end; we take the last
                assert to.choose_n(lengths, percentile=p, min_n=1, max_n=1000) == _overlapy_n(lengths, p, 1, 1000)
    lengths = list(range(1, 101))
    assert to.choose_n(lengths, min_n=1, max_n=1000) == 6  # rank 5 of 1..100; interpolation said 5
    assert to.choose_n(lengths, percentile=100, min_n=1, max_n=1000) == 100


@pytest.mark.parametrize("bad", [500.0, -1.0, float("nan"), float("inf")])
def test_percentile_out_of_range_is_a_clear_error(bad: float) -> None:
    with pytest.raises(UsageError, match="--percentile must be a number from 0 to 100"):
        to.choose_n([10, 11, 12], percentile=bad)
    with pytest.raises(UsageError, match="--percentile"):
        to.text_overlap(_docs(["a b c"]), [], percentile=bad)


def test_twenty_examples_where_the_rules_differ(tmp_path: Path) -> None:
    """A 20-example test set on which overlapy's rank rule gives n = 11 and the interpolating
    rule n = 10: we must give overlapy's n and exactly overlapy's matches (4, not 5)."""
    rng = np.random.default_rng(7)
    vocab = [f"word{i}" for i in range(5000)]
    lengths = [10, 11] + rng.integers(12, 30, size=18).tolist()
    words = rng.choice(vocab, size=sum(lengths), replace=False).tolist()
    examples, k = [], 0
    for ln in lengths:
        examples.append(words[k:k + ln])
        k += ln
    assert int(np.percentile(lengths, 5)) == 10 and _overlapy_n(lengths) == 11
    filler = [f"fill{i}" for i in range(400)]
    lines = [" ".join(filler[i * 20:(i + 1) * 20]) for i in range(20)]
    for ex in (2, 5, 9, 14):  # 11 tokens of these: a match at n = 10 and n = 11
        lines[ex] = "before " + " ".join(examples[ex][1:12]) + " after"
    lines[17] = "x " + " ".join(examples[17][3:13]) + " y"  # exactly 10 tokens: only n = 10 matches
    train = tmp_path / "train.txt"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def overlapy(n: int) -> list[int]:
        grams = {tuple(ln.split()[i:i + n]) for ln in lines for i in range(len(ln.split()) - n + 1)}
        return [e for e, toks in enumerate(examples)
                if any(tuple(toks[i:i + n]) in grams for i in range(len(toks) - n + 1))]

    r = to.text_overlap(_docs([" ".join(e) for e in examples]), [train], workers=1)
    assert r.n == 11
    assert r.matched_examples == overlapy(11) == [2, 5, 9, 14]
    r10 = to.text_overlap(_docs([" ".join(e) for e in examples]), [train], workers=1, n=10)
    assert r10.matched_examples == overlapy(10) == [2, 5, 9, 14, 17]


def test_default_tokenizer_lowercases_and_strips_punctuation() -> None:
    assert to.tokenize("Pick UP the red-cup, then (place) it!") == ["pick", "up", "the", "redcup", "then",
                                                                    "place", "it"]
    assert to.tokenize("a_b  c") == ["ab", "c"]


def test_no_false_match_and_too_short_counted(tmp_path: Path) -> None:
    train = tmp_path / "t.txt"
    train.write_text("one two three four five six seven eight nine ten\n", encoding="utf-8")
    tests = ["one two three four five six seven eight", "two three four five six seven eight nine",
             "completely different words that never appear in training at all", "too short"]
    r = to.text_overlap(_docs(tests), [train], workers=1)
    assert r.n == 8
    assert r.matched_examples == [0, 1]
    assert r.too_short == 1


def test_jsonl_fields_and_hashed_form(tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"
    rows = [{"task": "pick up the blue block and put it in the bowl on the left", "id": 1},
            {"task": "open the top drawer slowly and close it again", "id": 2}]
    train.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    test = tmp_path / "eval.txt"
    test.write_text("please pick up the blue block and put it in the bowl\nwipe the table\n", encoding="utf-8")
    r = to.text_overlap([test], [train], fields=["task"], workers=1, min_n=4)
    assert r.matched_examples == [0]
    assert r.matches[0].train_locator == "line 1 field task"
    # The privacy-preserving form: the vendor ships only keyed hashes, the lab finds the same example.
    hashed = to.keyed_ngram_hashes([row["task"] for row in rows], ns=range(4, 14))
    assert all(h.dtype == np.uint64 for h in hashed.values())
    rh = to.check_hashed_overlap([test], hashed, min_n=4)
    assert rh.matched_examples == [0]
    # Hashes are keyed by n and tokenizer: another tokenizer's hashes never match.
    other = to.keyed_ngram_hashes([row["task"] for row in rows], tokenizer="whitespace-v1", ns=[4])
    assert not set(other[4].tolist()) & set(hashed[4].tolist())


def test_bad_inputs_give_clear_errors(tmp_path: Path) -> None:
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(InputError, match="binary"):
        list(to.iter_documents(binary))
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 ok\n".encode("latin-1"))
    with pytest.raises(InputError, match="line 1 is not UTF-8"):
        list(to.iter_documents(latin))
    badjson = tmp_path / "bad.jsonl"
    badjson.write_text('{"task": "x"}\n{nope\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        list(to.iter_documents(badjson))
    with pytest.raises(InputError, match="unknown tokenizer"):
        to.text_overlap(_docs(["a b"]), [], tokenizer="nope")


def test_huge_line_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(to, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "huge.txt"
    p.write_text("ok line\n" + "x" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2 is longer"):
        list(to.iter_documents(p))


def test_collision_cannot_fake_a_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if every token hashed alike, matches are confirmed on the tokens themselves."""
    from overlap_desktop.core.text import scan

    monkeypatch.setattr(scan, "_token_hashes", lambda a, starts, lens, raw: np.full(starts.size, 7, np.uint64))
    train = tmp_path / "t.txt"
    train.write_text("a b c d e f g h i\nz y x w v u t s r\n", encoding="utf-8")
    r = to.text_overlap(_docs(["z y x w v u t s r", "q q q q q q q q q"]), [train], workers=1)
    assert r.matched_examples == [0]
    assert {m.train_locator for m in r.matches} == {"line 2"}


def test_lerobot_tasks(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text("{}", encoding="utf-8")
    (root / "meta" / "tasks.jsonl").write_text(
        json.dumps({"task_index": 0, "task": "stack the green cup on top of the red cup please"}) + "\n",
        encoding="utf-8")
    docs = list(to.iter_documents(root))
    assert [d.text for d in docs] == ["stack the green cup on top of the red cup please"]
