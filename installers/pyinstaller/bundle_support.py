"""Build-time helpers for ``overlap.spec``: version, licence staging, Windows version info.

Imported by the spec (PyInstaller executes the spec with its folder on ``sys.path``)
and by ``installers/build.py``. Standard library only, plus ``importlib.metadata``
queries about the build environment; nothing here ships in the bundle.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

__all__ = ["CONDITIONAL", "DROP_PREFIXES", "OTHER_EXCLUDES", "QT_EXCLUDES", "collected_top_level", "excludes",
           "keep", "package_imports", "python_licence", "read_version", "scipy_needed", "stage_licences",
           "write_version_info"]

#: Qt modules the GUI does not use. Excluding their Python bindings keeps PyInstaller's
#: Qt hooks from collecting the matching Qt libraries and plugins (QML alone is tens of MB).
#: QtOpenGL is excluded too although pyqtgraph imports it when it loads: it gets
#: rthook_no_qtopengl.py's stand-in (9 MB saved). Not excluded although unused by our code:
#: QtOpenGLWidgets (pyqtgraph subclasses QOpenGLWidget at import; 0.2 MB) and QtSvg (icons).
#: tests/integration/test_bundle.py imports every module of the product with these names
#: blocked, so a needed one cannot slip in here.
QT_EXCLUDES: tuple[str, ...] = tuple(f"PySide6.{m}" for m in (
    "Qt3DAnimation", "Qt3DCore", "Qt3DExtras", "Qt3DInput", "Qt3DLogic", "Qt3DRender",
    "QtAxContainer", "QtBluetooth", "QtCharts", "QtConcurrent", "QtDataVisualization", "QtDesigner",
    "QtGraphs", "QtGraphsWidgets", "QtHelp", "QtHttpServer", "QtLocation", "QtMultimedia",
    "QtMultimediaWidgets", "QtNetwork", "QtNetworkAuth", "QtNfc", "QtOpenGL", "QtPdf",
    "QtPdfWidgets", "QtPositioning", "QtPrintSupport", "QtQml", "QtQuick", "QtQuick3D",
    "QtQuickControls2", "QtQuickTest", "QtQuickWidgets", "QtRemoteObjects", "QtScxml", "QtSensors",
    "QtSerialBus", "QtSerialPort", "QtSpatialAudio", "QtSql", "QtStateMachine", "QtSvgWidgets",
    "QtTest", "QtTextToSpeech", "QtUiTools", "QtWebChannel", "QtWebEngineCore", "QtWebEngineQuick",
    "QtWebEngineWidgets", "QtWebSockets", "QtWebView", "QtXml",
))

#: Other modules that are importable in a developer environment but never used by the
#: product (test tools, notebooks, other Qt bindings, optional pyqtgraph back-ends).
OTHER_EXCLUDES: tuple[str, ...] = (
    "tkinter", "_tkinter", "IPython", "jupyter_client", "ipykernel", "matplotlib", "pytest", "_pytest",
    "pytestqt", "hypothesis", "PyQt5", "PyQt6", "PySide2", "OpenGL", "pyqtgraph.opengl",
    "pyqtgraph.examples", "pyqtgraph.jupyter",
    # pyqtgraph's flowchart and canvas (unused) import scipy.signal, which drags in most of
    # scipy (~60 MB); the product's own scipy imports are analysed as usual.
    "pyqtgraph.flowchart", "pyqtgraph.canvas", "pyqtgraph.console",
    "cupy", "numba", "h5py", "tests", "setuptools", "pip", "pydoc_data", "lib2to3",
    # Pillow is not a dependency (pygments' image formatter would drag it in, 15 MB).
    "PIL", "pygments.formatters.img",
    # pygments (4 MB of lexers) is reached only through rich's tracebacks, syntax and markdown
    # renderables, none of which the product uses (it imports rich.console and rich.progress).
    "pygments", "rich.syntax", "rich.traceback", "rich.markdown", "markdown_it",
    # The product does no network I/O: no TLS, and not PyAV's test-data downloader.
    "ssl", "_ssl", "av.datasets",
    # zstandard ships a C and a CFFI backend; the C one is used, the CFFI one is 12 MB.
    "zstandard.backend_cffi", "zstandard._cffi", "cffi",
    # The `lerobot` extra (pyarrow, ~170 MB) is not bundled: the LeRobot reader then maps
    # matches to files, not episodes, and says so. HTTP stacks some extras import: unused.
    "pyarrow", "pandas", "requests", "urllib3", "certifi", "charset_normalizer", "idna",
    # The `robotdata` extra (h5py above, zarr + numcodecs, google-crc32c, imagecodecs) is not bundled:
    # the Windows folder is at 194 MB of its 200 MB budget and h5py's HDF5 DLLs plus numcodecs'
    # compiled codecs add ~25 MB. The robot-dataset readers are in the bundle and say which extra
    # to install (pip); the readers import these libraries only inside functions.
    "zarr", "numcodecs", "google_crc32c", "imagecodecs", "donfig",
    # The `cluster` extra (Dask, ~14 MB with tornado, click, fsspec...) is a pip-install feature for
    # pipelines, as on Windows (whose folder is built without it): `overlap index --cluster` in the
    # bundle names the extra to install. Every worker of a cluster needs the pip install anyway.
    "dask", "distributed", "tornado", "fsspec", "cloudpickle", "toolz", "partd", "locket", "zict",
    "tblib", "sortedcontainers", "msgpack", "psutil", "click",
)

#: Big optional libraries that are bundled only if the product's own code imports them.
CONDITIONAL: tuple[str, ...] = ("faiss",)

#: pyqtgraph imports scipy.ndimage/signal, when present, for features the GUI does not use, and
#: scipy's subpackages pull in each other (~80 MB). scipy is a test-only dependency
#: (tests/unit/test_code_quality.py keeps the product from importing it undeclared); should the
#: product ever import a subpackage, only it and those it loads in turn are bundled
#: (scipy.special alone: ~35 MB with OpenBLAS, against ~80 MB for all of them).
SCIPY_SUBPACKAGES: tuple[str, ...] = (
    "cluster", "constants", "datasets", "differentiate", "fft", "fftpack", "integrate", "interpolate",
    "io", "linalg", "misc", "ndimage", "odr", "optimize", "signal", "sparse", "spatial", "special",
    "stats",
)


def package_imports(root: Path, module: str) -> bool:
    """True if any module of ``overlap_desktop`` imports ``module`` (or a submodule of it)."""
    # "import scipy", "import scipy.x", "from scipy import x", "from scipy.x import y"
    pattern = re.compile(rf"^\s*(?:from|import)\s+{re.escape(module)}(?:[.\s,]|$)", re.M)
    return any(pattern.search(p.read_text(encoding="utf-8", errors="replace"))
               for p in (root / "overlap_desktop").rglob("*.py"))


def scipy_needed(root: Path) -> set[str]:
    """The scipy subpackages the product imports, with those they import in turn.

    The closure is measured by importing them in a fresh interpreter of the build
    environment: scipy's own imports change between releases, a hand-kept list would not.
    """
    wanted = [sub for sub in SCIPY_SUBPACKAGES if package_imports(root, f"scipy.{sub}")
              or re.search(rf"^\s*from\s+scipy\s+import\s+(?:.*[\s,])?{sub}\b",
                           _sources(root), re.M)]
    if not wanted:
        return set()
    code = ("import importlib, sys\n"
            f"for m in {wanted!r}: importlib.import_module('scipy.' + m)\n"
            "print(' '.join(sorted({n.split('.')[1] for n in sys.modules if n.startswith('scipy.')})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split()) & set(SCIPY_SUBPACKAGES)


def _sources(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in (root / "overlap_desktop").rglob("*.py"))


def excludes(root: Path) -> list[str]:
    """Everything the spec excludes for this source tree."""
    out = list(QT_EXCLUDES) + list(OTHER_EXCLUDES)
    out += [m for m in CONDITIONAL if not package_imports(root, m)]
    needed = scipy_needed(root)
    out += [f"scipy.{sub}" for sub in SCIPY_SUBPACKAGES if sub not in needed]
    return out

#: Bundle paths (prefixes, "/"-separated) dropped after analysis. PySide6's wheels lay Qt out
#: differently per platform: ``PySide6/Qt/{plugins,translations}/`` on Linux and macOS,
#: ``PySide6/{plugins,translations}/`` next to the Qt DLLs on Windows; both are listed.
#: - translations: the UI is English only (Windows: 7 MB);
#: - ``opengl32sw.dll``: Mesa's software OpenGL (20 MB), a fallback Qt loads only for
#:   OpenGL rendering (QOpenGLWidget, Qt Quick), which the app never does: QtWidgets and
#:   pyqtgraph's default QPainter plots draw with the raster engine;
#: - the GTK theme plugin (pulls the whole GTK stack on Linux: ~30 MB);
#: - TLS and network-information plugins: the product does no network I/O;
#: - ``qdirect2d``: an alternative Windows platform plugin (``qwindows`` is the one used);
#:   ``qminimal`` likewise (``qoffscreen`` stays: ``--self-test`` and the smoke tests use it);
#: - the ``generic`` TUIO touch plugin (touch events over the network; loaded only on request)
#:   and Qt6Network.dll, which on Windows nothing else links (the bindings are excluded);
#: - image formats the app never reads (its images are decoded frames, PNG/ICO/SVG icons and
#:   JPEG/GIF at most): TIFF, WebP, TGA, WBMP, ICNS.
DROP_PREFIXES: tuple[str, ...] = (
    "PySide6/Qt/translations/",
    "PySide6/translations/",
    "PySide6/opengl32sw.dll",
    "PySide6/Qt/plugins/platformthemes/libqgtk3",
    "PySide6/Qt/plugins/tls/",
    "PySide6/plugins/tls/",
    "PySide6/Qt/plugins/networkinformation/",
    "PySide6/plugins/networkinformation/",
    "PySide6/plugins/platforms/qdirect2d",
    "PySide6/plugins/platforms/qminimal",
    "PySide6/Qt/plugins/platforms/libqminimal",
    "PySide6/plugins/generic/",
    "PySide6/Qt6Network.dll",
    *(f"PySide6/plugins/imageformats/q{fmt}." for fmt in ("tiff", "webp", "tga", "wbmp", "icns")),
    *(f"PySide6/Qt/plugins/imageformats/libq{fmt}." for fmt in ("tiff", "webp", "tga", "wbmp", "icns")),
)


#: Linux system libraries that only the dropped GTK theme plugin needs (checked with
#: objdump -p over a built bundle: no other collected binary has them as NEEDED; Qt itself
#: needs libxkbcommon and the wayland libraries, which are therefore kept).
_GTK_STACK = re.compile(r"^lib(gtk-3|gdk-3|gdk_pixbuf-2\.0|atk-1\.0|atk-bridge-2\.0|atspi|cairo|"
                        r"cairo-gobject|pango-1\.0|pangocairo-1\.0|pangoft2-1\.0|epoxy|pixman-1|"
                        r"Xcomposite|Xcursor|Xdamage|Xfixes|Xi|Xinerama|Xrandr|thai|datrie|fribidi|"
                        r"cloudproviders|tracker-sparql-3\.0)\.so")


def keep(dest: str) -> bool:
    """False for bundle entries matched by :data:`DROP_PREFIXES` (and, on Linux, the GTK
    libraries only the dropped theme plugin links)."""
    d = dest.replace("\\", "/")
    if any(d.startswith(p) for p in DROP_PREFIXES):
        return False
    return not (sys.platform.startswith("linux") and "/" not in d and _GTK_STACK.match(d))

def collected_top_level(*tocs: Iterable[tuple[str, ...]]) -> set[str]:
    """Top-level import names of everything PyInstaller collected, from any of its TOCs.

    With ``noarchive=True`` PyInstaller leaves ``a.pure`` empty and lists pure-Python
    modules as ``.pyc`` data files (``rich/console.pyc``), so names are read from module
    names (``rich.console``) and from destination paths alike: the first path part, or for a
    file at the top the name before its first dot (``typing_extensions.pyc``), with a
    vendored-library folder's ``.libs`` suffix removed (``av.libs`` -> ``av``).

    Args:
        tocs: PyInstaller TOC lists (``a.pure``, ``a.binaries``, ``a.datas``): tuples whose
            first item is a module name or a destination path.
    """
    names: set[str] = set()
    for toc in tocs:
        for entry in toc:
            dest = entry[0].replace("\\", "/")
            # "rich/console.pyc" -> "rich"; "rich.console" and "typing_extensions.pyc" -> before the dot.
            top = dest.split("/", 1)[0] if "/" in dest else dest.split(".", 1)[0]
            top = top.removesuffix(".libs")
            if top and not top.endswith((".dist-info", ".egg-info")):
                names.add(top)
    return names


def python_licence(stdlib: Path | None = None, prefix: Path | None = None,
                   executable: Path | None = None) -> Path | None:
    """The build Python's own LICENSE.txt, wherever its layout keeps it.

    Linux and macOS builds keep it in the standard-library folder (``lib/python3.X``);
    Windows installs (and the embeddable distribution) keep it next to ``python.exe``,
    which is ``sys.base_prefix`` there. Arguments default to the running interpreter's.

    Returns:
        The file, or None when the build Python ships no licence text (then the bundle
        must not claim to carry one).
    """
    stdlib = stdlib or Path(sysconfig.get_paths()["stdlib"])
    prefix = prefix or Path(sys.base_prefix)
    executable = executable or Path(sys.executable)
    for folder in (stdlib, prefix, executable.parent):
        candidate = folder / "LICENSE.txt"
        if candidate.is_file():
            return candidate
    return None


_LICENCE_NAME = re.compile(r"(^|/)(LICEN[CS]E|COPYING|NOTICE|AUTHORS|THIRD_PARTY_NOTICES)[^/]*$", re.I)


def read_version(root: Path) -> str:
    """The product version from ``overlap_desktop/__init__.py`` (without importing it)."""
    text = (root / "overlap_desktop" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not m:
        raise RuntimeError("no __version__ in overlap_desktop/__init__.py")
    return m.group(1)


def _distributions_for(top_level: Iterable[str]) -> dict[str, md.Distribution]:
    """Installed distributions that provide any of the given top-level import names."""
    by_pkg = md.packages_distributions()
    wanted: dict[str, md.Distribution] = {}
    for name in sorted(set(top_level)):
        for dist_name in by_pkg.get(name, []):
            key = dist_name.lower().replace("_", "-")
            if key in wanted or key == "overlap-desktop":
                continue
            try:
                wanted[key] = md.distribution(dist_name)
            except md.PackageNotFoundError:
                continue
    return wanted


def _licence_of(dist: md.Distribution) -> str:
    meta = dist.metadata
    expr = meta.get("License-Expression")
    if expr:
        return expr
    lic = (meta.get("License") or "").strip().splitlines()
    if lic and len(lic[0]) < 80:
        return lic[0]
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    return "; ".join(classifiers) or "see licence files"


def ffmpeg_note() -> str:
    """What the PyAV wheel in this build environment bundles, from FFmpeg's own report."""
    try:
        import av
    except ImportError:  # pragma: no cover - av is a hard dependency
        return "PyAV is not installed in the build environment.\n"
    lines = [f"PyAV {av.__version__} (BSD-3-Clause) with the FFmpeg libraries below.", ""]
    meta = getattr(av, "library_meta", {}) or {}
    config = ""
    for lib, info in sorted(meta.items()):
        version = ".".join(str(v) for v in info.get("version", ()))
        lines.append(f"  {lib} {version}: {info.get('license', '?')}")
        config = info.get("configuration", config)
    gpl = [flag for flag in ("libx264", "libx265") if f"--enable-{flag}" in config]
    lines += ["", "FFmpeg configure line:", f"  {config}", ""]
    if gpl or "--enable-gpl" in config:
        lines += [
            "GPL components: " + ", ".join(gpl or ["--enable-gpl"]) + " (GPL-2.0-or-later). FFmpeg itself",
            "reports the licence above, but its libraries are linked with these GPL encoders, so the",
            "combination shipped in this bundle is distributed under the GNU GPL (version 3, which is",
            "compatible with Apache-2.0 and with LGPL-3.0-or-later; see GPL-3.0.txt).",
        ]
    lines += [
        "",
        "Corresponding source:",
        "  FFmpeg        https://ffmpeg.org/download.html (release matching the versions above)",
        "  PyAV + build  https://github.com/PyAV-Org/PyAV and https://github.com/PyAV-Org/pyav-ffmpeg",
        "                (the scripts and pinned third-party sources used to build the wheels)",
        "  x264          https://code.videolan.org/videolan/x264",
        "  x265          https://bitbucket.org/multicoreware/x265_git",
        "  dav1d         https://code.videolan.org/videolan/dav1d",
        "  libvpx        https://chromium.googlesource.com/webm/libvpx",
        "  SVT-AV1       https://gitlab.com/AOMediaCodec/SVT-AV1",
        "Whoever distributes this bundle must also offer this corresponding source (GPL-3.0",
        "section 6); see docs/windows.md, 'Licences'.",
    ]
    return "\n".join(lines) + "\n"


