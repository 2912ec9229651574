"""Claude Code's background sessions (``claude --bg``, ``claude agents --json``), measured.

Issue 39 asked to list the background sessions a frame's session started under that
frame, read from ``claude agents --json``. This test pins what 2.1.332 offers, which is
why Switchboard lists none (``docs/cli-versions.md``, "Teammates, subagents and
background sessions"): the listing exists and works without a terminal, but no row names
the session that started it. ``claude --bg`` run from inside a Claude session (its
``CLAUDECODE``/``CLAUDE_CODE_SESSION_ID`` in the environment, as the Bash tool gives them)
records that session only in the background service's private roster
(``~/.claude/daemon/roster.json``), never in the listing. A row's ``cwd`` is the only
link, and several frames share a folder, so attributing by it would list one frame's
background work under its siblings too.

The background service (``claude daemon run``) outlives the command that started it;
the test stops the session with ``claude stop`` and ends the service's process groups
it finds in the private HOME's status file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.model.enums import Provider
from tests.realcli.anthropic_standin import AnthropicStandin
from tests.realcli.harness_claude import claude_command, seed_home
from tests.realcli.install import RealCli, newest
from tests.waiting import retry_until

pytestmark = [pytest.mark.timeout(240)]

LEAD = "11111111-2222-4333-8444-555555555555"
"""The session id of a lead that runs ``claude --bg`` from its Bash tool."""

LISTING_KEYS = {"pid", "id", "cwd", "kind", "startedAt", "sessionId", "name", "status",
                "waitingFor", "state"}
"""Every key a 2.1.332 row can carry (read from the binary's listing code)."""


def _service_groups(home: Path) -> set[int]:
    """Process groups of the background service started in this HOME (its supervisor
    and the workers it spawned): each is a session leader of its own."""
    status = home / ".claude" / "daemon.status.json"
    roster = home / ".claude" / "daemon" / "roster.json"
    pids: set[int] = set()
    for path in (status, roster):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data.get("supervisorPid"), int):
            pids.add(data["supervisorPid"])
    groups: set[int] = set()
    for pid in pids:
        for alive in ([pid] if _alive(pid) else []) + _children(pid):
            try:
                groups.add(os.getpgid(alive))
            except OSError:
                continue
    return groups


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split() if _alive(int(word))]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Path, Path, AnthropicStandin]]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    home.mkdir()
    with AnthropicStandin() as api:
        seed_home(home, [project], newest(Provider.CLAUDE))
        try:
            yield home, project, api
        finally:
            for group in _service_groups(home):
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass


def _run(cli: RealCli, home: Path, project: Path, api: AnthropicStandin,
         *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*claude_command(cli.binary, home, api.url, env), *args]
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


def _listing(cli: RealCli, home: Path, project: Path,
             api: AnthropicStandin) -> list[dict[str, Any]]:
    done = _run(cli, home, project, api, "agents", "--json", "--all")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list)
    return rows


@pytest.mark.parametrize("claude_cli", [newest(Provider.CLAUDE)], indirect=True,
                         ids=lambda v: f"claude-{v}")
def test_a_background_session_is_listed_without_the_session_that_started_it(
        claude_cli: RealCli, world: tuple[Path, Path, AnthropicStandin]) -> None:
    home, project, api = world
    assert _listing(claude_cli, home, project, api) == []  # works without a terminal
    started = _run(claude_cli, home, project, api, "--bg", "hello there",
                   env={"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": LEAD})
    assert started.returncode == 0 and "backgrounded" in started.stdout, started
    short = started.stdout.split("·", 1)[1].split()[0]
    rows: list[dict[str, Any]] = []

    def listed() -> bool:
        rows[:] = _listing(claude_cli, home, project, api)
        return any(row.get("id") == short for row in rows)
    assert retry_until(listed, 30.0), rows
    row = next(row for row in rows if row["id"] == short)
    assert row["kind"] == "background" and row["cwd"] == str(project), row
    assert str(row["sessionId"]).startswith(short), row
    assert set(row) <= LISTING_KEYS, row
    assert LEAD not in json.dumps(rows), rows  # no row names the lead that started it
    # ... which only the service's private roster records
    roster = (home / ".claude" / "daemon" / "roster.json").read_text()
    assert LEAD in roster
    stopped = _run(claude_cli, home, project, api, "stop", short)
    assert stopped.returncode == 0, stopped.stderr
