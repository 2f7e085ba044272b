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


HOSTILE = "evil\u202egpj.exe<script>alert(1)</script>\x07\"'&=cmd"


def test_delivery_check_page_escapes_and_neutralises_names() -> None:
    from overlap_desktop.core.manifest.verify import EntryResult, VerifyResult, render_verify_html

    result = VerifyResult(manifest="/m/" + HOSTILE, root="ab" * 32, label=HOSTILE, data_dir="/d/" + HOSTILE,
                          anonymized=False,
                          entries=[EntryResult(HOSTILE, "altered", 20, "11" * 32, HOSTILE, 2, "22" * 32,
                                               reason="size differs")],
                          extra=[{"path": HOSTILE, "size": 5}], unreadable=[{"path": "u", "error": "<denied>"}],
                          ignored=[{"path": "Thumbs.db", "size": 7}], checked="2026-12-02T15:00:00Z")
    page = render_verify_html(result)
    assert "<script" not in page.lower() and "\u202e" not in page and "\x07" not in page
    assert "evil[U+202E]gpj.exe&lt;script&gt;alert(1)&lt;/script&gt;[U+0007]&#34;&#39;&amp;=cmd" in page
    assert "&lt;denied&gt;" in page and f'<code id="seal">{"ab" * 32}</code>' in page
    assert "2 December 2026, 15:00 UTC" in page
