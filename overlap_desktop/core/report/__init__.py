"""Report: what a comparison found, in plain words and as files.

Modules: :mod:`.model` (the dataclasses), :mod:`.wording` (sentences and number formats),
:mod:`.scale` (the one colour scale of match plots), :mod:`.glossary` (user-facing words),
:mod:`.json_io` (the versioned JSON, strict reading, migration of older versions),
:mod:`.csv_io`, :mod:`.html` with :mod:`.svgplot` and ``templates/`` (Jinja2, autoescaped),
:mod:`.output` (atomic writes). The public names are reached through :mod:`overlap_desktop.api`.
"""