def stage_licences(stage: Path, root: Path, top_level: Iterable[str]) -> Path:
    """Collect every licence text the bundle must carry into ``stage/licenses``.

    Args:
        stage: A scratch folder (cleared).
        root: The repository root (LICENSE, NOTICE, resources/licenses).
        top_level: Top-level import names of everything PyInstaller collected; their
            distributions' licence files are copied.

    Returns:
        The ``licenses`` folder, to be added to the bundle's data files.
    """
    out = stage / "licenses"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy2(root / "LICENSE", out / "overlap-desktop-LICENSE.txt")
    shutil.copy2(root / "NOTICE", out / "overlap-desktop-NOTICE.txt")
    for text in sorted((root / "resources" / "licenses").glob("*")):
        if text.is_file():
            shutil.copy2(text, out / text.name)
    index = ["# Third-party software in this bundle", "",
             "| distribution | version | licence | files |", "|---|---|---|---|"]
    # The Python runtime itself.
    py_licence = python_licence()
    if py_licence is not None:
        (out / "Python").mkdir()
        shutil.copy2(py_licence, out / "Python" / "LICENSE.txt")
    where = "Python/" if py_licence is not None else "(the build Python ships no licence text)"
    rows = [("Python", sys.version.split()[0], "PSF-2.0", where)]
    for key, dist in sorted(_distributions_for(top_level).items()):
        files = [f for f in (dist.files or []) if _LICENCE_NAME.search(str(f)) and not str(f).endswith(".py")
                 and not str(f).endswith((".pyc", ".so", ".dll", ".pyd"))]
        target = out / key
        copied = 0
        for f in files:
            src = Path(str(dist.locate_file(f)))
            if src.is_file():
                target.mkdir(exist_ok=True)
                shutil.copy2(src, target / ("_".join(Path(str(f)).parts[-2:]) if copied else src.name))
                copied += 1
        where = f"{key}/" if copied else "(no licence file in the wheel; see the licence named here)"
        rows.append((dist.metadata["Name"], dist.version, _licence_of(dist), where))
    index += [f"| {' | '.join(row)} |" for row in rows]
    index += ["", _QT_TERMS, "", _FFMPEG_POINTER, ""]
    (out / "THIRD-PARTY.md").write_text("\n".join(index), encoding="utf-8")
    # Stock Windows opens neither .md files nor folders of them from a shortcut in a useful
    # way: the Start-menu "licences" entry opens this HTML copy in the default browser.
    (out / "THIRD-PARTY.html").write_text(_third_party_html(rows), encoding="utf-8")
    (out / "FFmpeg-PyAV.txt").write_text(ffmpeg_note(), encoding="utf-8")
    return out


