"""The HTML templates are package data: they load, and the desktop bundle carries them."""

from __future__ import annotations

import ast
from pathlib import Path

import jinja2

from overlap_desktop.core.report.html import TEMPLATES, _environment

ROOT = Path(__file__).resolve().parents[2]


def test_every_template_compiles_with_autoescape() -> None:
    env = _environment()
    names = env.list_templates()
    assert {"base.html.j2", "macros.html.j2", "report.html.j2", "verify.html.j2", "report.css"} <= set(names)
    for name in names:
        env.get_template(name)
    assert env.autoescape is True and env.undefined is jinja2.StrictUndefined
    assert env.from_string("{{ x }}").render(x="<b>\u202e") == "&lt;b&gt;[U+202E]"


def test_the_bundle_spec_copies_the_templates_next_to_the_module() -> None:
    spec = (ROOT / "installers" / "pyinstaller" / "overlap.spec").read_text(encoding="utf-8")
    tree = ast.parse(spec)
    datas = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "datas" for t in n.targets))
    text = ast.unparse(datas)
    dest = TEMPLATES.relative_to(ROOT).as_posix()
    assert f"'{dest}'" in text or f'"{dest}"' in text, text
    assert all(part in text for part in TEMPLATES.relative_to(ROOT).parts), text
