"""The delivery audit: the quote checked against the footage that arrived.

Sits on its own floor above :mod:`overlap_desktop.core.match` (it uses the matcher, the
manifest, the index and the readers) and below the app helpers. Modules are imported by
their own names; this package re-exports nothing.
"""
