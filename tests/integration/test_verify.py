"""``overlap verify``: exact delivery, a flipped byte in a large file, missing, extra,
renamed files under --anonymize-paths, hostile names, cancel and the JSON result."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from overlap_desktop import api
from overlap_desktop.cli.main import main
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.export import write_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from overlap_desktop.core.manifest.verify import hash_file, verify_delivery
from overlap_desktop.errors import Cancelled, InputError
from tests.fixtures_manifest import ALGO, PREP, reroot, sparse_file, synthetic_fp

BIG = 6 * 1024 * 1024 + 123  # several hashing chunks, sparse on disk


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_delivery(root: Path) -> dict[str, Path]:
    files = {
        "big/recording.mcap": sparse_file(root / "big" / "recording.mcap", BIG,
                                          {0: b"MCAP", 3_000_000: b"middle", BIG - 4: b"end!"}),
        "ep_000.mp4": root / "ep_000.mp4",
        "ep_001.mp4": root / "ep_001.mp4",
        "notes/readme.txt": root / "notes" / "readme.txt",
    }
    files["ep_000.mp4"].write_bytes(b"\x00\x00\x00\x18ftypisom" + bytes(range(256)) * 40)
    files["ep_001.mp4"].write_bytes(b"\x00\x00\x00\x18ftypisom" + bytes(range(255, -1, -1)) * 41)
    files["notes/readme.txt"].parent.mkdir(parents=True, exist_ok=True)
    files["notes/readme.txt"].write_text("hello\n")
    return files


def quote(files: dict[str, Path], out: Path, *, anonymized: bool = False) -> Path:
    entries = []
    for i, (name, p) in enumerate(sorted(files.items()), 1):
        shown = f"file-{i:06d}{p.suffix}" if anonymized else name
        entries.append(ManifestFile(shown, p.stat().st_size, _digest(p), 10.0,
                                    [ManifestStream("v:0", 1.0, synthetic_fp(i, 10))]))
    write_manifest(entries, out, algo_id=ALGO, prep_id=PREP, label="delivery test", anonymized=anonymized)
    return out


@pytest.fixture(scope="module")
def delivered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("verify")
    data = base / "data"
    files = make_delivery(data)
    return data, quote(files, base / "offer.ovlm"), quote(files, base / "anon.ovlm", anonymized=True)


def copy_delivery(data: Path, dest: Path) -> Path:
    shutil.copytree(data, dest)
    return dest


def test_hash_file_streams_exactly(delivered: tuple[Path, Path, Path]) -> None:
    data, _, _ = delivered
    p = data / "big" / "recording.mcap"
    seen: list[int] = []
    assert hash_file(p, on_bytes=seen.append) == _digest(p)
    assert sum(seen) == BIG and max(seen) == 1 << 20


def test_exact_delivery(delivered: tuple[Path, Path, Path], tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    data, offer, anon = delivered
    progress: list[float] = []
    r = verify_delivery(offer, data, threads=2, progress=lambda p: progress.append(p.done))
    assert r.ok and r.matched == 4 and not r.extra and not any(e.renamed for e in r.entries)
    assert progress[-1] == r.bytes_hashed and r.bytes_hashed == sum(p.stat().st_size for p in data.rglob("*")
                                                                     if p.is_file())
    out = tmp_path / "result.json"
    assert main(["verify", str(offer), "--data", str(data), "-q", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "overlap.verify/2" and doc["ok"] is True and doc["summary"]["matched"] == 4
    assert doc["verdict"] == "exact" and doc["exact"] is True
    assert "Every quoted file is present and exact (4 files)." in capsys.readouterr().out
    assert verify_delivery(anon, data).ok  # anonymised: matched on size + digest


def test_one_flipped_byte_in_a_large_file(delivered: tuple[Path, Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data, offer, anon = delivered
    d = copy_delivery(data, tmp_path / "d")
    p = d / "big" / "recording.mcap"
    with open(p, "r+b") as fh:
        fh.seek(5_000_001)
        fh.write(b"\x01")
    r = verify_delivery(offer, d)
    (e,) = [e for e in r.entries if e.status != "matched"]
    assert e.name == "big/recording.mcap" and e.status == "altered" and e.reason == "content differs"
    assert e.delivered_size == BIG and e.delivered_sha256 != e.sha256 and not r.ok and not r.extra
    assert main(["verify", str(offer), "--data", str(d), "-q"]) == 3
    assert "ALTERED  big/recording.mcap: content differs" in capsys.readouterr().out
    # Anonymised: the altered file cannot be tied to its entry, so it is missing + extra.
    ra = verify_delivery(anon, d)
    assert ra.missing == 1 and [x["path"] for x in ra.extra] == ["big/recording.mcap"]


def test_size_change_missing_and_extra(delivered: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, offer, _ = delivered
    d = copy_delivery(data, tmp_path / "d")
    (d / "ep_001.mp4").unlink()
    (d / "notes" / "readme.txt").write_text("hello, edited\n")
    (d / "bonus.mp4").write_bytes(b"not quoted")
    r = verify_delivery(offer, d)
    status = {e.name: (e.status, e.reason) for e in r.entries}
    assert status == {"big/recording.mcap": ("matched", ""), "ep_000.mp4": ("matched", ""),
                      "ep_001.mp4": ("missing", ""), "notes/readme.txt": ("altered", "size differs")}
    assert r.extra == [{"path": "bonus.mp4", "size": 10}]
    assert main(["verify", str(offer), "--data", str(d), "-q"]) == 3


def test_renamed_files(delivered: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, offer, anon = delivered
    d = copy_delivery(data, tmp_path / "d")
    (d / "ep_000.mp4").rename(d / "episode-zero.mp4")
    (d / "big" / "recording.mcap").rename(d / "rec.mcap")
    r = verify_delivery(offer, d)
    renamed = {e.name: e.delivered for e in r.entries if e.renamed}
    assert renamed == {"ep_000.mp4": "episode-zero.mp4", "big/recording.mcap": "rec.mcap"}
    assert r.matched == 4 and not r.extra and r.ok  # same bytes under new names: still the quote
    ra = verify_delivery(anon, d)
    assert ra.ok and ra.matched == 4 and not any(e.renamed for e in ra.entries)
    assert main(["verify", str(anon), "--data", str(d), "-q"]) == 0


def test_swapped_contents_are_not_double_counted(delivered: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, offer, _ = delivered
    d = copy_delivery(data, tmp_path / "d")
    # ep_000.mp4 now holds ep_001's bytes and ep_001.mp4 is gone.
    shutil.move(d / "ep_001.mp4", d / "ep_000.mp4")
    r = verify_delivery(offer, d)
    st = {e.name: e.status for e in r.entries}
    assert st["ep_001.mp4"] == "matched" and st["ep_000.mp4"] == "missing"
    assert sum(1 for e in r.entries if e.delivered == "ep_000.mp4") == 1 and not r.extra


def test_hostile_names_are_never_used_as_paths(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"secret")
    data = tmp_path / "data"
    data.mkdir()
    ok = "x" * len("../secret.bin")
    raw, _ = encode_manifest([ManifestFile(ok, 6, _digest(outside), 1.0, [])], algo_id=ALGO, prep_id=PREP)
    hostile = tmp_path / "hostile.ovlm"
    hostile.write_bytes(reroot(raw.replace(ok.encode(), b"../secret.bin")))
    assert main(["verify", str(hostile), "--data", str(data), "-q"]) == 4  # refused by the reader


def test_refusals_and_cancel(delivered: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, offer, _ = delivered
    with pytest.raises(InputError):
        verify_delivery(offer, tmp_path / "absent")
    assert main(["verify", str(offer), "--data", str(tmp_path / "absent"), "-q"]) == 4
    bad = tmp_path / "bad.ovlm"
    bad.write_bytes(offer.read_bytes()[:-5])
    assert main(["verify", str(bad), "--data", str(data), "-q"]) == 4
    with pytest.raises(Cancelled):
        verify_delivery(offer, data, cancel=lambda: True)


CLUTTER = ["Thumbs.db", "desktop.ini", ".DS_Store", "._ep_000.mp4", ".delivery-complete",
           "big/.hidden-marker", ".Trashes/501/x.bin", "notes/THUMBS.DB"]


def _add_clutter(d: Path) -> None:
    for i, rel in enumerate(CLUTTER):
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * (i + 3))
    # Same size as a quoted file, so it is read and hashed, and still not a problem.
    (d / "big" / "._recording.mcap").write_bytes((d / "ep_000.mp4").read_bytes()[::-1])


def test_os_clutter_does_not_make_a_delivery_differ(delivered: tuple[Path, Path, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data, offer, anon = delivered
    d = copy_delivery(data, tmp_path / "d")
    _add_clutter(d)
    r = verify_delivery(offer, d)
    assert r.complete and r.exact and r.ok and r.verdict == "exact" and not r.extra
    assert sorted(x["path"] for x in r.ignored) == sorted(CLUTTER + ["big/._recording.mcap"])
    assert "9 system files (Thumbs.db, .DS_Store and the like) ignored" in api.verify_verdict(r)
    assert main(["verify", str(offer), "--data", str(d), "-q", "--strict"]) == 0
    assert main(["verify", str(anon), "--data", str(d), "-q"]) == 0
    assert "Every quoted file is present and exact" in capsys.readouterr().out


def test_extras_are_listed_but_only_altered_or_missing_files_fail(delivered: tuple[Path, Path, Path],
                                                                  tmp_path: Path) -> None:
    data, offer, _ = delivered
    d = copy_delivery(data, tmp_path / "d")
    (d / "bonus.mp4").write_bytes(b"not quoted")
    r = verify_delivery(offer, d)
    assert r.complete and not r.exact and r.verdict == "complete"
    assert r.extra == [{"path": "bonus.mp4", "size": 10}]
    assert api.verify_verdict(r) == ("Every quoted file is present and exact (4 files). "
                                     "1 file not in the quote is listed.")
    assert main(["verify", str(offer), "--data", str(d), "-q"]) == 0
    assert main(["verify", str(offer), "--data", str(d), "-q", "--strict"]) == 3
    (d / "ep_001.mp4").unlink()
    r = verify_delivery(offer, d)
    assert r.verdict == "incomplete" and not r.ok
    assert api.verify_verdict(r).startswith("Quoted files are altered or missing: 1 missing; 3 of 4 files")
    assert main(["verify", str(offer), "--data", str(d), "-q"]) == 3


def test_a_quoted_hidden_file_is_still_checked(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / ".calibration").mkdir(parents=True)
    f = data / ".calibration" / "cam.yaml"
    f.write_text("fx: 500\n")
    offer = quote({".calibration/cam.yaml": f}, tmp_path / "o.ovlm")
    assert verify_delivery(offer, data).verdict == "exact"
    f.write_text("fx: 501\n")
    r = verify_delivery(offer, data)
    assert r.verdict == "incomplete" and r.entries[0].status == "altered"


def test_html_verification_report(delivered: tuple[Path, Path, Path], tmp_path: Path) -> None:
    data, offer, _ = delivered
    d = copy_delivery(data, tmp_path / "d")
    _add_clutter(d)
    (d / "notes" / "readme.txt").write_text("hello, edited\n")
    out = tmp_path / "check.html"
    assert main(["verify", str(offer), "--data", str(d), "-q", "--html", str(out), "-o",
                 str(tmp_path / "c.json")]) == 3
    html = out.read_text(encoding="utf-8")
    r = verify_delivery(offer, d)
    assert "Quoted files are altered or missing: 1 altered" in html
    assert f'<code id="seal">{r.root}</code>' in html and "user-select: all" in html
    assert "notes/readme.txt" in html and "size differs" in html and "System files ignored" in html
    assert "<script" not in html.lower() and not re.search(r"\d{4}-\d\d-\d\dT\d\d:", html)
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["verdict"] == "incomplete" and doc["summary"]["ignored"] == 9


@pytest.mark.parametrize(("rel", "clutter"), [
    ("Thumbs.db", True), ("a/b/desktop.ini", True), (".DS_Store", True), ("x/._clip.mp4", True),
    (".marker", True), ("$RECYCLE.BIN/S-1/x", True), ("System Volume Information/y", True),
    ("ep.mp4", False), ("thumbs.db.mp4", False), ("data/ep_.mp4", False), ("a.b/c.mp4", False),
])
def test_is_clutter(rel: str, clutter: bool) -> None:
    assert api.is_clutter(rel) is clutter
