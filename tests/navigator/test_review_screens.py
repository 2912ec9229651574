"""The diff screen (v), the search screen (ctrl+f) and conflict marks, driven by keys.

Real registries (the frozen demo scenario), real git repositories made here with
fixed dates (so commit ids, and so snapshots, are the same on every run), the
real review and search files. Snapshots at 80x24: ``pytest --snapshot-update``.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, OptionList

from core.review import changes
from core.review.client import ReviewClient
from navigator.app import SwitchboardApp
from navigator.screens.diff import DiffScreen
from navigator.screens.search import SearchScreen
from navigator.screens.session_detail import SessionDetailScreen
from navigator.widgets.diff_view import DiffView, RowKind
from navigator.widgets.frames import CONFLICT_MARK
from tests.navigator.conftest import _demo_template, demo  # noqa: F401 - fixtures
from tests.navigator.helpers import notices, select_frame, settle, tree, wait_until
from tests.navigator.scenario import Scenario
from tests.navigator.test_session_detail import record_frame_work, utc  # noqa: F401
from tests.navigator.test_snapshots import loaded

WIDE = (80, 24)
REPOSITORY_ID = "55555555-5555-4555-8555-000000000001"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
APP = "".join(f"def step_{n}(value):\n    return value + {n}\n\n" for n in range(1, 9))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "init.defaultBranch=main", *args],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def checkout_here(scenario: Scenario, project: str, path: Path,
                  repository_id: str | None = None) -> None:
    """Point a project's checkout at ``path`` (a test-local repository): the frozen
    scenario's checkout folders are shared by every test."""
    conn = sqlite3.connect(scenario.home.registry_path(scenario.engine.generation_id))
    try:
        if repository_id is not None:
            conn.execute("INSERT OR IGNORE INTO repositories (repository_id, host_id, name)"
                         " SELECT ?, host_id, 'widget' FROM projects WHERE name = ?",
                         (repository_id, project))
        conn.execute("UPDATE checkouts SET path = ?, repository_id = ? WHERE checkout_id ="
                     " (SELECT checkout_id FROM projects WHERE name = ?)",
                     (str(path), repository_id, project))
        conn.commit()
    finally:
        conn.close()


def repository(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "app.py").write_text(APP)
    (path / "README.md").write_text("# widget\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "base")
    return path


def change(path: Path) -> None:
    """What an agent did: two edits in app.py and a new module."""
    text = APP.replace("return value + 2", "return value * 2").replace(
        "def step_6(value):\n", "def step_6(value):\n    \"\"\"Six.\"\"\"\n")
    (path / "app.py").write_text(text)
    (path / "limits.py").write_text("MAX_RETRIES = 3\nTIMEOUT_S = 2.5\n")


class _Sending:
    """The real client; the broker send is recorded (the broker has its own tests)."""

    def __init__(self, scenario: Scenario) -> None:
        self._client = scenario.client
        self.sent: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def message_frame(self, frame_id: str, text: str) -> object:
        from core.broker.membership import PersonSent

        self.sent.append((frame_id, text))
        return PersonSent(41, "Fix login", "typed into its pane")


@pytest.fixture
def reviewed(demo: Scenario, tmp_path: Path) -> Scenario:  # noqa: F811
    checkout = repository(tmp_path / "alpha-repo")
    checkout_here(demo, "alpha", checkout)
    change(checkout)
    return demo


async def open_diff(pilot: Any, scenario: Scenario, title: str) -> DiffScreen:
    await settle(pilot)
    await select_frame(pilot, scenario, title)
    await pilot.press("v")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, DiffScreen))
    return pilot.app.screen


async def test_v_shows_the_change_and_a_review_goes_out_as_one_message(
        reviewed: Scenario) -> None:
    client = _Sending(reviewed)
    app = SwitchboardApp(client)  # type: ignore[arg-type]
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_diff(pilot, reviewed, "Fix login")
        assert [f.path for f in screen.diff.files] == ["app.py", "limits.py"]
        files = screen.query_one("#diff-files", OptionList)
        assert files.option_count == 2
        body = screen.query_one(DiffView)
        assert body.has_focus
        await pilot.press("n")  # the first hunk
        assert body.row_at_cursor().kind is RowKind.HUNK
        await pilot.press("down", "down", "down", "down", "down")  # "+    return value * 2"
        row = body.row_at_cursor()
        assert row.line is not None and row.text == "    return value * 2", row
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#text")))
        for key in "use the plus":
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(c.state == "draft" for c in screen.diff.comments))
        assert any(r.kind is RowKind.COMMENT for r in body.rows)
        await pilot.press("down")  # the draft's own row: d deletes it, c writes it again
        assert body.row_at_cursor().kind is RowKind.COMMENT
        await pilot.press("d")
        await wait_until(pilot, lambda: screen.diff.comments == ())
        await pilot.press("up")  # the row under the cursor went: back to the + line
        await pilot.press("c")
        await wait_until(pilot, lambda: bool(pilot.app.screen.query("#text")))
        for key in "use the plus":
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(c.state == "draft" for c in screen.diff.comments))
        await pilot.press("s")
        await wait_until(pilot, lambda: client.sent != [])
        await wait_until(pilot, lambda: all(c.state == "sent" for c in screen.diff.comments))
        assert client.sent == [(reviewed.frames["Fix login"], "review: app.py:5: use the plus")]
        assert any("one message" in text for _, text in notices(app))
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, DiffScreen)


