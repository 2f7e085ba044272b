"""PySide6 desktop shell over :mod:`overlap_desktop.api` (the only package that imports Qt)."""
