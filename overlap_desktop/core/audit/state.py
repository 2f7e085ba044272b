"""What an interrupted audit keeps, so the next run continues instead of starting over.

An audit's state lives in a folder of its own (by default under the user's data folder,
``audits/<key>``, where the key names the quote's root, the delivery folder and the
fingerprint settings): one record per delivered item already decoded (its fingerprints,
digest and identity), and, inside a long single-stream item, the checkpoints indexing
takes (:mod:`~overlap_desktop.core.ingest.resume`). A record is used only for the very
item it was made from (same size, modification time and identity); anything damaged or of
another version is ignored and the item decoded again. The folder is removed when the audit
finishes. Records are written atomically (a kill leaves the old record or the new one).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from overlap_desktop.core.audit.decode import Decoded
from overlap_desktop.core.fsutil import atomic_write_bytes
from overlap_desktop.core.index.blobs import decode_fingerprints, encode_fingerprints, info_from_json, info_to_json
from overlap_desktop.core.ingest.resume import StreamCheckpoint, StreamResume, load_resume
from overlap_desktop.errors import WriteError

__all__ = ["STATE_VERSION", "AuditState", "state_key"]

log = logging.getLogger(__name__)

#: Version of the records; records of another version are ignored (the item is decoded again).
STATE_VERSION = 1
_BLOBS = ("times", "quality", "codes", "usable")


def state_key(root: str, data_dir: Path, settings: str) -> str:
    """The name of an audit's state folder: the quote, the delivery and the settings."""
    text = json.dumps([root, os.path.abspath(data_dir), settings])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _slot(rel: str) -> str:
    return hashlib.sha256(rel.encode("utf-8", "surrogateescape")).hexdigest()[:32]


class AuditState:
    """Saved progress of one audit (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, error_type=WriteError, open_message="cannot save the audit's progress",
                           write_message="cannot save the audit's progress")

    # ------------------------------------------------------------------ whole items

    def save_item(self, rel: str, d: Decoded, settings: str) -> None:
        """Keep a decoded item's fingerprints and digest (a failure to save only costs a re-decode)."""
        streams = []
        for info, fp in d.streams:
            e = encode_fingerprints(fp)
            streams.append({"info": info_to_json(info),
                            **{k: (base64.b64encode(v).decode("ascii") if k in _BLOBS else v) for k, v in e.items()}})
        record = {"version": STATE_VERSION, "rel": rel, "settings": settings, "size": d.size, "mtime_ns": d.mtime_ns,
                  "stat_key": d.stat_key, "reader": d.reader, "sha256": d.sha256, "error": d.error,
                  "warnings": d.warnings, "streams": streams}
        try:
            self._write(self.folder / "items" / f"{_slot(rel)}.json", json.dumps(record).encode("utf-8"))
            self.drop_progress(rel)
        except (OSError, WriteError) as exc:
            log.warning("cannot save the audit's progress for %s (%s); an interruption decodes it again", rel, exc)

    def load_item(self, rel: str, path: Path, settings: str, state: tuple[int, int, str]) -> Decoded | None:
        """The saved decode of ``rel`` when it was made from this very item with these settings."""
        p = self.folder / "items" / f"{_slot(rel)}.json"
        try:
            r = json.loads(p.read_text(encoding="utf-8"))
            if (r.get("version") != STATE_VERSION or r.get("rel") != rel or r.get("settings") != settings
                    or (r["size"], r["mtime_ns"], r["stat_key"]) != state):
                return None
            streams = []
            for s in r["streams"]:
                blobs = {k: base64.b64decode(s[k]) for k in _BLOBS}
                streams.append((info_from_json(s["info"]),
                                decode_fingerprints(int(s["n"]), blobs["times"], blobs["quality"], blobs["codes"],
                                                    blobs["usable"], s["variants"], s["indeterminate"],
                                                    float(s["fps"]), float(s["duration_s"]))))
        except FileNotFoundError:
            return None
        except Exception:  # a damaged record is only a lost shortcut
            log.debug("ignoring a damaged audit record %s", p, exc_info=True)
            return None
        return Decoded(path=path, reader=str(r["reader"]), size=int(r["size"]), mtime_ns=int(r["mtime_ns"]),
                       stat_key=str(r["stat_key"]), streams=streams, sha256=r.get("sha256"), error=r.get("error"),
                       warnings=[str(w) for w in r.get("warnings") or []])

    # ------------------------------------------------------------------ inside an item

    def save_checkpoint(self, rel: str, key: str, cp: StreamCheckpoint, settings: str,
                        state: tuple[int, int, str]) -> None:
        """Add one checkpoint of a long stream (chunks first, then the state naming them)."""
        base = self.folder / "progress" / _slot(rel)
        try:
            self._write(base / f"chunk-{cp.seq:06d}.npz", cp.chunk())
            meta = {"version": STATE_VERSION, "rel": rel, "key": key, "settings": settings,
                    "item": list(state), "state": cp.state()}
            self._write(base / "state.json", json.dumps(meta).encode("utf-8"))
        except (OSError, WriteError) as exc:
            log.warning("cannot save the audit's progress inside %s (%s)", rel, exc)

    def load_progress(self, rel: str, settings: str, state: tuple[int, int, str],
                      variants: int) -> tuple[str, StreamResume] | None:
        """Saved progress inside ``rel`` for this very item and settings, or None."""
        base = self.folder / "progress" / _slot(rel)
        try:
            meta = json.loads((base / "state.json").read_text(encoding="utf-8"))
            if (meta.get("version") != STATE_VERSION or meta.get("rel") != rel or meta.get("settings") != settings
                    or tuple(meta.get("item") or ()) != state):
                return None
            n = int(json.loads(meta["state"])["chunks"])
            chunks = [(base / f"chunk-{i:06d}.npz").read_bytes() for i in range(n)]
            return str(meta["key"]), load_resume(meta["state"], chunks, variants)
        except FileNotFoundError:
            return None
        except Exception:
            log.debug("ignoring damaged audit progress in %s", base, exc_info=True)
            return None

    def drop_progress(self, rel: str) -> None:
        shutil.rmtree(self.folder / "progress" / _slot(rel), ignore_errors=True)

    def clear(self) -> None:
        """The audit finished: nothing to continue from."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        items = self.folder / "items"
        return {"folder": str(self.folder), "items": len(list(items.glob("*.json"))) if items.is_dir() else 0}