async def test_a_line_that_is_gone_takes_no_comment(reviewed: Scenario) -> None:
    app = SwitchboardApp(reviewed.client)
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_diff(pilot, reviewed, "Fix login")
        body = screen.query_one(DiffView)
        removed = next(n for n, r in enumerate(body.rows)
                       if r.line is not None and r.line.kind.value == "removed")
        body.cursor = removed
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)  # no comment dialog
        assert any("+ or context" in text for _, text in notices(app))


def test_diff_screen_snapshot(snap_compare, reviewed: Scenario) -> None:
    ReviewClient(reviewed.home, reviewed.client.message_frame).comment(
        reviewed.frames["Fix login"], "app.py", 5, "use the plus, as the other steps do")
    assert snap_compare(SwitchboardApp(reviewed.client), terminal_size=WIDE,
                        run_before=loaded(reviewed, "Fix login", ["v", "n", "down", "down"],
                                          pause=0.3))


@pytest.fixture
def searched(demo: Scenario, utc: None) -> Scenario:  # noqa: F811
    record_frame_work(demo, "Fix login")
    return demo


async def test_ctrl_f_finds_a_failure_and_opens_the_timeline_there(searched: Scenario) -> None:
    app = SwitchboardApp(searched.client)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await wait_until(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.query_one("#search-text", Input).value = "pytest -q"
        await wait_until(pilot, lambda: len(screen.results) >= 1)
        assert {r.kind for r in screen.results} == {"command"}
        assert {r.frame_title for r in screen.results} == {"Fix login"}
        screen.query_one("#search-text", Input).value = "test_add assert"
        await wait_until(pilot, lambda: bool(screen.results)
                         and screen.results[0].kind == "failure")
        hit = screen.results[0]
        await pilot.press("enter")  # to the results; enter again opens the first
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionDetailScreen))
        detail = app.screen
        assert isinstance(detail, SessionDetailScreen)
        timeline = detail.query_one("#timeline", OptionList)
        entry = detail.shown[timeline.highlighted or 0]
        assert entry.command_run_id == hit.anchor and entry.failed


def test_search_screen_snapshot(snap_compare, searched: Scenario) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, SearchScreen))
        field = pilot.app.screen.query_one("#search-text", Input)
        field.cursor_blink = False
        for key in "pytest":
            await pilot.press(key)
        await wait_until(pilot, lambda: len(pilot.app.screen.results) >= 2)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(SwitchboardApp(searched.client), terminal_size=WIDE,
                        run_before=run_before)


async def test_overlapping_frames_are_marked_and_named_in_i(demo: Scenario,  # noqa: F811
                                                             tmp_path: Path) -> None:
    alpha = repository(tmp_path / "alpha-repo")
    beta = repository(tmp_path / "beta-repo")
    checkout_here(demo, "alpha", alpha, REPOSITORY_ID)
    checkout_here(demo, "beta", beta, REPOSITORY_ID)
    change(alpha)
    (beta / "app.py").write_text(APP + "def step_9(value):\n    return value + 9\n")
    for title in ("Fix login", "beta"):
        changes.refresh_frame(demo.home, demo.frames[title])
    app = SwitchboardApp(demo.client)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        frames = tree(app)
        await wait_until(pilot, lambda: frames.conflicted == {demo.frames["Fix login"],
                                                              demo.frames["beta"]})
        labels = {str(n.data.frame_id): str(frames.render_label(n, frames.rich_style,
                                                                  frames.rich_style))
                  for n in frames.frame_nodes().values() if n.data is not None}
        assert CONFLICT_MARK in labels[demo.frames["Fix login"]]
        assert CONFLICT_MARK in labels[demo.frames["beta"]]
        assert CONFLICT_MARK not in labels[demo.frames["Write docs"]]
        record_frame_work(demo, "Fix login")
        await select_frame(pilot, demo, "Fix login")
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionDetailScreen))
        text = str(app.screen.query_one("#conflicts").render())
        assert "beta" in text and "app.py" in text
        await pilot.press("escape")
        # Fix login closes: beta's mark goes with it, with no new git data
        from core.context.requests import new_request_id

        demo.engine.frame_close(new_request_id(), demo.frames["Fix login"])
        await wait_until(pilot, lambda: frames.conflicted == frozenset())


def test_agents_text_in_a_diff_is_spelled_out_never_raw(tmp_path: Path) -> None:
    """A file name, a line and a comment with escapes and markup: printable rows only."""
    import re

    from core.review.diff import FrameDiff, parse_diff
    from core.review.model import ReviewComment
    from navigator.widgets.diff_view import build_rows

    text = ("diff --git a/[b]x\x1b[2J.py b/[b]x\x1b[2J.py\n--- a/[b]x\x1b[2J.py\n"
            "+++ b/[b]x\x1b[2J.py\n@@ -1 +1 @@\n-old\n+new\x1b]52;c;ZXZpbA==\x07\tend\n")
    files = tuple(parse_diff(text))
    comment = ReviewComment("c1", files[0].path, 1, "fix\u202ethis", "new", 1, False, False)
    rows = build_rows(FrameDiff("f", "t", "/x", "abc", files, comments=(comment,)))
    raw = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
    assert rows and all(raw.search(row.text) is None for row in rows), rows
    assert any("\\x1b" in row.text for row in rows)
    line = next(row.text for row in rows if "end" in row.text)
    assert " end" in line and "\\t" not in line  # a tab is spaces, not an escape
