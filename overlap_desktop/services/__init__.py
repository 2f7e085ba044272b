"""App-level helpers that sit above the api: the demo, the environment check, frame previews.

They are not pipeline stages, so they live outside :mod:`overlap_desktop.core` (the core never imports
the api); the shells reach them through :mod:`overlap_desktop.api`.
"""
