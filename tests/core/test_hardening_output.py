"""Every command prints text for a person by default and JSON with --json; never a repr.

In-process against a real registry and a private tmux server (the `cli`
fixture of tests/core/test_cli.py).
"""

from __future__ import annotations

import json
import re

from navigator.commands.output import readable
from tests.core.test_cli import cli  # noqa: F401 - the fixture

REPR = re.compile(r"\w+\(\w+=|\{'|\['|Report\(|Row\(")


def test_show_commands_and_reconcile_print_text_by_default(cli) -> None:  # noqa: F811
    route = cli("project", "enter", "alpha", "--json")
    view = cli("view", "show", route["view_id"])
    frame = cli("frame", "show", route["frame_id"])
    report = cli("reconcile")
    for text in (view, frame, report):
        assert not REPR.search(text), text
    assert f"view_id: {route['view_id']}" in view.splitlines()
    assert "mode: navigator" in view.splitlines()
    assert f"frame_id: {route['frame_id']}" in frame.splitlines()
    assert "title: alpha" in frame.splitlines()
    assert re.fullmatch(r"reconcile: \d+ panes seen; [^\n]+\n", report), report
    # --json still gives the machine form, with the same keys
    shown = cli("view", "show", route["view_id"], "--json")
    assert shown["view_id"] == route["view_id"]
    assert json.loads(json.dumps(cli("reconcile", "--json")))["panes_seen"] >= 1


def test_readable_renders_nested_values() -> None:
    text = readable({"ok": True, "id": None, "tags": ["a", "b"], "rows": [{"x": 1}, {"x": 2}],
                     "note": "two\nlines", "empty": []})
    assert text.splitlines() == ["ok: yes", "id: -", "tags: a, b", "rows:", "  x: 1", "",
                                 "  x: 2", "note: two", "  lines", "empty: -"]
