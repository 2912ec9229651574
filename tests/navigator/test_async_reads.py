"""A navigator's registry reads through aiosqlite (``EngineClient.state_async``).

The same envelope as the CLI's sqlite3 read, byte for byte; a load that does
not wait behind a request holding the client's lock; a later commit seen on the
next read; and a navigator process that ends without closing the connection
still exits (aiosqlite's worker thread is made a daemon).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

from core.model.enums import Activity
from core.state.envelope import encode_canonical
from tests.navigator.scenario import build_demo, set_activity


def test_the_awaited_read_is_the_envelope_the_cli_reads(tmp_path: Path) -> None:
    scenario = build_demo(tmp_path)
    client = scenario.client
    try:
        expected = encode_canonical(client.state())
        awaited = asyncio.run(client.state_async())
        assert encode_canonical(awaited) == expected
        assert awaited.views and awaited.projects
    finally:
        client.shutdown()


def test_a_load_does_not_wait_behind_a_request_and_sees_the_next_commit(
        tmp_path: Path) -> None:
    scenario = build_demo(tmp_path)
    client = scenario.client
    title = "Fix login"

    async def read_twice() -> tuple[str, str]:
        first = await client.state_async()
        set_activity(scenario, title, Activity.NEEDS_INPUT, "live")
        with client._lock:  # a request in flight holds the client's lock
            second = await asyncio.wait_for(client.state_async(), timeout=10)
        return _activity(first, title), _activity(second, title)

    try:
        before, after = asyncio.run(read_twice())
        assert before != "needs_input"
        assert after == "needs_input"
    finally:
        client.shutdown()


def _activity(state: object, title: str) -> str:
    for project in state.projects:  # type: ignore[attr-defined]
        for frame in project.frames:
            if frame.title == title:
                return str(frame.activity)
    raise AssertionError(f"no frame titled {title!r}")


def test_a_navigator_that_never_closes_the_connection_still_exits(tmp_path: Path) -> None:
    build_demo(tmp_path).client.shutdown()
    script = textwrap.dedent(f"""
        import asyncio
        from pathlib import Path
        from core.apps.client import EngineClient
        from core.config.home import Home
        root = Path({str(tmp_path)!r})
        client = EngineClient.open(Home(root=root, config_path=root / "config.toml"),
                                   with_stage=False)
        state = asyncio.run(client.state_async())
        print(len(state.views))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 1


def test_reads_that_overlap_take_turns_on_the_one_connection(tmp_path: Path) -> None:
    """A load and a request's re-read awaited at once: both get the state (a second
    snapshot inside the first was refused by SQLite)."""
    scenario = build_demo(tmp_path)
    client = scenario.client

    async def both() -> list[object]:
        return list(await asyncio.gather(*(client.state_async() for _ in range(4))))

    try:
        states = asyncio.run(both())
        assert len({encode_canonical(s) for s in states}) == 1  # type: ignore[arg-type]
    finally:
        client.shutdown()
