"""Output-path guards: an output flag never destroys data.

Before a command runs, every file it was asked to write is checked:

- never onto one of the command's own inputs (``compare --html OFFER.ovlm``), followed
  through symlinks and hard links;
- never inside the index folder (``export -o INDEX/index.sqlite3`` would replace the
  database with a manifest), whatever ``--force`` says;
- never inside a folder the command checks (``verify --data DIR -o DIR/x.json`` would add
  a file to the delivery it is judging);
- never over an existing file that overlap did not write (a footage file, a document)
  unless ``--force`` is given. An empty file counts as ours: there is nothing to lose.

The checks run before any work, so a refused output costs nothing. They are a CLI
matter: the API writes where it is told (a script has already chosen its paths).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from overlap_desktop.api import UsageError

__all__ = ["KINDS", "Output", "check_outputs", "looks_like"]

#: Bytes read from an existing file to recognise it as one of ours.
_SNIFF_BYTES = 4096


def _is_manifest(head: bytes) -> bool:
    return head.startswith(b"\x89OVLM\r\n\x1a")


def _is_json_of_ours(head: bytes) -> bool:
    # Reports and verify results open with their schema ("overlap.report/1", "overlap.verify/1").
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and b'"schema": "overlap.' in text[:200]


def _is_html_of_ours(head: bytes) -> bool:
    return head.startswith(b"<!DOCTYPE html>") and b"<h1>overlap \xc2\xb7 " in head


def _is_csv_of_ours(head: bytes) -> bool:
    # Written with a BOM so spreadsheet programs read it as UTF-8.
    return head.removeprefix(b"\xef\xbb\xbf").startswith(b"kind,query_file,query_stream,")


#: What each kind of output looks like when overlap wrote it.
KINDS: dict[str, tuple[str, Callable[[bytes], bool]]] = {
    "manifest": ("an overlap manifest", _is_manifest),
    "json": ("a JSON file written by overlap", _is_json_of_ours),
    "html": ("an HTML report written by overlap", _is_html_of_ours),
    "csv": ("a CSV report written by overlap", _is_csv_of_ours),
    "pubkey": ("an overlap public key file", lambda head: head.startswith(b"overlap vendor public key v1")),
}


@dataclass(frozen=True)
class Output:
    """One file a command was asked to write.

    Attributes:
        path: As given on the command line.
        flag: The flag that named it (``--html``), for messages.
        kind: A key of :data:`KINDS`: what an earlier output of ours there looks like.
    """

    path: Path
    flag: str
    kind: str


def looks_like(path: Path, kind: str) -> bool:
    """True when ``path`` is empty or holds what overlap writes for ``kind``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    return not head or KINDS[kind][1](head)


def _real(path: Path) -> str:
    """Absolute path with symlinks resolved (the file need not exist)."""
    return os.path.normcase(os.path.realpath(os.path.abspath(os.fspath(path))))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)  # also catches hard links
    except OSError:
        return _real(a) == _real(b)


def check_outputs(outputs: Iterable[Output], *, inputs: Sequence[Path] = (), folders: Sequence[Path] = (),
                  index_path: Path | None = None, force: bool = False) -> None:
    """Refuse outputs that would destroy data (see the module docstring).

    Args:
        outputs: The files the command will write (``None`` paths already left out).
        inputs: Files the command reads (manifests, evaluation files, annotations).
        folders: Folders the command judges; nothing may be written inside them.
        index_path: The index folder; nothing may be written inside it.
        force: Allow replacing an existing file that overlap did not write.

    Raises:
        UsageError: naming the output, the flag and why, with the next step.
    """
    outs = list(outputs)
    seen: dict[str, Output] = {}
    for out in outs:
        where = _real(out.path)
        if where in seen:
            raise UsageError(f"{out.flag} and {seen[where].flag} name the same file; give each output its "
                             "own file name", path=out.path)
        seen[where] = out
        if out.path.is_dir():
            raise UsageError(f"{out.flag} names a folder; give a file name", path=out.path)
        for src in inputs:
            if _same(out.path, src):
                raise UsageError(f"{out.flag} would overwrite {src}, an input of this command; choose "
                                 "another file name", path=out.path)
        if index_path is not None and _inside(where, _real(index_path)):
            raise UsageError(f"{out.flag} points inside the index folder {index_path}, which holds the "
                             "index database; write it somewhere else", path=out.path)
        for folder in folders:
            if _inside(where, _real(folder)):
                raise UsageError(f"{out.flag} points inside {folder}, the folder being checked (the new "
                                 "file would become part of it); write it somewhere else", path=out.path)
        if os.path.lexists(out.path) and not force and not looks_like(out.path, out.kind):
            what = KINDS[out.kind][0]
            raise UsageError(f"{out.flag}: this file exists and is not {what}; refusing to replace it "
                             "(choose another name, or add --force to replace it)", path=out.path)


def add_force_argument(p: object) -> None:
    """The ``--force`` flag of commands that write files."""
    p.add_argument("--force", action="store_true",  # type: ignore[attr-defined]
                   help="replace an existing output file even if overlap did not write it (never an "
                        "input of the command or anything inside the index folder)")