_QT_TERMS = ("Qt (through PySide6/shiboken6) is used under the LGPL-3.0 (LGPL-3.0.txt, GPL-3.0.txt): "
             "the Qt libraries are separate shared libraries in this folder and may be replaced by the "
             "user with compatible builds. Qt source: https://download.qt.io/official_releases/qt/ and "
             "https://code.qt.io/cgit/pyside/pyside-setup.git/.")
_FFMPEG_POINTER = "FFmpeg and codecs (through PyAV): see FFmpeg-PyAV.txt."


def _third_party_html(rows: list[tuple[str, str, str, str]]) -> str:
    """THIRD-PARTY.md's content as a self-contained HTML page with links to the texts."""
    from html import escape

    def cell_files(where: str) -> str:
        if where.endswith("/"):
            return f'<a href="{escape(where)}">{escape(where)}</a>'
        return escape(where)

    body = "\n".join(f"<tr><td>{escape(n)}</td><td>{escape(v)}</td><td>{escape(lic)}</td>"
                     f"<td>{cell_files(w)}</td></tr>" for n, v, lic, w in rows)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>overlap desktop: third-party software</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{border:1px solid #ccc;padding:4px 8px}}
table{{border-collapse:collapse}}</style></head><body>
<h1>Third-party software in this bundle</h1>
<p>overlap desktop itself: <a href="overlap-desktop-LICENSE.txt">Apache-2.0</a>
(<a href="overlap-desktop-NOTICE.txt">NOTICE</a>). The licence texts named below are in this folder.</p>
<table><tr><th>distribution</th><th>version</th><th>licence</th><th>files</th></tr>
{body}
</table>
<p>{escape(_QT_TERMS)} See <a href="LGPL-3.0.txt">LGPL-3.0.txt</a> and <a href="GPL-3.0.txt">GPL-3.0.txt</a>.</p>
<p>FFmpeg and codecs (through PyAV): see <a href="FFmpeg-PyAV.txt">FFmpeg-PyAV.txt</a>.</p>
</body></html>
"""


def write_version_info(path: Path, version: str, *, description: str, internal_name: str) -> Path:
    """Write a PyInstaller Windows version resource (shown in Explorer's file properties)."""
    nums = [int(p) for p in re.findall(r"\d+", version)[:4]]
    nums += [0] * (4 - len(nums))
    tup = tuple(nums)
    text = f"""VSVersionInfo(
  ffi=FixedFileInfo(filevers={tup}, prodvers={tup}, mask=0x3f, flags=0x0, OS=0x40004,
                    fileType=0x1, subtype=0x0, date=(0, 0)),
  kids=[
    StringFileInfo([StringTable('040904B0', [
      StringStruct('CompanyName', 'overlap desktop developers'),
      StringStruct('FileDescription', {description!r}),
      StringStruct('FileVersion', {version!r}),
      StringStruct('InternalName', {internal_name!r}),
      StringStruct('LegalCopyright', 'Apache-2.0; bundled third-party software under its own licences'),
      StringStruct('OriginalFilename', {internal_name + '.exe'!r}),
      StringStruct('ProductName', 'overlap desktop'),
      StringStruct('ProductVersion', {version!r})])]),
    VarFileInfo([VarStruct('Translation', [1033, 1200])])
  ]
)
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
