"""The hook's lean registry open and its fast argv path.

The lean open trusts a cache of what a full open verified (config digest,
host, schema cookie). Every way that cache can disagree with the files must
fall back to the full open, so the hook never accepts what the full open
refuses; refusals still write nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION
from core.context import session as session_mod
from core.context.session import HOOK_OPEN_CACHE, open_for_hook
from core.hooks.hook_handler import handle_hook
from core.model.errors import ConfigError, RegistryUnavailable, Unauthorized
from navigator.commands.hook import parse_fast
from storage import schema
from storage.connection import HOOK_WAL_AUTOCHECKPOINT_PAGES
from tests.core.test_hook_handler import LiveSurface, dump, launch_live_surface, payload_for
from tests.waiting import retry_until


@pytest.fixture
def live(tmp_path: Path, tmux_socket: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveSurface]:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    surface = launch_live_surface(tmp_path, tmux_socket)
    # The fake agent's own SessionStart hook leaves a cache just after its registry commit
    # (which is what launch_live_surface waits for): wait for that write, then start from none.
    assert retry_until(cache_path(surface).exists, 10), "SessionStart left no open cache"
    cache_path(surface).unlink()
    yield surface
    surface.engine.conn.close()


def cache_path(live: LiveSurface) -> Path:
    return live.root / "state" / live.engine.generation_id / HOOK_OPEN_CACHE


def count_full_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = session_mod._full_open

    def spy(home, generation_id, config_digest):
        calls.append(generation_id)
        return real(home, generation_id, config_digest)

    monkeypatch.setattr(session_mod, "_full_open", spy)
    return calls


def prompt(live: LiveSurface, **env: str | None):
    return handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                       live.env(**env))


def test_pinned_identity_constants_match_the_schema() -> None:
    assert session_mod.APPLICATION_ID == schema.APPLICATION_ID
    assert session_mod.SCHEMA_VERSION == schema.SCHEMA_VERSION
    assert session_mod.PROTOCOL_VERSION == schema.PROTOCOL_VERSION


def test_first_hook_opens_fully_and_leaves_a_cache_then_lean(
        live: LiveSurface, monkeypatch: pytest.MonkeyPatch) -> None:
    full = count_full_opens(monkeypatch)
    assert prompt(live).handled
    assert full == [live.engine.generation_id]
    cached = json.loads(cache_path(live).read_text())
    config = (live.root / "config.toml").read_bytes()
    assert cached["config_sha256"] == hashlib.sha256(config).hexdigest()
    assert cached["host_id"] == live.engine.host_id
    assert cached["generation_id"] == live.engine.generation_id
    assert prompt(live).handled
    assert len(full) == 1  # the second hook took the lean path


def test_lean_connection_has_the_standard_pragmas(live: LiveSurface) -> None:
    assert prompt(live).handled
    from core.config.home import Home

    opened = open_for_hook(Home.from_env(live.env()), live.engine.generation_id)
    try:
        assert opened.verified is None  # came from the cache
        conn = opened.conn
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
        assert isinstance(conn.execute("SELECT 1 AS one").fetchone(), sqlite3.Row)
        # checkpoints are the reconcile holder's, not a hook's (a hook's took 100+ ms)
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == \
            HOOK_WAL_AUTOCHECKPOINT_PAGES
    finally:
        opened.conn.close()
    first = open_for_hook(Home.from_env(live.env()), live.engine.generation_id)
    try:  # the full open (no cache) too
        cache_path(live).unlink()
        full = open_for_hook(Home.from_env(live.env()), live.engine.generation_id)
        assert full.verified is not None
        assert full.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == \
            HOOK_WAL_AUTOCHECKPOINT_PAGES
        full.conn.close()
    finally:
        first.conn.close()


def test_refused_capability_leaves_no_cache(live: LiveSurface) -> None:
    # The agent's own SessionStart hook (a real pane's) may still be writing its cache
    # just after the bind commit: let it, then start from none.
    retry_until(lambda: cache_path(live).exists(), 10)
    cache_path(live).unlink(missing_ok=True)
    before = dump(live)
    with pytest.raises(Unauthorized):
        prompt(live, **{ENV_CAPABILITY: "sbcap1_" + "A" * 43})
    assert not cache_path(live).exists()
    assert dump(live) == before


def test_changed_config_falls_back_to_the_full_open(
        live: LiveSurface, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prompt(live).handled
    config = live.root / "config.toml"
    config.write_text(config.read_text() + "\n# edited\n")
    full = count_full_opens(monkeypatch)
    assert prompt(live).handled
    assert len(full) == 1
    assert json.loads(cache_path(live).read_text())["config_sha256"] == \
        hashlib.sha256(config.read_bytes()).hexdigest()


def test_invalid_config_is_refused_even_with_a_cache(live: LiveSurface) -> None:
    assert prompt(live).handled
    config = live.root / "config.toml"
    config.write_text(config.read_text() + "\nunknown_key = 1\n")
    before = dump(live)
    with pytest.raises(ConfigError):
        prompt(live)
    assert dump(live) == before


def test_forged_cache_host_cannot_open_another_hosts_registry(
        live: LiveSurface, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prompt(live).handled
    cached = json.loads(cache_path(live).read_text())
    cache_path(live).write_text(json.dumps(dict(cached, host_id="someone-else")))
    full = count_full_opens(monkeypatch)
    assert prompt(live).handled  # the metadata disagreed: the full open decided
    assert len(full) == 1


@pytest.mark.parametrize("garbage", ["", "{", "[]", '{"format": 99}'])
def test_unreadable_cache_is_a_miss(live: LiveSurface, monkeypatch: pytest.MonkeyPatch,
                                    garbage: str) -> None:
    cache_path(live).write_text(garbage)
    full = count_full_opens(monkeypatch)
    assert prompt(live).handled
    assert len(full) == 1


def test_schema_change_falls_back_to_the_full_open(
        live: LiveSurface, monkeypatch: pytest.MonkeyPatch) -> None:
    assert prompt(live).handled
    live.engine.conn.execute("CREATE TABLE extra_notes (x)")  # bumps the schema cookie
    full = count_full_opens(monkeypatch)
    assert prompt(live).handled
    assert len(full) == 1


def test_partial_registry_behind_a_valid_cache_is_refused_unchanged(
        live: LiveSurface) -> None:
    assert prompt(live).handled
    live.engine.conn.execute("PRAGMA foreign_keys = OFF")
    live.engine.conn.execute("DROP TABLE desktop_attachment_leases")
    live.engine.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    registry = live.root / "state" / live.engine.generation_id / "registry.sqlite3"
    before = hashlib.sha256(registry.read_bytes()).hexdigest()
    with pytest.raises(RegistryUnavailable, match="partially initialized"):
        prompt(live)
    assert hashlib.sha256(registry.read_bytes()).hexdigest() == before


def test_reset_between_check_and_commit_is_a_stale_noop(
        live: LiveSurface, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.hooks.hook_handler as handler

    real_open = handler.open_for_hook
    pointer = live.root / "state" / "current"
    original = pointer.read_text()

    def open_then_reset(home, generation_id):
        opened = real_open(home, generation_id)
        pointer.write_text("a-newer-generation\n")
        return opened

    monkeypatch.setattr(handler, "open_for_hook", open_then_reset)
    before = dump(live)
    try:
        outcome = prompt(live)
    finally:
        pointer.write_text(original)
    assert not outcome.handled and "stale" in outcome.reason
    assert dump(live) == before
    assert not cache_path(live).exists()


# ------------------------------------------------------------------ argv fast path


@pytest.mark.parametrize("argv, expected", [
    (["--provider", "claude", "Stop"], ("claude", "Stop", None, False)),
    (["--provider=codex", "notify", '{"type": "agent-turn-complete"}'],
     ("codex", "notify", '{"type": "agent-turn-complete"}', False)),
    (["Stop", "--json", "--provider", "claude"], ("claude", "Stop", None, True)),
])
def test_fast_parse_accepts_what_providers_send(argv: list[str], expected: tuple) -> None:
    parsed = parse_fast(argv)
    assert parsed is not None
    assert (parsed.provider, parsed.event, parsed.payload, parsed.json) == expected


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["-h"], ["--provider", "claude"], ["--provider", "aider", "Stop"],
    ["--prov", "claude", "Stop"], ["--provider", "claude", "a", "b", "c"],
    ["--provider"], ["--provider", "claude", "--provider", "codex", "Stop"],
    ["--provider", "claude", "--", "Stop"], ["--provider", "claude", "--verbose", "Stop"],
])
def test_fast_parse_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    assert parse_fast(argv) is None


def test_cli_fast_and_slow_paths_agree_on_unmanaged(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from navigator.cli import main

    for name in (ENV_CAPABILITY, ENV_GENERATION):
        monkeypatch.delenv(name, raising=False)
    assert main(["hook", "--provider", "claude", "Stop", "--json"]) == 0
    fast = capsys.readouterr().out
    assert main(["hook", "--provider", "claude", "--js", "Stop"]) == 0  # argparse prefix
    assert capsys.readouterr().out == fast
    assert json.loads(fast)["handled"] is False


def test_cli_fast_path_reports_domain_errors(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from navigator.cli import main

    monkeypatch.setenv(ENV_CAPABILITY, "sbcap1_x")
    monkeypatch.delenv(ENV_GENERATION, raising=False)
    assert main(["hook", "--provider", "claude", "Stop", "{}"]) == Unauthorized.exit_code
    assert capsys.readouterr().err.startswith("switchboard: unauthorized: partial")
