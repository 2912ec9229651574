"""Diff review, conflicts and search over real git repositories, worktrees and registries.

A repository with a second checkout made by ``git worktree add``; each checkout is
a project of one repository row; frames are entered and pushed through the real
engine; changes are real files; the review and search files are real SQLite
files under the home.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core.config.config import CheckoutConfig, RepositoryConfig
from core.config.home import Home
from core.config.registry import init_registry, open_current
from core.engine.engine import Engine
from core.evidence import search_index as upkeep
from core.model.ports import FixedClock, SequentialIds
from core.review import changes, review
from core.review import search as search_mod
from core.review.client import ReviewClient
from core.review.diff import FileStatus, LineKind, parse_diff, patch_text
from storage import review_store, search_store
from storage.side_files import file_mode
from tests.core.engines import rid
from tests.factories import project_config

REPOSITORY_ID = "44444444-4444-4444-8444-000000000001"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout


@dataclass
class World:
    home: Home
    engine: Engine
    alpha: Path
    beta: Path
    alpha_ws: str = ""
    beta_ws: str = ""


@pytest.fixture
def world(tmp_path: Path) -> World:
    root = tmp_path / "home"
    src = root / "src"
    alpha = src / "alpha"
    alpha.mkdir(parents=True)
    git(alpha, "init", "-q", "-b", "main")
    git(alpha, "config", "user.email", "t@example.invalid")
    git(alpha, "config", "user.name", "t")
    for name in ("app.py", "util.py", "README.md"):
        (alpha / name).write_text("".join(f"{name} line {n}\n" for n in range(1, 21)))
    git(alpha, "add", ".")
    git(alpha, "commit", "-q", "-m", "base")
    beta = src / "beta"
    git(alpha, "worktree", "add", "-q", "-b", "beta", str(beta))
    template = project_config(src)
    template = replace(
        template, repositories=(RepositoryConfig(REPOSITORY_ID, "widget"),),
        checkouts=tuple(replace(c, repository_id=REPOSITORY_ID) for c in template.checkouts))
    assert all(isinstance(c, CheckoutConfig) for c in template.checkouts)
    home = Home(root=root, config_path=root / "config.toml")
    init_registry(home, template=template)
    opened = open_current(home)
    engine = Engine(conn=opened.conn, config=opened.config, clock=FixedClock(),
                    ids=SequentialIds())
    w = World(home, engine, alpha, beta)
    w.alpha_ws = engine.project_enter(rid(1), "alpha").frame_id
    w.beta_ws = engine.project_enter(rid(2), "beta").frame_id
    yield w
    engine.conn.close()


def push(world: World, n: int, parent: str, title: str, brief: str):
    """A task pushed under ``parent`` and its brief claimed (so it can be closed)."""
    from core.runtime import claims

    pushed = world.engine.frame_push(rid(n), parent, title, brief)
    claims.claim_for_frame(world.engine, pushed.target_frame_id, None)
    return pushed


def edit(path: Path, line: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")


def no_send(frame_id: str, text: str) -> object:
    raise AssertionError("nothing is sent here")


# --------------------------------------------------------------------------- diff


def test_frame_diff_has_committed_uncommitted_and_untracked_changes(world: World) -> None:
    base = git(world.alpha, "rev-parse", "HEAD").strip()
    edit(world.alpha / "app.py", 3, "changed three")
    git(world.alpha, "commit", "-q", "-am", "one")  # committed after the base ...
    edit(world.alpha / "util.py", 5, "changed five")  # ... and not yet committed
    (world.alpha / "new_mod.py").write_text("x = 1\ny = 2\n")
    from core.review.diff import read_diff

    files, truncated = read_diff(str(world.alpha), base)
    assert not truncated
    by_path = {f.path: f for f in files}
    assert set(by_path) == {"app.py", "util.py", "new_mod.py"}
    assert (by_path["app.py"].added, by_path["app.py"].removed) == (1, 1)
    assert by_path["new_mod.py"].status is FileStatus.UNTRACKED
    added = [x for h in by_path["util.py"].hunks for x in h.lines if x.kind is LineKind.ADDED]
    assert [(x.new_no, x.text) for x in added] == [(5, "changed five")]
    # the text a pager gets parses back to the same files
    again = parse_diff(patch_text(replace(_diff(world), files=tuple(files))))
    assert [(f.path, f.added, f.removed) for f in again] == \
        [(f.path, f.added, f.removed) for f in files]


def _diff(world: World):  # a FrameDiff of the alpha workspace through the client
    return ReviewClient(world.home, no_send).frame_diff(world.alpha_ws)


def test_frame_diff_without_a_recorded_base_shows_uncommitted_changes(world: World) -> None:
    edit(world.beta / "README.md", 1, "beta readme")
    diff = ReviewClient(world.home, no_send).frame_diff(world.beta_ws)
    assert diff.problem is None
    assert diff.base_ref == git(world.beta, "rev-parse", "HEAD").strip()
    assert [f.path for f in diff.files] == ["README.md"]


def test_parse_handles_renames_deletes_and_quoted_names() -> None:
    text = (
        'diff --git "a/sp\\303\\244ce.txt" "b/moved \\303\\244.txt"\n'
        "similarity index 100%\n"
        'rename from "sp\\303\\244ce.txt"\n'
        'rename to "moved \\303\\244.txt"\n'
        "diff --git a/gone.py b/gone.py\n"
        "deleted file mode 100644\n"
        "--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n")
    files = parse_diff(text)
    assert [(f.path, f.old_path, f.status) for f in files] == [
        ("moved ä.txt", "späce.txt", FileStatus.RENAMED),
        ("gone.py", None, FileStatus.DELETED),
        ("img.png", None, FileStatus.MODIFIED)]
    assert files[1].removed == 2 and files[2].binary


# --------------------------------------------------------------------------- comments


def test_comments_are_one_message_and_resolve_when_their_line_changes(world: World) -> None:
    edit(world.alpha / "app.py", 4, "def wrong(): pass")
    sent: list[tuple[str, str]] = []

    def send(frame_id: str, text: str):
        from core.broker.membership import PersonSent

        sent.append((frame_id, text))
        return PersonSent(7, "alpha", "typed into its pane")

    client = ReviewClient(world.home, send)
    client.comment(world.alpha_ws, "app.py", 4, "this should be right()")
    client.comment(world.alpha_ws, "app.py", 10, "and this line stays")
    result = client.send_review(world.alpha_ws)
    assert result.comments == 2 and result.message_id == 7
    assert sent == [(world.alpha_ws, "review: app.py:4: this should be right()\n"
                                     "review: app.py:10: and this line stays")]
    with pytest.raises(review.ReviewRefused):
        client.send_review(world.alpha_ws)  # nothing left to send: refused, nothing sent
    assert len(sent) == 1
    states = {c.line: c.state for c in client.frame_diff(world.alpha_ws).comments}
    assert states == {4: "sent", 10: "sent"}
    # the agent's next change touches line 4 only (a line inserted above shifts line 10)
    lines = (world.alpha / "app.py").read_text().splitlines()
    lines[3] = "def right(): pass"
    lines.insert(0, "# header")
    (world.alpha / "app.py").write_text("\n".join(lines) + "\n")
    changes.refresh_frame(world.home, world.alpha_ws)
    states = {c.line: c.state for c in client.frame_diff(world.alpha_ws).comments}
    assert states == {4: "resolved", 10: "sent"}
    assert file_mode(review_store.review_path(world.home.root)) == 0o600


def test_a_comment_off_the_file_or_with_controls_is_refused(world: World) -> None:
    client = ReviewClient(world.home, no_send)
    with pytest.raises(review.ReviewRefused):
        client.comment(world.alpha_ws, "../outside.py", 1, "no")
    with pytest.raises(review.NotFound):
        client.comment(world.alpha_ws, "app.py", 999, "past the end")
    with pytest.raises(review.SwitchboardError):
        client.comment(world.alpha_ws, "app.py", 1, "bad\x1b[2Jtext")
    assert client.frame_diff(world.alpha_ws).comments == ()


# --------------------------------------------------------------------------- conflicts


def test_overlapping_frames_of_one_repository_are_marked_until_one_closes(world: World) -> None:
    task_a = push(world, 3, world.alpha_ws, "Task A", "edit app").target_frame_id
    task_b = push(world, 4, world.beta_ws, "Task B", "edit app").target_frame_id
    edit(world.alpha / "app.py", 2, "alpha's change")
    edit(world.alpha / "README.md", 2, "only alpha")
    edit(world.beta / "app.py", 7, "beta's change")
    for frame in (task_a, task_b):
        changes.refresh_frame(world.home, frame)
    found = changes.conflicts(world.home)
    pairs = {(c.frame_id, c.other_frame_id): c.files for c in found}
    assert pairs == {(task_a, task_b): ("app.py",), (task_b, task_a): ("app.py",)}
    # a frame in the same checkout as task A shares its working tree: never a conflict
    changes.refresh_frame(world.home, world.alpha_ws)
    assert (world.alpha_ws, task_a) not in {(c.frame_id, c.other_frame_id)
                                            for c in changes.conflicts(world.home)}
    world.engine.frame_close(rid(5), task_b)
    remaining = {(c.frame_id, c.other_frame_id) for c in changes.conflicts(world.home)}
    assert task_a not in {a for a, _ in remaining} and task_b not in {b for _, b in remaining}
    assert (world.alpha_ws, world.beta_ws) not in remaining  # beta's workspace never refreshed


def test_the_hook_starts_the_change_worker_only_after_a_turn_with_tools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from storage import session_db

    path = tmp_path / "s" / "session.db"
    conn = session_db.open_session_db(path, now_ms=1_000)
    try:
        key = "h:claude:1"
        session_db.record_hook_event(conn, session_key=key, provider="claude",
                                     project_id="p", project_root="/r", event="UserPromptSubmit",
                                     kind="prompt_submitted", now_ms=2_000, prompt="hi")
        from core.evidence.change_watch import last_tool_run

        assert last_tool_run(conn, key) is None
        session_db.record_hook_event(conn, session_key=key, provider="claude",
                                     project_id="p", project_root="/r", event="PreToolUse",
                                     kind="tool_started", now_ms=3_000, tool_name="Edit")
        assert last_tool_run(conn, key) is not None
        session_db.record_hook_event(conn, session_key=key, provider="claude",
                                     project_id="p", project_root="/r", event="UserPromptSubmit",
                                     kind="prompt_submitted", now_ms=4_000, prompt="again")
        assert last_tool_run(conn, key) is None
        # one worker per change: a second turn end of the same turn (Codex's Stop, then
        # its notify) starts none
        session_db.record_hook_event(conn, session_key=key, provider="claude",
                                     project_id="p", project_root="/r", event="PreToolUse",
                                     kind="tool_started", now_ms=5_000, tool_name="Edit")
        from core.config.home import Home
        from core.evidence import change_watch

        started: list[list[str]] = []
        monkeypatch.setattr("core.model.spawn.spawn_detached",
                            lambda argv, env: started.append(list(argv)) or 1)
        home = Home(root=tmp_path / "home", config_path=tmp_path / "home" / "config.toml")
        assert change_watch.after_stop(conn, home, key, "frame-1")
        assert not change_watch.after_stop(conn, home, key, "frame-1")
        assert not change_watch.after_stop(conn, home, key, None)
        assert [argv[-2:] for argv in started] == [["core.review.worker", "frame-1"]]
        session_db.record_hook_event(conn, session_key=key, provider="claude",
                                     project_id="p", project_root="/r", event="PreToolUse",
                                     kind="tool_started", now_ms=6_000, tool_name="Write")
        assert change_watch.after_stop(conn, home, key, "frame-1")  # a new change: again
        assert len(started) == 2
    finally:
        conn.close()


# --------------------------------------------------------------------------- search


def test_search_finds_briefs_commands_and_failures_of_open_and_closed_frames(
        world: World) -> None:
    from storage.session_db import iso

    root = world.home.root
    open_task = push(world, 6, world.alpha_ws, "Migrate billing",
                     "run the zebrafish migration on staging")
    closed_task = push(world, 7, world.beta_ws, "Old cleanup", "remove the platypus cache")
    for pushed in (open_task, closed_task):
        upkeep.after_push(root, world.engine.conn, pushed.transition_id, iso(5_000))
    world.engine.frame_close(rid(8), closed_task.target_frame_id)
    from storage.session_evidence import DiagnosticRow

    failure = DiagnosticRow(None, "python", "pytest", "error", "tests/test_pay.py", 3, None,
                            "E999", "AssertionError: refund mismatch", "sig-refund-42")
    session = session_db_with_command(root, "h:claude:closed", "p")
    upkeep.after_hook(root, session, project_id=_project(world, "beta"),
                      frame_id=closed_task.target_frame_id, session_key="h:claude:closed",
                      event_id=_event_id(session), at=iso(6_000), prompt=None,
                      command="alembic upgrade heads --sql", finished=True,
                      diagnostics=(failure,))
    session.close()
    found = {r.kind: r for r in search_mod.search(world.home, "zebrafish")}
    assert set(found) == {"brief"} and found["brief"].frame_title == "Migrate billing"
    assert found["brief"].frame_state == "open"
    brief = search_mod.search(world.home, "platypus")[0]
    assert (brief.kind, brief.frame_state) == ("brief", "closed")
    command = search_mod.search(world.home, "alembic upgr")[0]  # the last word is a prefix
    assert command.kind == "command" and command.anchor is not None
    assert command.frame_id == closed_task.target_frame_id
    signature = search_mod.search(world.home, "refund mismatch")
    assert [r.kind for r in signature] == ["failure"]
    assert search_mod.search(world.home, "sig refund 42")[0].kind == "failure"
    assert search_mod.search(world.home, "zebrafish", project="beta") == []
    with pytest.raises(search_mod.SearchRefused):
        search_mod.search(world.home, '"(*)"')
    # FTS5 syntax in the text is words, never operators
    assert search_mod.search(world.home, "zebrafish OR NEAR(platypus)") == []
    assert file_mode(search_store.search_path(root)) == 0o600
    # a rebuild from the registry and the session files finds the same things
    assert search_mod.rebuild(world.home) >= 2
    assert search_mod.search(world.home, "platypus")[0].kind == "brief"


def _project(world: World, name: str) -> str:
    return world.engine.conn.execute("SELECT project_id FROM projects WHERE name = ?",
                                     (name,)).fetchone()[0]


def session_db_with_command(root: Path, key: str, project_id: str):
    """A session file with one finished shell command (as the hook writes it)."""
    from storage import session_db
    from storage.session_evidence import CommandRecord

    conn = session_db.open_session_db(session_db.session_db_path(root, key), now_ms=1_000)
    session_db.record_hook_event(
        conn, session_key=key, provider="claude", project_id=project_id, project_root="/r",
        event="PostToolUse", kind="tool_finished", now_ms=6_000, tool_name="Bash",
        command=CommandRecord("alembic upgrade heads --sql", "/r", True, 1, "payload", 5,
                              "failed"))
    return conn


def _event_id(conn) -> str:
    return conn.execute("SELECT id FROM events WHERE command_run_id IS NOT NULL").fetchone()[0]


def test_index_upkeep_is_best_effort(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A foreign file where the index should be: the evidence write goes on, stderr says so."""
    root = tmp_path / "home"
    root.mkdir()
    (root / "search.db").write_bytes(b"not sqlite at all" * 10)
    upkeep._write(root, [search_store.Entry("prompt:1", "prompt", "p", None, None, "t", "x")])
    assert "search index not updated" in capsys.readouterr().err
    assert (root / "search.db").read_bytes() == b"not sqlite at all" * 10
    assert os.path.exists(root / "search.db")
