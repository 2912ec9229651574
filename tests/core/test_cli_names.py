"""Frames, views and projects by name through the real `switchboard` entry point
(issue 40 item 1; item 8's `ui --view` from another home).

The homes are real (registry files made by the engine); each command runs as the
installed script in its own process, as a person types it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.home import Home as SbHome
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.ports import Uuid4Ids
from core.runtime import claims
from tests.factories import make_engine

BIN = Path(sys.executable).parent  # holds the `switchboard` entry point of this install


@dataclass(frozen=True)
class Home:
    root: Path
    view_id: str
    workspace_id: str
    add_tests: str
    review_parser: str


def push(engine: Engine, view_id: str, parent: str, title: str) -> str:
    """A task pushed under ``parent``, its brief claimed, and the view back on the parent
    (so the next push may start): what an agent's `task_push` leaves behind."""
    child = engine.frame_push(new_request_id(), parent, title, "a brief").target_frame_id
    claims.claim_for_frame(engine, child, None)
    engine.frame_back(new_request_id(), view_id)
    return child


def _home(root: Path) -> Home:
    engine = make_engine(root, ids=Uuid4Ids())  # ids as a person's home has them
    route = engine.project_enter(new_request_id(), "alpha")
    add = push(engine, route.view_id, route.frame_id, "Add tests")
    review = push(engine, route.view_id, route.frame_id, "Review parser")
    engine.conn.close()
    return Home(root, route.view_id, route.frame_id, add, review)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return _home(tmp_path / "home")


def switchboard(home: Home, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SWITCHBOARD_") and k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(home.root),
               SWITCHBOARD_CONFIG=str(home.root / "config.toml"))
    done = subprocess.run([str(BIN / "switchboard"), *args], env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == expect, (done.stdout, done.stderr)
    return done


def test_frame_show_and_diff_take_a_title(home: Home) -> None:
    shown = json.loads(switchboard(home, "frame", "show", "Add tests", "--json").stdout)
    assert shown["frame_id"] == home.add_tests and shown["title"] == "Add tests"
    diff = json.loads(switchboard(home, "frame", "diff", "Review parser", "--json").stdout)
    assert diff["frame_id"] == home.review_parser and diff["title"] == "Review parser"
    # project/title, an id prefix and the id name the same frame
    for spelling in ("alpha/Add tests", home.add_tests[:13].upper(), home.add_tests):
        again = json.loads(switchboard(home, "frame", "show", spelling, "--json").stdout)
        assert again["frame_id"] == home.add_tests
    # a view by its project's name, a project by its name or id
    views = switchboard(home, "view", "show", "alpha", "--json")
    assert json.loads(views.stdout)["view_id"] == home.view_id
    listed = json.loads(switchboard(home, "frame", "list", "--project", "alpha", "--json").stdout)
    assert {row["title"] for row in listed} == {"alpha", "Add tests", "Review parser"}


def test_an_ambiguous_or_unknown_name_is_refused_in_one_line(home: Home) -> None:
    opened = open_engine(SbHome(home.root, home.root / "config.toml"))
    beta = opened.project_enter(new_request_id(), "beta")
    twin = push(opened, beta.view_id, beta.frame_id, "Add tests")
    opened.conn.close()
    refused = switchboard(home, "frame", "show", "Add tests", expect=2)
    assert refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert "ambiguous_name" in line
    assert f"alpha/Add tests ({home.add_tests[:8]}" in line
    assert f"beta/Add tests ({twin[:8]}" in line
    picked = json.loads(switchboard(home, "frame", "show", "beta/Add tests", "--json").stdout)
    assert picked["frame_id"] == twin
    unknown = switchboard(home, "frame", "diff", "Write docs", expect=2)
    (line,) = unknown.stderr.splitlines()
    assert "unknown frame 'Write docs'" in line and "Review parser" in line


def test_ui_refuses_a_view_of_another_home(home: Home, tmp_path: Path) -> None:
    other = _home(tmp_path / "other")
    assert other.view_id != home.view_id
    refused = switchboard(home, "ui", "--view", other.view_id, expect=2)
    (line,) = refused.stderr.splitlines()
    assert f"unknown view '{other.view_id}'" in line and str(home.root) in line
    # the same id from the pane's environment (a bare `switchboard` there) is refused too
    env_refused = subprocess.run(
        [str(BIN / "switchboard"), "ui"], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")},
             "SWITCHBOARD_HOME": str(home.root),
             "SWITCHBOARD_CONFIG": str(home.root / "config.toml"),
             "SWITCHBOARD_VIEW_ID": other.view_id})
    assert env_refused.returncode == 2 and "unknown view" in env_refused.stderr


def test_every_command_taking_a_frame_view_or_project_resolves_names() -> None:
    """The rule is read off the parser, so a new command is covered by naming its argument
    as the others do; this lists what must be covered today and what must not be."""
    from navigator.cli import build_parser
    from navigator.commands.names import NAMED_ATTRIBUTE, _parsers

    marked = {" ".join(path): dict(child.get_default(NAMED_ATTRIBUTE) or ())
              for path, child in _parsers(build_parser())}
    for command in ("show", "start", "stop", "push", "complete", "close", "reopen", "diff",
                    "switch-provider", "message", "answer"):
        assert marked[f"frame {command}"] == {"frame_id": "frames"}, command
    for command in ("show", "mode", "retire"):
        assert marked[f"view {command}"] == {"view_id": "views"}, command
    assert marked["view focus"] == {"view_id": "views", "frame_id": "frames"}
    assert marked["frame back"] == {"view_id": "views"}
    assert marked["transition cancel"] == {"view": "views"}
    assert marked["session show"] == {"frame_id": "frames"}
    assert marked["context resolve"] == {"foreground": "frames"}
    for command in ("open", "project enter", "view open", "view enter", "frame list",
                    "worktree add", "worktree remove", "search", "usage"):
        assert marked[command] == {"project": "projects"}, command
    # not this registry's rows, or not a name at all: left as typed
    assert not any(marked[path] for path in marked if path.startswith("remote"))
    assert not marked["attention"] and not marked["ui"]  # ui resolves on its own connection
    assert not any("project" in marked[path] for path in marked if path.startswith("hooks"))
