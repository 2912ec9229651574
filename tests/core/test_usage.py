"""Token usage from the CLIs' own files: the readers, the evidence file's V2 tables, the
Stop hook's read, the price table and ``switchboard usage`` / ``limits``.

The transcript and rollout lines are shaped exactly as Claude Code 2.1.332 and Codex
0.171.0 wrote them against the loopback stand-ins (assistant lines with ``usage``, an
API-error line with ``error: rate_limit``; ``turn_context`` and ``token_count``
events); the real-CLI tier checks the same against the real CLIs.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ConfigError, PriceConfig, parse_config, render_config
from core.hooks.hook_handler import handle_hook
from core.hooks.usage_handoff import after_turn
from core.model.limit_text import reset_from_text
from core.model.usage import LimitKind, Tokens
from core.providers.usage_files import read_claude, read_codex
from core.usage.pricing import DEFAULT_PRICES, cost, price_for
from core.usage.worker import SETTLE, read_settled, read_usage, usable_source
from navigator.cli import main
from storage import session_db
from storage.session_usage import turn_usage
from tests.core.test_hook_handler import LiveSurface, launch_live_surface
from tests.factories import project_config
from tests.waiting import retry_until

NOW = 1_796_500_000_000


def claude_line(msg_id: str, model: str, inp: int, out: int, cread: int = 0,
                cwrite: int = 0) -> str:
    return json.dumps({"type": "assistant", "uuid": msg_id + "-u", "message": {
        "id": msg_id, "model": model, "role": "assistant", "content": [],
        "usage": {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cread,
                  "cache_creation_input_tokens": cwrite,
                  "output_tokens_details": {"thinking_tokens": 0}}}}) + "\n"


LIMIT_LINE = json.dumps({
    "type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
    "apiErrorStatus": 429, "message": {"id": "x", "model": "<synthetic>", "usage": {
        "input_tokens": 0, "output_tokens": 0}, "content": [{"type": "text", "text":
            "Claude AI usage limit reached|1796503600"}]}}) + "\n"


def codex_count(inp: int, cached: int, out: int, reasoning: int = 0) -> str:
    usage = {"input_tokens": inp, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
             "output_tokens": out, "reasoning_output_tokens": reasoning,
             "total_tokens": inp + out}
    return json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": usage, "last_token_usage": usage}, "rate_limits": None}}) + "\n"


def codex_context(model: str) -> str:
    return json.dumps({"type": "turn_context", "payload": {"model": model}}) + "\n"


# --------------------------------------------------------------------------- readers


def test_claude_counts_each_message_once_and_keeps_a_partial_line() -> None:
    data = (json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n"
            + claude_line("m1", "claude-sonnet-4-5", 1234, 1, 789, 321)  # a block's line
            + claude_line("m1", "claude-sonnet-4-5", 1234, 56, 789, 321)  # the final one
            + claude_line("m2", "claude-sonnet-4-5", 10, 5)
            + '{"type": "assistant", "message": {"id": "m3"')  # still being written
    batch = read_claude(data.encode(), {})
    (usage,) = batch.per_model.values()
    assert usage.tokens == Tokens(1244, 61, 789, 321) and usage.requests == 2
    assert batch.offset == data.rindex("\n") + 1 and batch.limit is None
    # the next read starts after the last whole line and remembers m2
    again = read_claude(claude_line("m2", "claude-sonnet-4-5", 10, 9).encode(), batch.state)
    assert again.per_model[("claude-sonnet-4-5")].tokens == Tokens(0, 4, 0, 0)
    assert again.per_model["claude-sonnet-4-5"].requests == 0


def test_claude_limit_line_and_its_reset() -> None:
    batch = read_claude((claude_line("m1", "claude-opus-4-1", 5, 5) + LIMIT_LINE).encode(), {},
                        NOW)
    assert batch.limit is not None and batch.limit.kind is LimitKind.RATE_LIMIT
    assert batch.limit.reset_at_ms == 1796503600 * 1000
    # a model answer after the error: the turn did not end on it
    assert read_claude((LIMIT_LINE + claude_line("m2", "m", 1, 1)).encode(), {}).limit is None


def test_reset_texts() -> None:
    assert reset_from_text("You've hit your usage limit. Try again in 2 hours 5 minutes.",
                           NOW) == NOW + (2 * 3600 + 5 * 60) * 1000
    assert reset_from_text("rate limited, please try again later", NOW) is None


def test_codex_uses_the_running_total_and_moves_cached_input() -> None:
    data = (codex_context("gpt-5") + codex_count(2345, 600, 78, 12)
            + codex_count(2345, 600, 78, 12)  # the same event again counts nothing
            + codex_count(4000, 1000, 100, 12))
    batch = read_codex(data.encode(), {})
    (usage,) = batch.per_model.values()
    assert usage.model == "gpt-5" and usage.requests == 2
    assert usage.tokens == Tokens(input=3000, output=100, cache_read=1000, reasoning=12)
    nxt = read_codex(codex_count(5000, 1000, 150, 12).encode(), batch.state)
    assert nxt.per_model["gpt-5"].tokens == Tokens(1000, 50, 0, 0, 0)


def test_codex_usage_limit_error() -> None:
    error = json.dumps({"type": "event_msg", "payload": {
        "type": "error", "message": "You've hit your usage limit. Try again in 3 minutes."}})
    batch = read_codex((error + "\n").encode(), {}, NOW)
    assert batch.limit is not None and batch.limit.kind is LimitKind.USAGE_LIMIT
    assert batch.limit.reset_at_ms == NOW + 180_000


def test_codex_usage_limit_in_task_complete() -> None:
    """Codex 0.171.0 against a 429 usage_limit_reached: the turn's task_complete event
    carries the error (recorded with the real CLI against the stand-in)."""
    done = json.dumps({"type": "event_msg", "payload": {
        "type": "task_complete", "turn_id": "t1", "last_agent_message": None,
        "error": {"message": "You\u2019ve hit your usage limit. Upgrade to Pro "
                             "(https://chatgpt.com/explore/pro), visit "
                             "https://chatgpt.com/settings/usage to purchase more credits "
                             "or try again later.",
                  "codex_error_info": "usage_limit_exceeded"}}})
    batch = read_codex((done + "\n").encode(), {}, NOW)
    assert batch.limit is not None and batch.limit.kind is LimitKind.USAGE_LIMIT
    assert batch.limit.reset_at_ms is None  # "try again later" states no time


def test_only_a_regular_jsonl_file_is_read(tmp_path: Path) -> None:
    good = tmp_path / "t.jsonl"
    good.write_text("")
    assert usable_source(str(good))
    assert not usable_source("t.jsonl") and not usable_source(str(tmp_path / "x.jsonl"))
    assert not usable_source(str(tmp_path)) and not usable_source("/dev/null")


# --------------------------------------------------------------------------- evidence file


def _v1_file(path: Path) -> None:
    """A session file as Switchboard 0.1 made it: the spec's V1 tables only."""
    session_db.open_session_db(path, now_ms=NOW).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE turn_usage")
    conn.execute("DROP TABLE usage_cursors")
    conn.execute("UPDATE schema_meta SET value = '1' WHERE key = 'schema_version'")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_v1_file_is_read_as_it_is_and_upgraded_at_its_first_write(tmp_path: Path) -> None:
    path = session_db.session_db_path(tmp_path, "h:claude:s1")
    _v1_file(path)
    conn = session_db.open_session_db_readonly(path)
    assert turn_usage(conn) == []  # no usage tables yet: nothing, not an error
    conn.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 1
    conn = session_db.open_session_db(path)
    meta = dict(conn.execute("SELECT key, value FROM schema_meta").fetchall())
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert meta["schema_version"] == "2" and session_db.has_usage_tables(conn)
    conn.close()


