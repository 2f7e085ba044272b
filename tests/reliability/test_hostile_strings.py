"""Hostile strings: labels and file names stay inert text.

- Names that are paths (``../../x``, absolute, Windows drive, backslashes, ``.`` parts,
  control characters) are refused by the manifest reader with a message naming the
  problem, even when a hand-made file carries them (the writer refuses them too).
- ``verify_delivery`` never turns a manifest name into a path: given an in-memory
  manifest whose names point outside the delivery folder (at a real file with the quoted
  size and digest), an audit hook sees no file or folder outside the delivery opened or
  listed, and those entries are reported missing.
- Labels and names with HTML/JS and right-to-left overrides are escaped in HTML reports
  (the GUI side: tests/gui/test_hostile_strings_gui.py); control characters in a label
  are refused at export.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import overlap_desktop
from overlap_desktop.config import load_config
from overlap_desktop.core.index.indexer import index_paths
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.manifest import encode as manifest_mod
from overlap_desktop.core.manifest.encode import encode_manifest
from overlap_desktop.core.manifest.export import export_manifest
from overlap_desktop.core.manifest.format import Manifest, ManifestFile, ManifestStream
from overlap_desktop.core.manifest.parse import parse_manifest
from overlap_desktop.core.manifest.verify import verify_delivery
from overlap_desktop.core.match.compare import compare
from overlap_desktop.core.report.csv_io import write_report_csv
from overlap_desktop.core.report.formats import safe_text
from overlap_desktop.core.report.html import write_report_html
from overlap_desktop.errors import ManifestError
from overlap_desktop.paths import user_data_folder
from tests.fixtures_manifest import synthetic_fp

TRAVERSAL = {
    "../../x.mp4": r"empty, '\.' or '\.\.' component",
    "a/../../etc/passwd": r"empty, '\.' or '\.\.' component",
    "/etc/passwd": "absolute path",
    "C:/Windows/system32/x.mp4": "drive letter",
    "C:x.mp4": "drive letter",
    "..\\..\\x.mp4": "backslash",
    "a/./b.mp4": r"empty, '\.' or '\.\.' component",
    "a//b.mp4": r"empty, '\.' or '\.\.' component",
    "clip\n.mp4": "control characters",
    "clip\x1b[31m.mp4": "control characters",
}

HTML_LABEL = '</title><script>alert("label")</script><img src=x onerror=alert(1)> \u202egpj.exe'
HOSTILE_FILES = ["<svg onload=alert(1)>.mp4", "\u202egpj.exe.mp4", "a&b\"c'd.mp4", "=HYPERLINK(\"http:x\").mp4"]


def _files(names: list[str]) -> list[ManifestFile]:
    out = []
    for i, name in enumerate(names):
        out.append(ManifestFile(name=name, size=100 + i, sha256=hashlib.sha256(name.encode()).hexdigest(),
                                duration_s=10.0, streams=[ManifestStream("v:0", 1.0, synthetic_fp(i, 10))]))
    return out


@pytest.mark.parametrize("name", list(TRAVERSAL), ids=[repr(n) for n in TRAVERSAL])
def test_path_like_names_are_refused_by_reader_and_writer(name: str) -> None:
    with pytest.raises(ManifestError, match=TRAVERSAL[name]):
        encode_manifest(_files([name]), algo_id="a", prep_id="p")
    # A hand-made manifest carrying the name (writer checks switched off) is refused on read.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest_mod, "name_problem", lambda _n: None)
        mp.setattr(manifest_mod, "CONTROL_RE", __import__("re").compile(r"(?!x)x"))
        data, _root = encode_manifest(_files([name]), algo_id="a", prep_id="p")
    with pytest.raises(ManifestError, match=TRAVERSAL[name]) as info:
        parse_manifest(data)
    print(f"\nhostile name {name!r}: {info.value}")


class _Opens:
    """Audit hook: every path opened or listed while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.paths: list[str] = []
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if not self.active or event not in ("open", "os.listdir", "os.scandir", "os.walk"):
            return
        target = args[0] if args else None
        if isinstance(target, (str, bytes, os.PathLike)):
            self.paths.append(os.path.realpath(os.fsdecode(target)))


_OPENS = _Opens()  # audit hooks cannot be removed; one per process, switched on when needed


@pytest.fixture
def opens() -> Iterator[_Opens]:
    _OPENS.paths.clear()
    try:
        yield _OPENS
    finally:
        _OPENS.active = False


