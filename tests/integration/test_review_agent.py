"""A review reaches a live fake agent as one broker message, on a private tmux server.

The project's checkout is a real git repository; the agent's first hook records
the commit it started from (the frame's base). The person changes a file (as an
agent would), reads the frame's diff, comments on two lines and sends the
review: the broker holds ONE message from the person with both comments, the
agent's pane gets one notification line, the agent reads it (message_poll) and
ACKs it. That turn ran tools, so its Stop starts the change worker, which
stores the frame's changed files; a later change to a commented line resolves
that comment.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from core.broker.membership import person_send
from core.context.requests import new_request_id
from core.model.enums import Provider
from core.review import changes
from core.review.client import ReviewClient
from storage import review_store
from tests.integration.journey_env import make_live_engine, one, type_line
from tests.integration.transitions_env import screen
from tests.waiting import retry_until


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def _broker(path: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql, args).fetchall()]
    finally:
        conn.close()


def _ready(engine, frame_id: str) -> bool:
    row = one(engine, "SELECT activity FROM provider_sessions WHERE session_key ="
                      " (SELECT current_session_key FROM frames WHERE frame_id = ?)", frame_id)
    return row is not None and row[0] == "ready"


def test_a_review_is_one_message_the_agent_reads(tmp_path: Path, tmux_socket: Path,
                                                 monkeypatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    engine = make_live_engine(tmp_path, tmux_socket)
    checkout = tmp_path / "src" / "alpha"
    _git(checkout, "init", "-q")
    _git(checkout, "config", "user.email", "t@example.invalid")
    _git(checkout, "config", "user.name", "t")
    (checkout / "calc.py").write_text("def add(a, b):\n    return a - b\n\nRATE = 3\n")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-q", "-m", "base")
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: ">" in screen(tmux_socket, main).split(), 15.0)
    type_line(tmux_socket, main, "hello")  # its first hooks record the base commit
    assert retry_until(lambda: _ready(engine, route.frame_id), 15.0)

    # What the agent changed since that commit (uncommitted and a new file).
    (checkout / "calc.py").write_text("def add(a, b):\n    return a - b  # fixed?\n\nRATE = 4\n")
    (checkout / "notes.md").write_text("todo\n")
    review = ReviewClient(engine.home, lambda frame, text: person_send(engine, frame, text))
    diff = review.frame_diff(route.frame_id)
    assert diff.problem is None
    assert {f.path: (f.added, f.removed) for f in diff.files} == {"calc.py": (2, 2),
                                                                   "notes.md": (1, 0)}
    review.comment(route.frame_id, "calc.py", 2, "still subtracts: use a + b")
    review.comment(route.frame_id, "calc.py", 4, "why 4?")
    sent = review.send_review(route.frame_id)
    assert sent.comments == 2

    broker_db = tmp_path / "broker.sqlite3"
    rows = _broker(broker_db, "SELECT m.message_id, m.text FROM messages m JOIN members f"
                              " ON f.member_id = m.from_member_id WHERE f.name = 'person'")
    assert rows == [(sent.message_id, "review: calc.py:2: still subtracts: use a + b\n"
                                      "review: calc.py:4: why 4?")]
    line = f"[switchboard] message {sent.message_id} from person"
    assert retry_until(lambda: line in screen(tmux_socket, main), 30), screen(tmux_socket, main)
    assert retry_until(lambda: f"message {sent.message_id}: review: calc.py:2: still subtracts"
                       in screen(tmux_socket, main), 30), screen(tmux_socket, main)
    assert retry_until(lambda: _broker(broker_db, "SELECT status_state FROM messages WHERE"
                                                  " message_id = ?", sent.message_id)
                       == [("completed",)], 30)
    assert screen(tmux_socket, main).count(line) == 1

    # The reading turn ran tools: its Stop started the change worker (detached).
    def stored() -> tuple[str, ...] | None:
        conn = review_store.open_review_readonly(tmp_path)
        if conn is None:
            return None
        try:
            found = {r.frame_id: r.files for r in review_store.changes(conn)}
        finally:
            conn.close()
        return found.get(route.frame_id)

    assert retry_until(lambda: stored() == ("calc.py", "notes.md"), 30), stored()
    states = {c.line: c.state for c in review.frame_diff(route.frame_id).comments}
    assert states == {2: "sent", 4: "sent"}
    # The agent's next change touches line 2: that comment resolves, line 4's stays open.
    (checkout / "calc.py").write_text("def add(a, b):\n    return a + b\n\nRATE = 4\n")
    changes.refresh_frame(engine.home, route.frame_id)
    states = {c.line: c.state for c in review.frame_diff(route.frame_id).comments}
    assert states == {2: "resolved", 4: "sent"}
    engine.conn.close()
