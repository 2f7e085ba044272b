"""Hostile input at the command line (issue 21, items 7, 9 and 10).

- Piping any command into ``head`` once ended in "internal error (this is a bug)"; now the
  command finishes quietly with its real exit status (a ``--fail-over`` gate still trips).
- Local file names holding ESC, BEL or a newline are shown escaped by ``index``, ``files``
  and ``audit`` (names from manifests already were).
- ``verify -o`` with a delivered file whose name is not UTF-8 writes its result (the name
  with ``\\xNN`` escapes) instead of an internal error and a leftover ``.tmp``.
- A folder the indexer cannot list is a failure in the summary and ``--json`` (exit 4),
  and the files it holds are never forgotten; ``--forget-missing`` on an empty folder (an
  unmounted disk) is refused unless ``--force``.
- A 0-byte PNG is "empty image", not "unsupported format '.png' (supported: ... png ...)".
- ``inspect`` shows zero-width space, BOM and U+2028 from a manifest as ``[U+XXXX]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.format import ManifestFile, ManifestStream
from tests.fixtures_manifest import synthetic_fp
from tests.reliability.lab21 import Lab, run_cli

ROOT = Path(__file__).resolve().parents[2]
#: Characters a hostile local name may carry to rewrite a terminal or forge output lines.
RAW = ("\x1b", "\x07", "\u202e")


def _closed_pipe_run(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``overlap ARGV`` with stdout a pipe whose reader has already gone (what
    ``| head`` leaves once it has read its lines): every write gets EPIPE."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-m", "overlap_desktop", *argv], stdout=write_fd,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, timeout=120)
    finally:
        os.close(write_fd)
    return proc.returncode, proc.stderr


def test_piping_into_head_is_not_a_bug(lab21: Lab, tmp_path: Path) -> None:
    outcomes = {}
    for argv, expect in ((["config"], 0), (["files", "--index", str(lab21.index)], 0),
                         (["compare", str(lab21.manifest), "--index", str(lab21.index), "--fail-over", "20", "-q",
                           "-v"], 3)):
        code, err = _closed_pipe_run(argv, tmp_path)
        outcomes[argv[0]] = code
        assert code == expect, (argv, code, err)
        for bad in ("internal error", "Traceback", "Exception ignored", "BrokenPipe"):
            assert bad not in err, (argv, err)
    print(f"\nclosed pipe: exit statuses {outcomes} (compare's --fail-over gate still trips)")


def _hostile_folder(lab: Lab, root: Path) -> Path:
    folder = root / "footage\x1b[2J"
    folder.mkdir()
    shutil.copy(lab.clip, folder / "evil\x1b]0;owned\x07name.mp4")
    shutil.copy(lab.clip, folder / "two\nFORGED: 100% owned.mp4")
    (folder / "bad\x1b[31mred\u202egpj.mp4").write_bytes(b"")  # refused: its name is in the reason list
    return folder


def test_local_names_are_escaped_on_the_terminal(lab21: Lab, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = _hostile_folder(lab21, tmp_path)
    index = tmp_path / "index"
    printed = []
    code, out, err = run_cli(["index", "--index", index, folder], capsys)
    assert code == 4, err
    printed.append(out + err)
    code, out, err = run_cli(["index", "--index", index, folder, "--json"], capsys)
    printed.append(err)  # JSON escapes by itself; stderr carries the progress lines
    for argv in (["files"], ["files", "--errors"]):
        code, out, err = run_cli([*argv, "--index", index], capsys)
        assert code == 0, err
        printed.append(out + err)
    manifest = tmp_path / "offer.ovlm"
    code, _, err = run_cli(["export", "-q", "--index", index, "-o", manifest], capsys)
    assert code == 0, err
    code, out, err = run_cli(["audit", lab21.manifest, "--sample", folder, "--index", index], capsys)
    printed.append(out + err)
    text = "\n".join(printed)
    for ch in RAW:
        assert ch not in text, (repr(ch), text)
    assert not any(line.startswith("FORGED") for line in text.splitlines()), text
    assert "[U+001B]" in text and "[U+000A]FORGED" in text and "[U+0007]" in text
    print(f"\nescaped local names: {sorted({ln.strip()[:90] for ln in text.splitlines() if '[U+' in ln})[:3]}")


def test_verify_output_with_a_non_utf8_delivered_name(lab21: Lab, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    if sys.platform != "linux":
        pytest.skip("non-UTF-8 file names exist on Linux file systems only")
    delivery = tmp_path / "delivery"
    delivery.mkdir()
    shutil.copy(lab21.clip, delivery / "clip.mp4")
    with open(os.path.join(os.fsencode(delivery), b"\xff\xfe-extra.mp4"), "wb") as fh:
        fh.write(b"not in the manifest")
    out = tmp_path / "result.json"
    code, stdout, err = run_cli(["verify", "-q", lab21.manifest, "--data", delivery, "-o", out,
                                 "--html", tmp_path / "result.html"], capsys)
    # Every quoted file is present and exact; the extra file is listed, not a failure (issue 16).
    assert code == 0 and "internal error" not in err, (code, err)
    assert "[U+DCFF][U+DCFE]-extra.mp4" in (tmp_path / "result.html").read_text(encoding="utf-8")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [x["path"] for x in data["extra"]] == ["\\xff\\xfe-extra.mp4"], data["extra"]
    assert sorted(os.listdir(tmp_path)) == ["delivery", "result.html", "result.json"]  # no .tmp left behind
    assert "EXTRA" in stdout and "-extra.mp4" in stdout


def test_an_unlistable_folder_is_reported_and_never_forgotten(lab21: Lab, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "footage"
    (root / "open").mkdir(parents=True)
    (root / "locked").mkdir()
    shutil.copy(lab21.clip, root / "open" / "a.mp4")
    shutil.copy(lab21.clip, root / "locked" / "b.mp4")
    index = tmp_path / "index"
    code, _, err = run_cli(["index", "-q", "--index", index, root], capsys)
    assert code == 0, err
    # Tests run as root, for whom chmod 000 changes nothing: refuse the listing the way the
    # OS does for another user.
    real_scandir = os.scandir
    locked = str(root / "locked")

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == locked:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", locked)
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = run_cli(["index", "-q", "--index", index, root, "--forget-missing"], capsys)
    assert code == 4 and "cannot list this folder: Permission denied" in out, (code, out, err)
    code, out, err = run_cli(["index", "-q", "--index", index, root, "--json"], capsys)
    failed = json.loads(out)["failed"]
    assert any("locked" in str(f) and "cannot list" in str(f) for f in failed), failed
    monkeypatch.undo()
    code, out, _ = run_cli(["files", "--index", index], capsys)
    assert "2 ok" in out, out  # b.mp4 was not forgotten


def test_forget_missing_refuses_an_empty_root(lab21: Lab, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    shutil.copy(lab21.clip, mount_point / "a.mp4")
    index = tmp_path / "index"
    assert run_cli(["index", "-q", "--index", index, mount_point], capsys)[0] == 0
    (mount_point / "a.mp4").rename(tmp_path / "a.mp4")  # the disk is "unmounted": an empty folder
    code, _, err = run_cli(["index", "-q", "--index", index, mount_point, "--forget-missing"], capsys)
    assert code == 2 and "is empty but the index holds 1 file" in err and "--force" in err, err
    assert "1 ok" in run_cli(["files", "--index", index], capsys)[1]
    code, out, err = run_cli(["index", "-q", "--index", index, mount_point, "--forget-missing", "--force"],
                             capsys)
    assert code == 0 and "forgotten" in out, (out, err)


def test_an_empty_png_says_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import av
    import numpy as np

    seq = tmp_path / "camera"
    seq.mkdir()
    codec = av.CodecContext.create("png", "w")
    codec.width, codec.height, codec.pix_fmt = 64, 48, "rgb24"
    for i in range(6):
        img = np.random.default_rng(i).integers(0, 255, (48, 64, 3)).astype(np.uint8)
        packets = codec.encode(av.VideoFrame.from_ndarray(img, format="rgb24"))
        (seq / f"{i:04d}.png").write_bytes(b"".join(bytes(p) for p in packets))
    (seq / "0000.png").write_bytes(b"")
    code, out, err = run_cli(["index", "-q", "--index", tmp_path / "index", seq], capsys)
    assert code == 4 and "0000.png: empty image (0 bytes)" in out, (out, err)
    assert "unsupported" not in out


def test_inspect_escapes_invisible_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "a\u200bb\ufeffc\u2028d\u2066e.mp4"
    files = [ManifestFile(name=name, size=1, sha256="00" * 32, duration_s=10.0,
                          streams=[ManifestStream("v:0", 1.0, synthetic_fp(1, 10))])]
    data, _root = encode_manifest(files, algo_id="a", prep_id="p", label="lab\u200bel\u2028x")
    path = tmp_path / "zw.ovlm"
    path.write_bytes(data)
    code, out, err = run_cli(["inspect", path, "--files"], capsys)
    assert code == 0, err
    for ch in ("\u200b", "\ufeff", "\u2028", "\u2066"):
        assert ch not in out, repr(ch)
    assert "a[U+200B]b[U+FEFF]c[U+2028]d[U+2066]e.mp4" in out and "lab[U+200B]el[U+2028]x" in out, out
