"""Annotation n-grams and episodes through the whole chain, in-process via ``main``:
index -> export (--annotations) -> inspect -> compare (--eval) -> JSON / HTML / CSV,
on a synthetic index (fast) and on real LeRobot-style datasets (decoded video)."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overlap_desktop.cli.main import main
from overlap_desktop.core.index import store as index_mod
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest.export import export_manifest
from overlap_desktop.core.manifest.parse import read_manifest
from overlap_desktop.core.report.json_io import load_report_json
from overlap_desktop.core.types import StreamInfo
from overlap_desktop.errors import ExitCode, InputError
from tests.fixtures_manifest import ALGO, PREP, synthetic_fp
from tests.fixtures_recordings import write_lerobot

VENDOR_TASKS = ["pick up the red cup and place it on the wooden shelf next to the plate",
                "open the top drawer of the cabinet slowly with the left gripper arm please"]
EVAL = ["Please pick up the red cup and place it on the wooden shelf, carefully.",
        "<script>alert(1)</script> open the top drawer of the cabinet slowly with the left gripper",
        "fold the blue towel in half twice and put it in the basket on the floor",
        "too short"]


def run(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main([*argv, "-q"])
    return code, buf.getvalue()


@pytest.fixture()
def fake_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_mod, "_current_ids", lambda: (ALGO, PREP))


def _record(idx: Any, path: Path, seed: int, episodes: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(np.random.default_rng(seed).bytes(2000 + seed))
    st = path.stat()
    fp = synthetic_fp(seed, 160, fps=4.0)
    fp.usable[:] = True
    fp.indeterminate = []
    with idx.writer():
        idx.record_file(path, size=st.st_size, mtime_ns=st.st_mtime_ns,
                        sha256=hashlib.sha256(path.read_bytes()).hexdigest(), reader="fake",
                        streams=[(StreamInfo("v:0", duration_s=40.0, extra={"episodes": episodes}), fp)])


@pytest.fixture()
def offer(tmp_path: Path, fake_ids: None) -> dict[str, Path]:
    """One indexed 40 s stream with two episodes (v2-style open end on the last one), its
    annotations and an evaluation set."""
    ix = tmp_path / "ix"
    with open_index(ix) as idx:
        _record(idx, tmp_path / "data" / "a.mp4", 3, [[40, 0.0, 12.0], [41, 12.0, float("inf")]])
        _record(idx, tmp_path / "data" / "b.mp4", 4, [])
    ann = tmp_path / "tasks.jsonl"
    ann.write_text("".join(json.dumps({"task": t, "id": str(i)}) + "\n" for i, t in enumerate(VENDOR_TASKS)))
    ev = tmp_path / "eval.txt"
    ev.write_text("\n".join(EVAL) + "\n", encoding="utf-8")
    return {"root": tmp_path, "ix": ix, "ann": ann, "eval": ev}


def test_index_keeps_the_readers_episode_spans(offer: dict[str, Path]) -> None:
    with open_index(offer["ix"]) as idx:
        sid = next(sid for sid, _fid, _key in idx.stream_ids())
        assert idx.stream_details(sid).extra["episodes"][0] == [40, 0.0, 12.0]


def test_export_inspect_compare_with_annotations_and_episodes(offer: dict[str, Path]) -> None:
    root, ix = offer["root"], offer["ix"]
    manifest = root / "offer.ovlm"
    code, out = run(["export", "-o", str(manifest), "--fps", "4", "--index", str(ix),
                     "--annotations", str(offer["ann"]), "--annotation-field", "task"])
    assert code == 0
    m = read_manifest(manifest)
    assert m.text_ngrams is not None and m.text_ngrams.documents == 2
    assert m.text_ngrams.ns == list(range(8, 14))
    assert b"wooden" not in manifest.read_bytes()  # hashes only, never the text
    eps = {f.name: f.streams[0].episodes for f in m.files}
    # The open end is cut at the stream's end.
    assert eps == {"a.mp4": [(40, 0.0, 12.0), (41, 12.0, 40.0)], "b.mp4": []}

    # Deterministic like every export; anonymised keys keep their episodes.
    again = root / "again.ovlm"
    assert run(["export", "-o", str(again), "--fps", "4", "--index", str(ix), "--annotations", str(offer["ann"]),
                "--annotation-field", "task"])[0] == 0
    assert again.read_bytes() == manifest.read_bytes()
    anon = root / "anon.ovlm"
    assert run(["export", "-o", str(anon), "--fps", "4", "--index", str(ix), "--anonymize-paths"])[0] == 0
    anon_eps = sorted(s.episodes for f in read_manifest(anon).files for s in f.streams)
    assert anon_eps == [[], [(40, 0.0, 12.0), (41, 12.0, 40.0)]]

    code, out = run(["inspect", str(manifest)])
    assert code == 0 and "annotations  keyed n-gram hashes of 2 texts (alnum-lower-v1; n=8: " in out
    assert "episodes     2 episode spans on 1 streams" in out

    rep = root / "r"
    code, out = run(["compare", str(manifest), "--index", str(ix), "--floor", "2",
                     "--eval", str(offer["eval"]),
                     "-o", str(rep.with_suffix(".json")), "--html", str(rep.with_suffix(".html")),
                     "--csv", str(rep.with_suffix(".csv"))])
    assert code == 0
    assert "2 of 4 of your evaluation examples share an n-gram with the vendor's annotations" in out
    assert "offered episode 40, 00:00–00:12 matches your episode 40, 00:00–00:12" in out

    data = json.loads(rep.with_suffix(".json").read_text(encoding="utf-8"))
    block = data["text_overlap"]
    assert block["status"] == "checked" and block["examples"] == 4 and block["matched"] == 2
    assert [e["locator"] for e in block["matched_examples"]] == ["line 1", "line 2"]
    assert block["matched_examples"][1]["text"].startswith("<script>")  # JSON keeps the exact text
    fa = next(f for f in data["files"] if f["query_file"] == "a.mp4")
    labels = [e["label"] for e in fa["episodes"]]
    assert labels == ["offered episode 40, 00:00–00:12 matches your episode 40, 00:00–00:12",
                      "offered episode 41, 00:00–00:28 matches your episode 41, 00:00–00:28"]
    assert fa["episodes"][1]["offered"]["file_start_s"] == 12.0 and fa["episodes"][1]["segment"] == 0

    # JSON round trip keeps both blocks.
    back = load_report_json(rep.with_suffix(".json"))
    assert back.text_overlap == block
    assert [e["label"] for f in back.files for e in f.episodes] == labels

    html = rep.with_suffix(".html").read_text(encoding="utf-8")
    assert "2 of 4 of your evaluation examples share an n-gram with the vendor&#39;s annotations" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "offered episode 41, 00:00–00:28 matches your episode 41, 00:00–00:28" in html

    with open(rep.with_suffix(".csv"), encoding="utf-8-sig", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "text-overlap"]
    assert [r["query_stream"] for r in rows] == ["line 1", "line 2"]
    assert "wooden shelf" in rows[0]["description"]

    # Two offers: episodes on both sides, the second named as such.
    code, _ = run(["compare-offers", str(manifest), str(manifest), "--floor", "2", "-o", str(root / "o.json")])
    assert code == 0
    offers = json.loads((root / "o.json").read_text(encoding="utf-8"))
    assert "offered episode 40, 00:00–00:12 matches offer B episode 40, 00:00–00:12" in [
        e["label"] for f in offers["files"] for e in f["episodes"]]


def test_eval_without_annotation_hashes_and_bad_eval_input(offer: dict[str, Path]) -> None:
    root, ix = offer["root"], offer["ix"]
    plain = root / "plain.ovlm"
    export_manifest(ix, plain, fps=4.0)
    code, out = run(["compare", str(plain), "--index", str(ix), "--eval", str(offer["eval"]),
                     "-o", str(root / "p.json")])
    assert code == 0 and "the manifest carries no annotation n-gram hashes" in out
    assert json.loads((root / "p.json").read_text())["text_overlap"]["status"] == "no-annotations"
    bad = root / "bad.txt"
    bad.write_bytes(b"\x00\x01binary")
    with_hashes = root / "h.ovlm"
    export_manifest(ix, with_hashes, fps=4.0, annotations=[offer["ann"]])
    code, _ = run(["compare", str(with_hashes), "--index", str(ix), "--eval", str(bad)])
    assert code == ExitCode.INPUT_REFUSED
    with pytest.raises(InputError, match="binary"):
        export_manifest(ix, root / "x.ovlm", annotations=[bad])


# --------------------------------------------------------------------------- real LeRobot datasets


def test_lerobot_episodes_end_to_end(lerobot_dataset: Path, tmp_path: Path) -> None:
    """Owned: episodes 0, 1, 2 (3 + 2 + 3 s). Offered: a dataset holding only episodes 1 and 2,
    so offered file time 0-2 s is owned file time 3-5 s."""
    offered = write_lerobot(tmp_path / "offered", episodes=((1, 2.0), (2, 3.0)))
    tasks = json.dumps({"task_index": 0, "task": VENDOR_TASKS[0]})
    (offered / "meta" / "tasks.jsonl").write_text(tasks + "\n")
    lab, vendor = tmp_path / "lab", tmp_path / "vendor"
    assert run(["index", str(lerobot_dataset), "--index", str(lab)])[0] == 0
    assert run(["index", str(offered), "--index", str(vendor)])[0] == 0
    manifest = tmp_path / "offer.ovlm"
    assert run(["export", "-o", str(manifest), "--fps", "4", "--index", str(vendor),
                "--annotations", str(offered)])[0] == 0
    m = read_manifest(manifest)
    assert m.text_ngrams is not None and m.text_ngrams.documents == 1  # meta/tasks.jsonl
    stream = m.files[0].streams[0]
    assert [e[0] for e in stream.episodes] == [1, 2] and stream.episodes[0][1:] == (0.0, 2.0)
    code, out = run(["compare", str(manifest), "--index", str(lab), "--floor", "1",
                     "-o", str(tmp_path / "r.json")])
    assert code == 0
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    labels = [e["label"] for f in data["files"] for e in f["episodes"] if not e["below_floor"]]
    assert labels, data["files"]
    pairs = {tuple(int(x) for x in re.findall(r"episode (\d+)", lab_)) for lab_ in labels}
    # Every offered episode is mapped to the owned episode with the same footage, never another one.
    assert pairs == {(1, 1), (2, 2)}, labels
    # The camera is named on both sides (issue 32: "episode 41, cam_high, 00:12–00:31").
    want = (r"offered episode 2, (observation\.images\.\w+), 00:0[01]–00:0[23] "
            r"matches your episode 2, \1, 00:0[01]–00:0[23]")
    assert any(re.fullmatch(want, x) for x in labels), labels
    assert "matches your episode" in out