def test_read_usage_is_incremental(tmp_path: Path) -> None:
    transcript = tmp_path / "claude" / "s1.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(claude_line("m1", "claude-sonnet-4-5", 100, 10, 50, 5))
    key = "h:claude:s1"
    first = read_usage(tmp_path, key, "claude", str(transcript), "p1", NOW)
    assert [(r.turn_id, r.input_tokens, r.output_tokens) for r in first] == [("p1", 100, 10)]
    assert read_usage(tmp_path, key, "claude", str(transcript), "p1", NOW) == []
    with transcript.open("a") as handle:
        handle.write(claude_line("m2", "claude-sonnet-4-5", 7, 3) + LIMIT_LINE)
    second = read_usage(tmp_path, key, "claude", str(transcript), "p2", NOW + 1)
    assert [(r.turn_id, r.input_tokens, r.limit_kind) for r in second] == \
        [("p2", 7, "rate_limit")]
    conn = session_db.open_session_db_readonly(session_db.session_db_path(tmp_path, key))
    assert [r.turn_id for r in turn_usage(conn, key)] == ["p1", "p2"]
    conn.close()


# --------------------------------------------------------------------------- prices


def test_price_table_configured_rows_come_first() -> None:
    mine = PriceConfig("claude-sonnet-4*", 1.0, 2.0, 0.5, 0.25, "2026-12-01")
    row, from_config = price_for("claude-sonnet-4-5", [mine])
    assert row == mine and from_config
    assert price_for("claude-sonnet-4-5", [])[0] in DEFAULT_PRICES
    assert price_for("some-model-nobody-priced", [mine]) == (None, False)
    priced = cost("claude-sonnet-4-5", Tokens(1_000_000, 1_000_000, 1_000_000, 1_000_000),
                  [mine])
    assert priced.usd == pytest.approx(3.75) and priced.price is mine


