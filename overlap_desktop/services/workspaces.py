"""Vendor workspaces: the private indexes where offers are fingerprinted, listed and removed.

The vendor wizard fingerprints each offer into a workspace of its own in the user data
folder (``api.vendor_workspace``), so the offer never lands in the lab's library. A
workspace is kept after the manifest is saved because preparing the same offer again then
skips every unchanged file; but nothing else ever removes one, and a seller who prepares
many offers accumulates gigabytes. This module lets the app show what is kept and remove a
workspace on request.

Removal is refused for anything that is not a workspace folder directly under the
workspaces root, and for a workspace another process is writing to (its writer lock is
held). The folder is first renamed aside, so a removal cut short (power loss, a file
held open on Windows) never leaves a half-deleted workspace that looks usable: the next
listing finishes removing renamed folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from overlap_desktop.core.index.db import DB_NAME
from overlap_desktop.core.index.lock import WriterLock
from overlap_desktop.core.index.schema import LOCK_NAME
from overlap_desktop.errors import IndexBusyError, InputError, UsageError
from overlap_desktop.paths import APP_AUTHOR, APP_NAME

__all__ = ["CONTENTS_LIMIT", "VendorWorkspace", "folder_contents_words", "folder_has_footage",
           "list_vendor_workspaces", "name_from_label",
           "note_vendor_workspace", "remove_vendor_workspace", "vendor_workspaces_root", "workspace_folder_name"]

#: Prefix of a workspace folder being removed (skipped by listings, swept by them).
_REMOVING = ".removing-"
#: A small file in each workspace: the offer's name as typed and whether its manifest was saved.
NOTE_NAME = "offer.json"
#: Characters no folder name may hold on Windows, macOS or Linux (plus spaces, which we turn into dashes).
_NOT_IN_NAMES = re.compile(r'[\x00-\x1f<>:"/\\|?*\s]+')


@dataclass(frozen=True, slots=True)
class VendorWorkspace:
    """One offer's workspace as the app shows it.

    Attributes:
        name: The folder name (made from the offer's name).
        path: The workspace folder.
        size_bytes: Bytes of every file in it.
        modified: POSIX time of its most recently changed file (the folder's own time if empty).
    """

    name: str
    path: Path
    size_bytes: int
    modified: float
    label: str = ""
    finished: bool | None = None

    @property
    def title(self) -> str:
        """The offer's name as the seller typed it (the folder name for workspaces made before it was kept)."""
        return self.label or self.name


def name_from_label(label: str | None, *, max_len: int = 60) -> str:
    """A file or folder name made from a label typed by a person ("" when nothing usable is left).

    ASCII labels keep letters, digits and ``._-`` (the rule of earlier versions, so names made
    before are made the same way again); others keep letters of every script and lose only
    what no file system accepts, control and invisible characters (bidi overrides included).
    """
    text = unicodedata.normalize("NFC", label or "")
    if text.isascii():
        return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:max_len].strip("-._")
    text = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") else ch for ch in text)
    return _NOT_IN_NAMES.sub("-", text).strip("-. ")[:max_len].strip("-. ")


def workspace_folder_name(label: str) -> str:
    """The folder name of the workspace for the offer called ``label``.

    Letters of every script are kept ("Offre été 日本" -> ``Offre-été-日本``), so offers whose names
    differ only outside ASCII get different workspaces; only characters no file system accepts
    become dashes. ASCII names follow the earlier rule (letters, digits, ``._-``), so their
    workspaces are found again. A name with nothing usable left becomes ``offer-<8 hex digits of its hash>``,
    so two such names still do not share a workspace.
    """
    text = unicodedata.normalize("NFC", label or "")
    # ASCII names as in earlier versions: an offer prepared before finds its workspace again.
    stem = name_from_label(text)
    if not stem or stem.upper() in {"CON", "PRN", "AUX", "NUL"} or re.fullmatch(r"(?i)(COM|LPT)\d", stem):
        return "offer-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return stem


def note_vendor_workspace(path: str | os.PathLike[str], *, label: str, finished: bool,
                          manifest: str | os.PathLike[str] | None = None) -> None:
    """Record the offer's name and whether its manifest was saved, in the workspace (created if needed).

    The workspaces dialog lists offers by these names (not by folder names) and says which
    are unfinished. Best effort: a note that cannot be written only costs the nicer listing.
    """
    folder = Path(path)
    note = {"label": label, "finished": bool(finished)}
    if manifest is not None:
        note["manifest"] = os.fspath(manifest)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (NOTE_NAME + ".tmp")
        tmp.write_text(json.dumps(note, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, folder / NOTE_NAME)
    except OSError:
        pass


def _read_note(folder: Path) -> tuple[str, bool | None]:
    try:
        data = json.loads((folder / NOTE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", None
    if not isinstance(data, dict):
        return "", None
    label = data.get("label") if isinstance(data.get("label"), str) else ""
    finished = data.get("finished") if isinstance(data.get("finished"), bool) else None
    return str(label)[:200], finished


def folder_has_footage(folder: str | os.PathLike[str]) -> bool:
    """True as soon as one file or recording under ``folder`` is footage a reader opens.

    Stops at the first one, so a folder of footage answers at once; a folder without any is
    walked to the end (run it off the UI thread).

    Raises:
        UsageError: the folder does not exist.
        InputError: nothing was found and (part of) the folder could not be listed (no permission,
            a disconnected drive): "no footage" would then be a guess.
    """
    from overlap_desktop.core.index.walk import walk_candidates

    unlisted: list[tuple[Path, str]] = []
    if any(reader is not None for _item, reader in walk_candidates([folder], unlisted=unlisted)):
        return True
    if unlisted:
        where, why = unlisted[0]
        raise InputError(f"{why.split(';')[0]}, so it is not known whether it holds footage; check that "
                         "you may open it (and that its drive is connected), then add it again", path=where)
    return False


#: Entries looked at by :func:`folder_contents_words` before it stops counting (a huge folder).
CONTENTS_LIMIT = 100_000


def folder_contents_words(folder: str | os.PathLike[str]) -> str:
    """What a folder without footage holds, for the "no footage found" message: ``"4 files, none of
    them video or a dataset overlap reads: .txt, .md, .bmp, .bin"``, or ``"no files at all"``.

    Hidden entries are skipped as the walk for footage skips them; at most :data:`CONTENTS_LIMIT`
    entries are looked at ("more than N files" then).
    """
    counts: dict[str, int] = {}
    seen = 0
    for _root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.startswith("."):
                continue
            seen += 1
            ext = Path(name).suffix.lower() or "no extension"
            counts[ext] = counts.get(ext, 0) + 1
            if seen >= CONTENTS_LIMIT:
                break
        if seen >= CONTENTS_LIMIT:
            break
    if not seen:
        return "no files at all"
    kinds = sorted(counts, key=lambda e: (-counts[e], e))
    shown = ", ".join(kinds[:8]) + (", …" if len(kinds) > 8 else "")
    many = f"more than {seen:,}" if seen >= CONTENTS_LIMIT else f"{seen:,}"
    noun = "file" if seen == 1 else "files"
    none = "it is not" if seen == 1 else "none of them is"
    return f"{many} {noun}, {none} video or a dataset overlap reads: {shown}"


def vendor_workspaces_root() -> Path:
    """``<user data folder>/vendor-workspaces``: where every offer's workspace lives (not created)."""
    return Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR)) / "vendor-workspaces"


def _measure(folder: Path) -> tuple[int, float]:
    size = 0
    newest = -1.0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            try:
                st = os.stat(os.path.join(dirpath, f))
            except OSError:  # removed while we looked
                continue
            size += st.st_size
            newest = max(newest, st.st_mtime)
    # The folder's own time changes when a file in it is added or removed, not when one is
    # written, so it only stands in when there are no files.
    return size, newest if newest >= 0 else folder.stat().st_mtime


def list_vendor_workspaces(root: Path | None = None) -> list[VendorWorkspace]:
    """Every offer's workspace, most recently used first.

    Also finishes removing folders a cut-short :func:`remove_vendor_workspace` left behind.

    Args:
        root: The workspaces folder (default :func:`vendor_workspaces_root`).
    """
    root = vendor_workspaces_root() if root is None else Path(root)
    if not root.is_dir():
        return []
    out: list[VendorWorkspace] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(_REMOVING):
            shutil.rmtree(entry, ignore_errors=True)
            continue
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            size, modified = _measure(entry)
        except OSError:
            continue
        label, finished = _read_note(entry)
        out.append(VendorWorkspace(entry.name, entry, size, modified, label, finished))
    out.sort(key=lambda w: (-w.modified, w.name))
    return out


def remove_vendor_workspace(path: str | os.PathLike[str], *, root: Path | None = None) -> int:
    """Delete one offer's workspace; manifests already saved elsewhere are not affected.

    Args:
        path: A workspace folder as listed by :func:`list_vendor_workspaces`.
        root: The workspaces folder (default :func:`vendor_workspaces_root`).

    Returns:
        The bytes freed.

    Raises:
        UsageError: ``path`` is not a workspace folder directly under the workspaces root, or
            does not hold an index.
        IndexBusyError: another overlap process is fingerprinting into it, or (Windows) holds
            one of its files open.
    """
    root = (vendor_workspaces_root() if root is None else Path(root)).resolve()
    folder = Path(path)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such offer workspace (already removed?)")
    resolved = folder.resolve()
    if resolved.parent != root or resolved.name.startswith("."):
        raise UsageError(f"{folder}: not an offer workspace (only folders directly inside {root} are "
                         "removed here)")
    names = {p.name for p in resolved.iterdir()}
    # An offer noted but stopped before its index was made holds only its note.
    if names - {NOTE_NAME} and DB_NAME not in names and LOCK_NAME not in names:
        raise UsageError(f"{folder}: does not hold an overlap index, so it is left alone; remove it "
                         "yourself if you are sure")
    size, _ = _measure(resolved)
    # A writer holds the lock for its whole job: taking it proves nobody is fingerprinting into it.
    lock = WriterLock(resolved / LOCK_NAME)
    lock.acquire()
    lock.release()
    aside = root / f"{_REMOVING}{resolved.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.replace(resolved, aside)
    except OSError as exc:  # Windows: a file in it is open in another process
        raise IndexBusyError(f"the workspace is in use ({exc.strerror or exc}); close other overlap windows "
                             "and try again", path=resolved) from exc
    shutil.rmtree(aside, ignore_errors=True)
    return size
