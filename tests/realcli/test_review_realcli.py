"""Issue 27 with the real Claude Code CLI: a review of its change is one message it reads.

The project is a real git repository; the real CLI's first hooks record the commit
its attempt started from. After a turn, the person's review (two line comments on
what changed since) goes out as ONE broker message: one notification line typed
into the shown, ready pane, the agent polls it (``message_poll``) and ACKs it.
Newest CLI of the window only: the delivery itself is Switchboard's, the CLI only
has to read one message.
"""

from __future__ import annotations

import subprocess

import pytest

from core.broker.delivery import managed_line
from core.broker.membership import person_send
from core.context.requests import new_request_id
from core.model.enums import Provider
from core.review.client import ReviewClient
from tests.realcli.harness import main_pane, screen, type_prompt, xdg_home
from tests.realcli.install import newest
from tests.realcli.test_claude_journey import SLOW, World, _words, world  # noqa: F401
from tests.waiting import retry_until

pytestmark = [pytest.mark.tmux, pytest.mark.timeout(300)]


def _git(here: World, *args: str) -> None:
    subprocess.run(["git", "-C", str(here.project), *args], check=True, capture_output=True)


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_review_reaches_the_real_agent_as_one_message(world: World) -> None:  # noqa: F811
    engine, socket = world.engine, world.socket
    _git(world, "init", "-q")
    _git(world, "config", "user.email", "t@example.invalid")
    _git(world, "config", "user.name", "t")
    (world.project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(world, "add", ".")
    _git(world, "commit", "-q", "-m", "base")
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, Provider.CLAUDE)
    main = main_pane(engine)
    world.wait_prompt(main)
    type_prompt(socket, main, "hello")
    world.wait_activity(route.frame_id, "ready")

    (world.project / "calc.py").write_text("def add(a, b):\n    return a - b  # fixed\n")
    review = ReviewClient(xdg_home(world.root),
                          lambda frame, text: person_send(engine, frame, text))
    diff = review.frame_diff(route.frame_id)
    assert [(f.path, f.added, f.removed) for f in diff.files] == [("calc.py", 1, 1)], diff
    review.comment(route.frame_id, "calc.py", 2, "still subtracts: use a + b")
    review.comment(route.frame_id, "calc.py", 1, "name it plus")
    sent = review.send_review(route.frame_id)
    assert sent.comments == 2
    assert world.broker("SELECT text FROM messages") == [
        ("review: calc.py:1: name it plus\nreview: calc.py:2: still subtracts: use a + b",)]
    assert retry_until(lambda: world.broker(
        "SELECT status_state FROM messages WHERE message_id = ?", sent.message_id)
        == [("completed",)], SLOW), world.dump()
    assert retry_until(lambda: f"STANDIN-ACKED {sent.message_id}" in screen(socket, main),
                       SLOW), world.dump()
    line = managed_line(sent.message_id, "person")
    assert _words(screen(socket, main)).count(_words(line)) == 1, world.dump()
    assert world.broker("SELECT COUNT(*), COUNT(notified_at) FROM messages") == [(1, 1)]