def test_price_and_limits_config_round_trip(tmp_path: Path) -> None:
    template = replace(project_config(tmp_path),
                       prices=(PriceConfig("gpt-5*", 1.25, 10.0, 0.125, 0.0, "2026-12-01"),))
    text = render_config(template) + "\n[limits]\nauto_resume = true\n"
    parsed = parse_config(text, allow_missing_generation=True)
    assert parsed.prices == template.prices and parsed.limits.auto_resume
    bad = text.replace("taken_on = \"2026-12-01\"", "taken_on = \"December\"")
    with pytest.raises(ConfigError, match="prices\\[0\\].taken_on: must be the date"):
        parse_config(bad, allow_missing_generation=True)


# --------------------------------------------------------------------------- the hook




def _stop(live: LiveSurface, transcript: Path, prompt_id: str, event: str = "Stop") -> None:
    payload = {"session_id": live.provider_session_id, "transcript_path": str(transcript),
               "cwd": str(live.root), "prompt_id": prompt_id, "hook_event_name": event,
               "stop_hook_active": False, "last_assistant_message": "ok"}
    if event == "StopFailure":
        payload.update(error="rate_limit",
                       last_assistant_message="Claude AI usage limit reached|1796503600")
    handle_hook("claude", event, json.dumps(payload), env=live.env())


def _limit_state(live: LiveSurface) -> tuple:
    session = live.engine.conn.execute(
        "SELECT activity, activity_reason FROM provider_sessions WHERE session_key = ?",
        (live.session_key,)).fetchone()
    recovery = live.engine.conn.execute(
        "SELECT state, bounded_explanation FROM recoveries WHERE kind = 'usage_limit'"
    ).fetchone()
    return tuple(session), tuple(recovery) if recovery else None


def _rows(live: LiveSurface) -> list:
    path = session_db.session_db_path(live.root, live.session_key)
    conn = session_db.open_session_db_readonly(path)
    try:
        return turn_usage(conn, live.session_key)
    finally:
        conn.close()


def _worker_log(live: LiveSurface) -> str:
    log = live.root / "run" / "usage-worker.log"
    return log.read_text() if log.exists() else "no usage-worker.log"


