"""`switchboard ui` (and bare `switchboard`) reach the navigator without importing Textual early."""

from __future__ import annotations

import subprocess
import sys

import pytest

from navigator.cli import build_parser


def test_ui_takes_the_view_from_flag_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_VIEW_ID", "from-env")
    args = build_parser("ui").parse_args(["ui"])
    assert args.view_id == "from-env" and args.poll == 0.25
    args = build_parser("ui").parse_args(["ui", "--view", "from-flag", "--poll", "1"])
    assert args.view_id == "from-flag" and args.poll == 1.0
    assert callable(args.handler)


def test_building_the_cli_does_not_import_textual() -> None:
    code = ("import sys; from navigator.cli import build_parser; build_parser('ui');"
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
