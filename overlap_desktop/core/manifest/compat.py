"""Can this offer be compared with the lab's library? Asked before a comparison is offered.

A comparison needs a library with something in it, and an offer fingerprinted with the
same hash and normalisation as the library (the same rule :func:`~overlap_desktop.core.
match.compare.compare` enforces). Checking this up front lets a window say "add your
footage first" or "ask the seller for a current manifest" instead of failing later.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from overlap_desktop.core.index.status import LibraryCompleteness, LibraryStatus, completeness_of, library_status
from overlap_desktop.core.index.store import open_index
from overlap_desktop.core.ingest.prep import comparable_prep
from overlap_desktop.core.manifest.inspect import inspect_manifest
from overlap_desktop.errors import OverlapError

if TYPE_CHECKING:  # pragma: no cover
    from overlap_desktop.config import Config

__all__ = ["OfferCheck", "check_offer"]


@dataclass(frozen=True)
class OfferCheck:
    """An offer's facts and whether it can be compared with the library now.

    Attributes:
        info: :func:`~overlap_desktop.core.manifest.format.inspect_manifest` of the offer.
        compatible: ``True``: compare away; ``False``: the fingerprints differ (a comparison
            would be refused); ``None``: cannot tell yet (no library, or it cannot be read).
        why: Why not, in plain words (empty when compatible).
        library: What is at the library folder.
        library_files: Files of the library that are ready to compare against.
        completeness: Whether indexing is running or was left unfinished (a comparison
            would then miss footage); ``None`` when the library could not be read.
    """

    info: dict[str, Any]
    compatible: bool | None
    why: str = ""
    library: LibraryStatus | None = field(default=None, compare=False)
    library_files: int = 0
    completeness: LibraryCompleteness | None = field(default=None, compare=False)

    @property
    def library_complete(self) -> bool:
        """False when a comparison now would run against a library still being (re)indexed."""
        return self.completeness is None or self.completeness.complete

    @property
    def library_note(self) -> str:
        """Why the library may be incomplete, in plain words (empty when it is complete)."""
        return "" if self.completeness is None else self.completeness.note

    @property
    def library_empty(self) -> bool:
        """Nothing indexed yet: the next step is to add the lab's own footage."""
        return self.library is not None and self.library.empty


def check_offer(manifest: str | os.PathLike[str], index_path: str | os.PathLike[str] | None = None, *,
                config: Config | None = None) -> OfferCheck:
    """Read an offer's manifest and check it against the library.

    Args:
        manifest: The ``.ovlm`` file.
        index_path: The library's index folder; default the configured one.
        config: Resolved settings.

    Returns:
        An :class:`OfferCheck`. An empty or unreadable library is reported in it, never
        raised: the offer itself is fine and its facts are worth showing.

    Raises:
        ManifestError: the manifest is malformed, tampered with or unsupported.
    """
    info = inspect_manifest(manifest)
    lib = library_status(index_path, config=config)
    if lib.empty:
        return OfferCheck(info, None, "the library is empty", lib)
    if lib.problem:
        return OfferCheck(info, None, f"the library cannot be read ({lib.path}: {lib.problem})", lib)
    try:
        idx = open_index(lib.path, config=config, create=False, readonly=True)
    except (OverlapError, OSError) as exc:  # busy, damaged, newer: say so, do not refuse the manifest
        return OfferCheck(info, None, f"the library cannot be read ({exc})", lib)
    with idx:
        done = completeness_of(idx)
        theirs, ours = (info.get("algo_id"), info.get("prep_id")), (idx.algo_id, idx.prep_id)
    why = None
    if theirs[0] != ours[0]:
        why = (f"the offer was fingerprinted with {theirs[0]}/{theirs[1]}, your library with "
               f"{ours[0]}/{ours[1]}, so they cannot be compared.")
    elif theirs[1] != ours[1]:  # an earlier normalisation may still compare (prep.PREP_PREDECESSORS)
        why = comparable_prep(str(theirs[1]), str(ours[1]))
    if why is not None:
        return OfferCheck(info, False, why, lib, done.files_ready, done)
    return OfferCheck(info, True, "", lib, done.files_ready, done)