def test_stop_hook_reads_the_turn_and_usage_sums_match(live: LiveSurface,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    transcript = live.root / "claude-home" / "s.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(claude_line("m1", "claude-sonnet-4-5", 1234, 56, 789, 321))
    _stop(live, transcript, "p1")
    assert retry_until(lambda: len(_rows(live)) == 1, 20), _worker_log(live)
    with transcript.open("a") as handle:
        handle.write(claude_line("m2", "claude-sonnet-4-5", 100, 7) + LIMIT_LINE)
    _stop(live, transcript, "p2", "StopFailure")
    assert retry_until(lambda: len(_rows(live)) == 2, 20), _worker_log(live)
    assert main(["usage", "--json", "--turns"]) == 0
    document = json.loads(capsys.readouterr().out)
    turns = document["turns"]
    assert [(t["turn_id"], t["input"], t["output"], t["cache_read"], t["cache_write"])
            for t in turns] == [("p1", 1234, 56, 789, 321), ("p2", 100, 7, 0, 0)]
    for name in ("input", "output", "cache_read", "cache_write"):
        assert document["total"][name] == sum(t[name] for t in turns)
    assert document["total"]["usd"] == pytest.approx(sum(t["usd"] for t in turns))
    (agent,) = document["agents"]
    assert agent["title"] and agent["turns"] == 2 and agent["project"] == "alpha"
    # the default table's price of claude-sonnet-4*: 3 / 15 / 0.3 / 3.75 per million
    assert turns[0]["usd"] == pytest.approx((1234 * 3 + 56 * 15 + 789 * 0.3 + 321 * 3.75) / 1e6)
    # the person's own row comes first
    with (live.root / "config.toml").open("a") as handle:
        handle.write('\n[[prices]]\nmodel = "claude-sonnet-4-5"\ninput = 1.0\noutput = 2.0\n'
                     'cache_read = 0.5\ncache_write = 4.0\ntaken_on = "2026-12-01"\n')
    assert main(["usage", "--json", "--turns"]) == 0
    mine = json.loads(capsys.readouterr().out)["turns"][0]
    assert mine["usd"] == pytest.approx((1234 * 1 + 56 * 2 + 789 * 0.5 + 321 * 4) / 1e6)
    assert mine["price_taken_on"] == "2026-12-01"
    assert main(["limits", "--json"]) == 0
    (limited,) = json.loads(capsys.readouterr().out)["limited"]
    assert limited["kind"] == "rate_limit" and limited["reset_at"].startswith("2026-")
    # the turn that ended on the limit: limited (needs the person), with a recovery
    session, recovery = _limit_state(live)
    assert session == ("needs_input", "usage_limit")
    assert recovery is not None and recovery[0] == "open"
    assert "usage or rate limit" in recovery[1] and "It resets at" in recovery[1]
    payload = {"session_id": live.provider_session_id, "cwd": str(live.root),
               "prompt_id": "p3", "hook_event_name": "UserPromptSubmit", "prompt": "go on"}
    handle_hook("claude", "UserPromptSubmit", json.dumps(payload), env=live.env())
    session, recovery = _limit_state(live)
    assert session[0] == "working" and recovery is not None and recovery[0] == "resolved"
    assert main(["usage", "--since", "yesterday"]) == 2
    assert "--since 'yesterday' is not a date" in capsys.readouterr().err


def test_a_turn_whose_lines_land_after_its_stop_is_still_read(live: LiveSurface) -> None:
    """A loaded machine can run the Stop hook before the CLI has appended the turn's
    last line: the turn end's reader keeps looking for it (``SETTLE_S``)."""
    transcript = live.root / "claude-home" / "s.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(json.dumps({"type": "user", "message": {"content": "hi"}}) + "\n")
    _stop(live, transcript, "p1")
    assert not retry_until(lambda: bool(_rows(live)), 1.0)  # the line is not there yet
    with transcript.open("a") as handle:
        handle.write(claude_line("m1", "claude-sonnet-4-5", 40, 2))
    assert retry_until(lambda: len(_rows(live)) == 1, 20), _worker_log(live)
    assert _rows(live)[0][:5] == ("p1", "claude", "claude-sonnet-4-5", 40, 2)


def test_settled_read_stops_at_rows_at_another_readers_row_or_at_its_limit() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    def clock() -> float:
        return now[0]

    row = ("p1",)
    reads = iter([[], [], [row]])
    assert read_settled(lambda: next(reads), lambda: False, settle_s=5, poll_s=1,
                        clock=clock, sleep=sleep) == [row]
    assert now[0] == 2  # two empty reads, one wait after each
    now[0] = 0.0
    assert read_settled(lambda: [], lambda: now[0] >= 1, settle_s=5, poll_s=1, clock=clock,
                        sleep=sleep) == [] and now[0] == 1
    now[0] = 0.0
    assert read_settled(lambda: [], lambda: False, settle_s=3, poll_s=1, clock=clock,
                        sleep=sleep) == [] and now[0] == 3
    # a locked file is tried again until the limit, then its error is raised
    failures = iter([sqlite3.OperationalError("database is locked"), [row]])

    def flaky() -> list:
        item = next(failures)
        if isinstance(item, Exception):
            raise item
        return item

    now[0] = 0.0
    assert read_settled(flaky, lambda: False, settle_s=3, poll_s=1, clock=clock,
                        sleep=sleep) == [row]

    def locked() -> list:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError):
        read_settled(locked, lambda: False, settle_s=2, poll_s=1, clock=clock, sleep=sleep)


