"""overlap desktop: find out how much of a vendor's video dataset you already own.

The package is layered: :mod:`overlap_desktop.core` (readers, fingerprints, index,
manifest, matcher, reports; never imports Qt), :mod:`overlap_desktop.api` (the one
public surface), and two thin shells over it, :mod:`overlap_desktop.cli` and
:mod:`overlap_desktop.gui`.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
