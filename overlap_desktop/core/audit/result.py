"""What an audit found: per quoted file and in total (the receipt is made from it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from overlap_desktop.core.audit.reproduce import NOT_CHECKED, REPRODUCED, FileCheck
from overlap_desktop.core.manifest.verify import VerifyResult

__all__ = ["AuditResult", "FileAudit", "Seconds"]


@dataclass(slots=True)
class Seconds:
    """Owned / new / can't-tell seconds of one file, as a screen counted them."""

    owned: float = 0.0
    new: float = 0.0
    cant_tell: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return {"owned_seconds": round(self.owned, 3), "new_seconds": round(self.new, 3),
                "cant_tell_seconds": round(self.cant_tell, 3)}

    def words(self) -> str:
        parts = [f"{v:.0f} s {w}" for v, w in ((self.owned, "owned"), (self.new, "new"),
                                                (self.cant_tell, "can't tell")) if v >= 0.5]
        return ", ".join(parts) or "0 s"


@dataclass(slots=True)
class FileAudit:
    """One quoted file after the audit.

    Attributes:
        name: The name in the quote.
        delivered: Its delivered path relative to the delivery folder (``None``: missing).
        bytes: The bytes check: ``matched`` (present and exact), ``altered`` or ``missing``.
        sha256: The delivered digest, when it was read.
        check: The fingerprint check.
        quoted: The seconds the quote's own fingerprints screened to (``None`` without a library).
        final: The seconds the delivered footage screened to, can't-tell settled where possible.
        copy_of: Plain words on what the delivered footage copies ("a copy of clip0.mp4 re-encoded").
        settled: ``(start_s, end_s, verdict, reason)`` for the can't-tell stretches settled with pixels.
        crop_seconds: Owned seconds found only by the crop search of the delivered frames.
        warnings: Sentences about this file (skipped streams, damaged packets).
    """

    name: str
    delivered: str | None
    bytes: str
    sha256: str | None = None
    check: FileCheck = field(default_factory=lambda: FileCheck("", NOT_CHECKED))
    quoted: Seconds | None = None
    final: Seconds | None = None
    copy_of: str = ""
    settled: list[tuple[float, float, str, str]] = field(default_factory=list)
    crop_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        """Bytes and fingerprints both as quoted."""
        return self.bytes == "matched" and self.check.fingerprints == REPRODUCED

    @property
    def changed(self) -> bool:
        """The delivered footage screens differently from the quote (owned or new seconds moved)."""
        if self.quoted is None or self.final is None:
            return False
        return abs(self.quoted.owned - self.final.owned) >= 0.5 or abs(self.quoted.new - self.final.new) >= 0.5

    def verdict_words(self) -> str:
        """``"quoted 12 s new; delivered: 12 s owned, a copy of clip0.mp4 re-encoded"``."""
        if self.quoted is None or self.final is None:
            return ""
        out = f"quoted {self.quoted.words()}; delivered: {self.final.words()}"
        return out + (f", {self.copy_of}" if self.copy_of else "")


@dataclass(slots=True)
class AuditResult:
    """The outcome of :func:`~overlap_desktop.core.audit.run.audit_delivery`.

    Attributes:
        verify: The bytes check (the existing delivery check).
        files: One :class:`FileAudit` per quoted file, in quote order.
        index: The library the re-screen compared with (``""``: no re-screen).
        rescreened: The re-screen ran.
        settle: How can't-tell stretches were settled ("" when the pixel check was not available).
        added: Files added to the library in this pass (``--add``).
        warnings: Sentences for the user.
        resumed: Items whose decode an interrupted run had already finished.
    """

    verify: VerifyResult
    files: list[FileAudit] = field(default_factory=list)
    index: str = ""
    rescreened: bool = False
    settle: str = ""
    crops: str = ""
    added: int = 0
    warnings: list[str] = field(default_factory=list)
    resumed: int = 0
    #: The delivered footage as an offer was the quote itself (same codes, flags and spans), so the
    #: quote's screen stood for the delivery's.
    same_as_quote: bool = False

    @property
    def ok(self) -> bool:
        """Exit 0: every quoted file present and exact, and its fingerprints reproduced."""
        return self.verify.complete and all(f.holds for f in self.files)

    def failing(self) -> list[FileAudit]:
        return [f for f in self.files if not f.holds]

    def totals(self, which: str) -> dict[str, float] | None:
        got = [getattr(f, which) for f in self.files]
        if any(s is None for s in got):
            return None
        return Seconds(sum(s.owned for s in got), sum(s.new for s in got),
                       sum(s.cant_tell for s in got)).to_dict()

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "index": self.index, "rescreened": self.rescreened, "settle": self.settle,
                "crops": self.crops, "added": self.added, "warnings": list(self.warnings), "resumed": self.resumed,
                "same_as_quote": self.same_as_quote}