def test_the_hook_asks_a_turn_end_reader_to_settle(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """The hook names the worker's argument by the worker's own word."""
    import core.model.spawn
    from core.config.home import Home

    started: list[list[str]] = []
    monkeypatch.setattr(core.model.spawn, "spawn_detached",
                        lambda argv, env, log_path: started.append(argv))
    home = Home(tmp_path, tmp_path / "config.toml")
    source = {"transcript_path": str(tmp_path / "t.jsonl")}
    assert after_turn(home, "claude", "Stop", source, "k", "p1")
    assert after_turn(home, "codex", "UserPromptSubmit", source, "k", "t1", first_hook=True)
    assert [argv[-2:] for argv in started] == [["p1", SETTLE], [str(tmp_path / "t.jsonl"), ""]]


# --------------------------------------------------------------------------- auto-resume


def _limited_by_hook(live: LiveSurface, reset_epoch: int) -> None:
    """The fake agent's turn ends on a rate limit stating ``reset_epoch`` (a StopFailure
    and the transcript's error line); waits for the usage reader's row."""
    transcript = live.root / "claude-home" / "s.jsonl"
    transcript.parent.mkdir(exist_ok=True)
    line = LIMIT_LINE.replace("1796503600", str(reset_epoch))
    before = len(_rows(live)) if transcript.exists() else 0
    with transcript.open("a") as handle:  # the CLI only ever appends
        handle.write(claude_line(f"m{reset_epoch}", "claude-sonnet-4-5", 10, 1) + line)
    payload = {"session_id": live.provider_session_id, "transcript_path": str(transcript),
               "cwd": str(live.root), "prompt_id": "p1", "hook_event_name": "StopFailure",
               "error": "rate_limit",
               "last_assistant_message": f"Claude AI usage limit reached|{reset_epoch}"}
    handle_hook("claude", "StopFailure", json.dumps(payload), env=live.env())
    assert retry_until(lambda: len(_rows(live)) == before + 1, 20), _worker_log(live)
    assert _rows(live)[-1].limit_kind == "rate_limit"


def _typed(live: LiveSurface) -> int:
    from core.model.control_line import CONTINUE_TEMPLATE
    from core.runtime.sagas import live_pane
    from tests.integration.journey_env import tmux

    _surface, pane = live_pane(live.engine.conn, _frame(live))
    socket = live.engine.config.tmux.socket_path
    text = tmux(Path(str(socket)), "capture-pane", "-p", "-J", "-S", "-200", "-t", str(pane))
    return text.count(CONTINUE_TEMPLATE)


def _frame(live: LiveSurface) -> str:
    return str(live.engine.conn.execute(
        "SELECT frame_id FROM frames WHERE current_session_key = ?",
        (live.session_key,)).fetchone()[0])


def test_auto_resume_types_the_continue_line_once_after_the_reset(live: LiveSurface) -> None:
    from core.config.config import LimitsConfig
    from core.reconcile.reconcile import reconcile

    live.engine.config = replace(live.engine.config, limits=LimitsConfig(auto_resume=True))
    _limited_by_hook(live, 1_900_000_000)  # resets in 2030: nothing typed yet
    assert reconcile(live.engine).resumed_after_limit == 0 and _typed(live) == 0
    _limited_by_hook(live, 1_700_000_000)  # reset long past
    assert reconcile(live.engine).resumed_after_limit == 1
    # the fake agent's own prompt hook: the line arrived, the agent works again
    assert retry_until(lambda: _typed(live) == 1, 20)
    assert reconcile(live.engine).resumed_after_limit == 0  # once
    assert _typed(live) == 1
    states = [tuple(r) for r in live.engine.conn.execute(
        "SELECT state, actionability FROM recoveries WHERE kind = 'usage_limit'")]
    assert states == [("resolved", "open_view")], states


def test_auto_resume_is_off_by_default(live: LiveSurface) -> None:
    from core.reconcile.reconcile import reconcile

    _limited_by_hook(live, 1_700_000_000)
    assert reconcile(live.engine).resumed_after_limit == 0 and _typed(live) == 0


def test_a_codex_turn_that_ended_on_its_usage_limit_is_limited(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex has no StopFailure: its Stop hands the rollout to the reader, whose
    task_complete error makes the session limited with a recovery."""
    from tests.core.test_hook_handler import CLAUDE_FIXTURE, fixture_lines

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_CAPABILITY", "SWITCHBOARD_GENERATION"):
        monkeypatch.delenv(name, raising=False)
    live = launch_live_surface(tmp_path, tmux_socket, "codex")
    try:
        rollout = tmp_path / "codex-home" / "rollout.jsonl"
        rollout.parent.mkdir()
        rollout.write_text(codex_context("gpt-5") + codex_count(100, 0, 5) + json.dumps(
            {"type": "event_msg", "payload": {"type": "task_complete", "error": {
                "message": "You've hit your usage limit. Try again in 3 minutes.",
                "codex_error_info": "usage_limit_exceeded"}}}) + "\n")
        stop = next(body for name, body in fixture_lines(
            CLAUDE_FIXTURE.with_name("codex-0.171.0.tsv")) if name == "Stop")
        stop.update(session_id=live.provider_session_id, transcript_path=str(rollout))
        handle_hook("codex", "Stop", json.dumps(stop), env=live.env())

        def state() -> tuple:
            session = live.engine.conn.execute(
                "SELECT activity, activity_reason FROM provider_sessions"
                " WHERE session_key = ?", (live.session_key,)).fetchone()
            recovery = live.engine.conn.execute(
                "SELECT state, bounded_explanation FROM recoveries"
                " WHERE kind = 'usage_limit'").fetchone()
            return tuple(session), tuple(recovery) if recovery else None
        assert retry_until(lambda: state()[0] == ("needs_input", "usage_limit"), 20), \
            (state(), _worker_log(live))
        assert state()[1][0] == "open" and "usage limit" in state()[1][1]
        assert "It resets at" in state()[1][1]
    finally:
        live.engine.conn.close()


def test_reconcile_reads_a_turn_that_ended_without_its_stop(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rollout is known from the first hook's read; the refused turn's error comes
    later with no hook at all: a reconcile past QUIET_MS starts the reader once."""
    from core.model.enums import Activity, ActivityReason
    from core.reconcile.reconcile import reconcile
    from core.reconcile.usage_sweep import QUIET_MS
    from storage.connection import write_transaction
    from storage.operations import sessions as sessions_ops

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    for name in ("TMUX", "TMUX_PANE", "SWITCHBOARD_CAPABILITY", "SWITCHBOARD_GENERATION"):
        monkeypatch.delenv(name, raising=False)
    live = launch_live_surface(tmp_path, tmux_socket, "codex")
    try:
        rollout = tmp_path / "codex-home" / "rollout.jsonl"
        rollout.parent.mkdir()
        rollout.write_text(codex_context("gpt-5"))
        assert read_usage(tmp_path, live.session_key, "codex", str(rollout), None) == []
        prompt_at = live.engine.now() - QUIET_MS - 5_000  # the prompt, then silence
        with write_transaction(live.engine.conn) as conn:
            sessions_ops.record_activity(conn, live.session_key, activity=Activity.WORKING,
                                         reason=ActivityReason.UNKNOWN, runtime_presence=None,
                                         turn_id=None, provider_version=None, now=prompt_at)
        with rollout.open("a") as handle:
            handle.write(json.dumps({"type": "event_msg", "payload": {
                "type": "task_complete", "completed_at": prompt_at // 1000 + 1,
                "error": {"message": "You've hit your usage limit.",
                          "codex_error_info": "usage_limit_exceeded"}}}) + "\n")
        assert reconcile(live.engine).usage_reads == 1
        assert reconcile(live.engine).usage_reads == 0  # one start per growth

        def activity() -> tuple:
            return tuple(live.engine.conn.execute(
                "SELECT activity, activity_reason FROM provider_sessions"
                " WHERE session_key = ?", (live.session_key,)).fetchone())
        assert retry_until(lambda: activity() == ("needs_input", "usage_limit"), 20), \
            (activity(), _worker_log(live))
    finally:
        live.engine.conn.close()


def test_the_sweep_reopens_an_evidence_file_only_when_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quiet fleet's reconcile turns read each session's usage cursors once, not once
    a turn (bench_scale's idle: 200 file opens a turn in the holder)."""
    from core.reconcile import usage_sweep

    key = "host:codex:s1"
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(codex_context("gpt-5"))
    read_usage(tmp_path, key, "codex", str(rollout), None)  # records the cursor
    path = session_db.session_db_path(tmp_path, key)
    opened: list[Path] = []
    real = session_db.open_session_db_readonly

    def counted(where: Path) -> sqlite3.Connection:
        opened.append(where)
        return real(where)

    monkeypatch.setattr(session_db, "open_session_db_readonly", counted)
    first = usage_sweep._cursors(path, key)
    assert first == [(str(rollout), rollout.stat().st_size)]
    assert usage_sweep._cursors(path, key) == first and len(opened) == 1
    with rollout.open("a") as handle:  # the reader moves the cursor: the file changed
        handle.write(codex_count(10, 0, 2))
    read_usage(tmp_path, key, "codex", str(rollout), "t1")
    assert usage_sweep._cursors(path, key) == [(str(rollout), rollout.stat().st_size)]
    assert len(opened) == 2