def test_verify_never_uses_manifest_names_as_paths(tmp_path: Path, opens: _Opens) -> None:
    secret = tmp_path / "outside" / "secret.bin"
    secret.parent.mkdir()
    secret.write_bytes(b"buyer's private bytes" * 100)
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    delivery = tmp_path / "deep" / "delivery"
    (delivery / "sub").mkdir(parents=True)
    (delivery / "sub" / "clip.mp4").write_bytes(b"delivered" * 10)
    names = ["../../outside/secret.bin", str(secret), "sub/../../../outside/secret.bin",
             "C:/outside/secret.bin", "..\\..\\outside\\secret.bin"]
    files = [ManifestFile(name=n, size=secret.stat().st_size, sha256=digest, duration_s=1.0,
                          streams=[ManifestStream("v:0", 1.0, synthetic_fp(i, 5))]) for i, n in enumerate(names)]
    m = Manifest(label="traversal", algo_id="a", prep_id="p", created=None, creator="test", root="00" * 32,
                 files=files)
    opens.active = True
    result = verify_delivery(m, delivery, threads=1)
    opens.active = False
    root = os.path.realpath(delivery)
    # The product's own modules, imported lazily on first use (which depends on what this test
    # process ran before), are read too: they are not names from the manifest.
    package = os.path.dirname(os.path.realpath(overlap_desktop.__file__)) + os.sep
    # The buyer's own data folder is read too (the known-vendors file, to say whether this
    # unsigned content was seen signed): not a name from the manifest either.
    own = os.path.realpath(user_data_folder()) + os.sep
    outside = sorted({p for p in opens.paths if not (p == root or p.startswith(root + os.sep))
                      and "site-packages" not in p and not p.startswith(sys.prefix)
                      and not p.startswith(package) and not p.startswith(own)})
    print(f"\nverify with traversal names: {len(opens.paths)} opens/listings, all inside the delivery; "
          f"statuses {[e.status for e in result.entries]}")
    assert outside == [], outside
    assert opens.paths, "the audit hook saw nothing: the test would not notice a read"
    assert [e.status for e in result.entries] == ["missing"] * len(names)
    assert [x["path"] for x in result.extra] == ["sub/clip.mp4"]


def test_control_characters_in_a_label_are_refused_at_export(tmp_path: Path, small_corpus: Path) -> None:
    index = tmp_path / "index"
    index_paths([small_corpus / "clip_0.mp4"], index=index, config=load_config(environ={}))
    with open_index(index, create=False) as idx:
        for label in ("line1\nline2", "\x1b[2J clear screen", "nul\x00byte"):
            with pytest.raises(ManifestError, match="control characters"):
                export_manifest(idx, tmp_path / "x.ovlm", label=label)
    assert not (tmp_path / "x.ovlm").exists()


@pytest.fixture(scope="module")
def hostile_report(small_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    work = tmp_path_factory.mktemp("hostile-strings")
    folder = work / "footage"
    folder.mkdir()
    for i, name in enumerate(HOSTILE_FILES):
        shutil.copy(small_corpus / f"clip_{i}.mp4", folder / name)
    index = work / "index"
    cfg = load_config(environ={})
    index_paths([folder], index=index, config=cfg)
    out = work / "offer.ovlm"
    with open_index(index, create=False) as idx:
        export_manifest(idx, out, label=HTML_LABEL)
    report = compare(out, index, config=cfg)
    html = write_report_html(report, work / "report.html")
    return html, report


def test_html_report_escapes_labels_and_names(hostile_report: tuple[Path, object]) -> None:
    html_path, report = hostile_report
    text = html_path.read_text(encoding="utf-8")
    names = [f.query_file for f in report.files]  # type: ignore[attr-defined]
    assert sorted(names) == sorted(HOSTILE_FILES)  # the report carries the hostile names...
    for raw in ("<script", "<svg onload", "<img src=x", "\u202e"):
        # ...but never as markup (the report's own inline SVG charts are plain <svg> tags).
        assert raw not in text, raw
    assert "&lt;script&gt;" in text and "&lt;svg onload=alert(1)&gt;" in text
    assert "[U+202E]" in text
    # Quotes escaped as entities; Jinja's autoescape (markupsafe) writes them as &#34; and &#39;.
    assert "a&amp;b&#34;c&#39;d.mp4" in text
    assert "<script" not in text.lower()
    print(f"\nhostile strings: HTML report {len(text)} chars; label and {len(names)} names escaped, "
          "U+202E shown as [U+202E]")


def test_csv_report_never_starts_a_cell_with_a_formula(hostile_report: tuple[Path, object],
                                                      tmp_path: Path) -> None:
    import csv

    _html, report = hostile_report
    path = write_report_csv(report, tmp_path / "report.csv")  # type: ignore[arg-type]
    with path.open(encoding="utf-8", newline="") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    assert any("HYPERLINK" in c for c in cells)
    assert not [c for c in cells if c[:1] in ("=", "+", "@")], "a cell a spreadsheet would run as a formula"
    assert not [c for c in cells if "\u202e" in c]


def test_safe_text_neutralises_invisible_and_reordering_characters() -> None:
    hostile = "a\u202eb\u2066c\u200bd\x1b[0me\u2028f\ud800g"
    out = safe_text(hostile)
    for ch in "\u202e\u2066\u200b\x1b\u2028\ud800":
        assert ch not in out
    assert out.startswith("a[U+202E]b[U+2066]c[U+200B]d[U+001B]")
    assert np.all([c.isprintable() or c == " " for c in out])
