"""Issue 37.8, 37.10 and 39.6: one bad line in a CLI's transcript never stops the usage
reader, ``switchboard ... | head`` stops quietly, and today's models have prices.

Each attack writes the line a CLI (or anybody who can write the transcript) could
write, then a good turn, and runs the real reader into a real evidence file: the good
turn must be stored, the bad line counted in the cursor and named in the reader's
log, and the cursor must end past both (so later turns are read). Before the fix each
bad line raised (OverflowError, RecursionError, TypeError) or left the reader stuck
at the line (over 32 MiB) on every later turn, and counts just under 2**63 were
stored as a $55-trillion turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from core.model.usage import Tokens
from core.providers import usage_files
from core.providers.usage_files import MAX_NAME_CHARS, MAX_TOKENS, read_claude, read_codex
from core.usage.pricing import DEFAULT_PRICES, cost, price_for
from core.usage.worker import BAD_LINES, SKIPPING, read_usage
from storage import session_db
from storage.session_usage import cursor, skipped_lines, turn_usage
from tests.core.test_usage import LIMIT_LINE, NOW, claude_line, codex_context, codex_count

ROOT = Path(__file__).resolve().parents[2]
KEY = "h:claude:s1"
TURNS = 400
DEEP = 200_000
"""Nesting far past Python's recursion limit (json.loads raised RecursionError)."""


def _assistant(usage: dict[str, object], model: str = "claude-sonnet-4-5",
               msg_id: str = "bad") -> str:
    return json.dumps({"type": "assistant", "message": {
        "id": msg_id, "model": model, "content": [], "usage": usage}}) + "\n"


CLAUDE_BAD = {
    "count_2_63": _assistant({"input_tokens": 2**63, "output_tokens": 1}),
    "count_just_under_2_63": _assistant({"input_tokens": 2**63 - 1, "output_tokens": 1}),
    "count_over_the_cap": _assistant({"input_tokens": MAX_TOKENS + 1, "output_tokens": 1}),
    "negative_count": _assistant({"input_tokens": -5, "output_tokens": 1}),
    "float_count": _assistant({"input_tokens": 1.5, "output_tokens": 1}),
    "bool_count": _assistant({"input_tokens": True, "output_tokens": 1}),
    "string_count": _assistant({"input_tokens": "12", "output_tokens": 1}),
    "nested_past_the_recursion_limit": '{"type": "assistant", "message": '
                                       + "[" * DEEP + "]" * DEEP + "}\n",
    "nested_object_past_the_recursion_limit": '{"a":' * DEEP + "1" + "}" * DEEP + "\n",
    "rate_limit_with_content_5": json.dumps({
        "type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
        "message": {"model": "<synthetic>", "content": 5}}) + "\n",
    "rate_limit_with_message_a_string": json.dumps({
        "type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
        "message": "limit"}) + "\n",
    "not_json": "{this is not json\n",
}


def _read(tmp: Path, transcript: Path, turn: str, provider: str = "claude",
          key: str = KEY) -> tuple[list, list[tuple[int, str]]]:
    said: list[tuple[int, str]] = []
    rows = read_usage(tmp, key, provider, str(transcript), turn, NOW,
                      skipped=lambda count, why: said.append((count, why)))
    return rows, said


def _cursor(tmp: Path, transcript: Path, key: str = KEY) -> tuple[int, dict[str, object]]:
    conn = session_db.open_session_db_readonly(session_db.session_db_path(tmp, key))
    try:
        return cursor(conn, key, str(transcript))
    finally:
        conn.close()


@pytest.mark.parametrize("bad", sorted(CLAUDE_BAD), ids=sorted(CLAUDE_BAD))
def test_a_bad_claude_line_is_skipped_counted_and_the_next_turn_stored(
        tmp_path: Path, bad: str) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(CLAUDE_BAD[bad] + claude_line("m1", "claude-sonnet-4-5", 100, 10))
    rows, said = _read(tmp_path, transcript, "p1")
    assert [(r.turn_id, r.model_id, r.input_tokens, r.output_tokens) for r in rows] == \
        [("p1", "claude-sonnet-4-5", 100, 10)]
    offset, state = _cursor(tmp_path, transcript)
    assert offset == transcript.stat().st_size and state[BAD_LINES] == 1
    assert said and said[0][0] == 1 and said[0][1].startswith("line 1:")
    # the next turn is read too: the reader does not stop at the old line
    with transcript.open("a") as handle:
        handle.write(claude_line("m2", "claude-sonnet-4-5", 7, 3))
    rows, said = _read(tmp_path, transcript, "p2")
    assert [(r.turn_id, r.input_tokens) for r in rows] == [("p2", 7)] and said == []
    conn = session_db.open_session_db_readonly(session_db.session_db_path(tmp_path, KEY))
    try:
        assert skipped_lines(conn, KEY) == 1 and skipped_lines(conn) == 1
        assert all(r.input_tokens <= MAX_TOKENS for r in turn_usage(conn, KEY))
    finally:
        conn.close()


def test_a_bad_line_among_a_messages_lines_changes_nothing_of_it() -> None:
    """A skipped line leaves no trace: the message's good line counts once, as stated."""
    data = (claude_line("m1", "claude-sonnet-4-5", 10, 1)
            + _assistant({"input_tokens": 2**70, "output_tokens": 9}, msg_id="m1")
            + claude_line("m1", "claude-sonnet-4-5", 10, 4))
    batch = read_claude(data.encode(), {})
    assert batch.per_model["claude-sonnet-4-5"].tokens == Tokens(10, 4)
    assert batch.bad_lines == 1 and batch.bad_reason is not None
    assert "line 2" in batch.bad_reason


def test_long_and_invisible_names_are_cut_and_cleaned() -> None:
    hostile = "claude-\u202eopus\x1b[31m\u200b-x" + "y" * 100_000
    batch = read_claude((_assistant({"input_tokens": 1}, model=hostile, msg_id="i" * 10_000)
                         ).encode(), {})
    (model,) = batch.per_model
    assert model is not None and len(model) == MAX_NAME_CHARS
    assert model.startswith("claude-opus[31m-xyy")
    ids = batch.state["ids"]
    assert isinstance(ids, dict) and all(len(key) <= MAX_NAME_CHARS for key in ids)
    limited = json.loads(LIMIT_LINE)
    limited["message"]["content"][0]["text"] = "limit\x07\u2066 " + "z" * 50_000
    batch = read_claude((json.dumps(limited) + "\n").encode(), {}, NOW)
    assert batch.limit is not None and batch.limit.message.startswith("limit z")
    assert len(batch.limit.message) <= usage_files.MAX_MESSAGE_CHARS


CODEX_BAD = {
    "count_2_63": json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 2**63, "output_tokens": 1}}}}) + "\n",
    "used_percent_a_string": json.dumps({"type": "event_msg", "payload": {
        "type": "token_count", "rate_limits": {"primary": {"used_percent": "full",
                                                           "resets_at": 5}}}}) + "\n",
    "nested_past_the_recursion_limit": '{"type": "event_msg", "payload": '
                                       + "[" * DEEP + "]" * DEEP + "}\n",
}


@pytest.mark.parametrize("bad", sorted(CODEX_BAD), ids=sorted(CODEX_BAD))
def test_a_bad_codex_line_never_stops_the_rollout(tmp_path: Path, bad: str) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(codex_context("gpt-5.4") + CODEX_BAD[bad] + codex_count(100, 20, 5))
    key = "h:codex:s1"
    rows, _said = _read(tmp_path, rollout, "t1", "codex", key)
    assert [(r.model_id, r.input_tokens, r.cache_read_tokens, r.output_tokens)
            for r in rows] == [("gpt-5.4", 80, 20, 5)]
    assert _cursor(tmp_path, rollout, key)[0] == rollout.stat().st_size


def test_codex_times_out_of_range_are_not_stored(tmp_path: Path) -> None:
    """A reset or end time past year 9999 failed the stored ISO time (OverflowError)
    on every later turn; now the limit is kept without the time."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(codex_context("gpt-5.4") + json.dumps({"type": "event_msg", "payload": {
        "type": "token_count", "info": None, "rate_limits": {"primary": {
            "used_percent": 100, "resets_at": 10**18}}}}) + "\n" + json.dumps({
                "type": "event_msg", "payload": {
                    "type": "task_complete", "completed_at": 10**18, "error": {
                        "message": "You've hit your usage limit. Try again in "
                                   "99999999999999999 days.",
                        "codex_error_info": "usage_limit_exceeded"}}}) + "\n")
    rows, _said = _read(tmp_path, rollout, "t1", "codex", "h:codex:s1")
    (row,) = rows
    assert row.limit_kind == "usage_limit" and row.limit_reset_at is None
    conn = session_db.open_session_db_readonly(
        session_db.session_db_path(tmp_path, "h:codex:s1"))
    try:
        (stored,) = turn_usage(conn)
    finally:
        conn.close()
    assert stored.ended_at.startswith("2026-")  # the read's own time, not year 10**18


def test_a_line_over_32_mib_is_skipped_unread(tmp_path: Path) -> None:
    """80 MiB without a newline, then a good turn: before the fix the reader read the
    same 32 MiB and found no whole line, on every turn, for ever."""
    transcript = tmp_path / "t.jsonl"
    with transcript.open("wb") as handle:
        handle.write(b'{"type": "assistant", "message": {"x": "')
        chunk = b"a" * (1024 * 1024)
        for _ in range(80):
            handle.write(chunk)
        handle.write(b'"}}\n' + claude_line("m1", "claude-sonnet-4-5", 100, 10).encode())
    tracemalloc.start()
    try:
        rows, said = _read(tmp_path, transcript, "p1")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r.turn_id, r.input_tokens) for r in rows] == [("p1", 100)]
    assert peak < 40 * 1024 * 1024, peak  # one read (32 MiB) at most, never the line
    offset, state = _cursor(tmp_path, transcript)
    assert offset == transcript.stat().st_size and state[BAD_LINES] == 1
    assert "longer than" in said[0][1] and SKIPPING not in state


def test_a_long_line_still_being_written_is_skipped_when_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file ends inside a line longer than a read: the cursor moves to the end and
    remembers it is inside that line; the next run skips the rest up to its newline."""
    monkeypatch.setattr(usage_files, "MAX_READ_BYTES", 4096)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(claude_line("m0", "claude-sonnet-4-5", 1, 1) + '{"x": "'
                          + "b" * 10_000)
    rows, _said = _read(tmp_path, transcript, "p1")
    assert [(r.turn_id, r.input_tokens) for r in rows] == [("p1", 1)]
    offset, state = _cursor(tmp_path, transcript)
    assert offset == transcript.stat().st_size and state[SKIPPING] is True
    with transcript.open("a") as handle:
        handle.write("c" * 10_000 + '"}\n' + claude_line("m1", "claude-sonnet-4-5", 5, 2))
    rows, _said = _read(tmp_path, transcript, "p2")
    assert [(r.turn_id, r.input_tokens) for r in rows] == [("p2", 5)]
    offset, state = _cursor(tmp_path, transcript)
    assert offset == transcript.stat().st_size and state[BAD_LINES] == 1
    assert SKIPPING not in state


def test_the_reader_never_raises_on_any_line_shape() -> None:
    """Every field of every line the readers look at, given every wrong type."""
    wrong: list[object] = [None, 5, -1, 2**64, 1.5, True, "x", [], {}, [[1]], {"a": 1}]
    for value in wrong:
        for line in (
                {"type": "assistant", "message": value},
                {"type": "assistant", "message": {"usage": value, "model": value, "id": value}},
                {"type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
                 "message": {"content": value}},
                {"type": "assistant", "isApiErrorMessage": True, "error": "rate_limit",
                 "message": {"content": [{"type": "text", "text": value}]}},
                {"type": "assistant", "message": {"usage": {"input_tokens": value}}}):
            read_claude((json.dumps(line) + "\n").encode(), {"ids": value}, NOW)
        for line in (
                {"type": "turn_context", "payload": {"model": value}},
                {"type": "event_msg", "payload": value},
                {"type": "event_msg", "payload": {"type": "token_count", "info": value,
                                                  "rate_limits": value}},
                {"type": "event_msg", "payload": {"type": "token_count", "info": {
                    "total_token_usage": {"input_tokens": value},
                    "last_token_usage": value}}},
                {"type": "event_msg", "payload": {"type": "token_count", "rate_limits": {
                    "primary": {"used_percent": value, "resets_at": value}}}},
                {"type": "event_msg", "payload": {"type": "error", "message": value,
                                                  "codex_error_info": value}},
                {"type": "event_msg", "payload": {"type": "task_complete",
                                                  "completed_at": value, "error": {
                                                      "message": "usage limit",
                                                      "codex_error_info": value}}}):
            read_codex((json.dumps(line) + "\n").encode(), {"model": value, "total": value},
                       NOW)


def test_the_worker_logs_the_skipped_line_and_succeeds(tmp_path: Path) -> None:
    """The detached worker (what the Stop hook starts) says in its log which line it
    skipped and why, and exits 0: the turn was read."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(CLAUDE_BAD["nested_past_the_recursion_limit"]
                          + claude_line("m1", "claude-opus-5-5", 100, 10))
    env = _switchboard(tmp_path / "home")
    done = subprocess.run([sys.executable, "-m", "core.usage.worker", KEY, "claude",
                           str(transcript), "p1"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "skipped 1 unreadable line(s)" in done.stderr
    assert "line 1: nested too deep" in done.stderr and "Traceback" not in done.stderr


# --------------------------------------------------------------------------- the CLI


def _switchboard(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "TMUX_PANE") and not k.startswith("SWITCHBOARD_")}
    env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
               PYTHONPATH=str(ROOT))
    return env


@pytest.fixture(scope="module")
def home_with_usage(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """An initialized home (no tmux server: `init --private-tmux` only records one) with
    a session of ``TURNS`` turns, so `usage --json --turns` writes far more than a pipe
    holds (64 KiB), and one skipped line. Read only by the tests: made once."""
    tmp_path = tmp_path_factory.mktemp("usage-cli")
    home = tmp_path / "home"
    env = _switchboard(home)
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "init", "--private-tmux"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from core.config.home import Home

    old = dict(os.environ)
    os.environ.update(SWITCHBOARD_HOME=env["SWITCHBOARD_HOME"],
                      SWITCHBOARD_CONFIG=env["SWITCHBOARD_CONFIG"])
    try:
        root = Home.from_env().root
    finally:
        os.environ.clear()
        os.environ.update(old)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(CLAUDE_BAD["count_2_63"])
    for turn in range(TURNS):  # one turn row each
        with transcript.open("a") as handle:
            handle.write(claude_line(f"m{turn}", "claude-opus-5-5", turn + 1, 1))
        read_usage(root, KEY, "claude", str(transcript), f"p{turn}", NOW + turn)
    return home, env


def test_usage_json_into_head_exits_quietly(home_with_usage: tuple[Path, dict[str, str]]
                                            ) -> None:
    _home, env = home_with_usage
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m navigator.cli usage --json "
                       "--turns | head -c 10"],
        env=env, capture_output=True, text=True, timeout=60)
    assert len(done.stdout) == 10 and done.stdout.startswith("{")
    assert done.stderr == "", done.stderr  # no traceback, no "Exception ignored"
    assert done.returncode == 141  # what a Unix tool stopped by the closed pipe says


@pytest.mark.parametrize("argv", [["usage", "--json", "--turns"], ["usage", "--turns"],
                                  ["--help"], ["usage", "--help"]])
def test_any_command_into_a_closed_pipe_exits_quietly(
        home_with_usage: tuple[Path, dict[str, str]], argv: list[str]) -> None:
    """The reader is gone before the first write (deterministic: no race with head)."""
    _home, env = home_with_usage
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "navigator.cli", *argv], env=env,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert done.stderr == "", done.stderr
    assert done.returncode == 141


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(
        monkeypatch: pytest.MonkeyPatch, sb_home: Path) -> None:
    """Only a closed reader of stdout ends the command quietly; a broken socket or
    child pipe inside a command is a failure and keeps its exception."""
    import navigator.commands.usage
    from navigator.cli import main

    def broken(_args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(navigator.commands.usage, "_usage", broken)
    with pytest.raises(BrokenPipeError):
        main(["usage"])


def test_usage_shows_the_skipped_lines(home_with_usage: tuple[Path, dict[str, str]]) -> None:
    _home, env = home_with_usage
    done = subprocess.run([sys.executable, "-m", "navigator.cli", "usage", "--json"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["skipped_lines"] == 1 and document["total"]["turns"] == TURNS
    assert document["total"]["unpriced_turns"] == 0  # claude-opus-5-5 has a price
    text = subprocess.run([sys.executable, "-m", "navigator.cli", "usage"], env=env,
                          capture_output=True, text=True, timeout=60).stdout
    assert "skipped: 1 unreadable line" in text and "+?" not in text


# --------------------------------------------------------------------------- prices

NOTES_MODELS = ("claude-opus-5-5", "claude-sonnet-5", "gpt-5.4")
"""Models /work/shared/notes and the recorded hook payloads name: Claude Code 2.1.300 and
2.1.332 start with claude-opus-5-5 (SessionStart's model), auto mode's check asks
claude-sonnet-5, the Codex journeys run gpt-5.4."""
PICKERS = {
    "claude 2.1.332": ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-2",
                       "claude-haiku-5-5", "claude-fable-5-1", "claude-haiku-4-5-20251001",
                       "claude-sonnet-5", "claude-opus-5", "claude-fable-5", "claude-opus-4-8",
                       "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6",
                       "claude-opus-4-1-20250805"),
    "claude 2.1.197 catalog": ("claude-3-5-haiku", "claude-3-5-sonnet", "claude-3-7-sonnet",
                               "claude-haiku-4-5", "claude-mythos-5", "claude-opus-4-0",
                               "claude-opus-4-5", "claude-sonnet-4-0", "claude-sonnet-4-5"),
    "codex 0.171.0": ("gpt-6.2-sol", "gpt-6.2-astra", "gpt-6-astra", "gpt-6.1-sol",
                      "gpt-6.1-terra", "gpt-6-sol", "gpt-6-luna", "gpt-5.6-sol",
                      "gpt-5.6-terra", "gpt-5.6-luna", "gpt-5.5"),
    "gemini 0.61.0": ("gemini-2.5-pro", "gemini-3-flash-preview", "gemini-3-pro-preview",
                      "gemini-3.1-flash-lite", "gemini-3.1-pro-preview",
                      "gemini-3.1-pro-preview-customtools", "gemini-3.5-flash",
                      "gemini-3.5-flash-lite", "gemini-3.8-flash"),
    "opencode 1.18.33": ("big-pickle", "claude-sonnet-4", "gemini-3-pro", "gpt-5"),
}
"""What each tested release's model picker offers, read from the installed release by
``tests.realcli.drift.offered_models`` on 2026-12-06 (``tests/realcli/test_prices_realcli``
reads them again from the releases themselves)."""


@pytest.mark.parametrize("model", NOTES_MODELS + tuple(m for ms in PICKERS.values()
                                                       for m in ms))
def test_every_model_of_the_tested_releases_has_a_price(model: str) -> None:
    row, from_config = price_for(model, [])
    assert row is not None and not from_config, f"{model} has no row in DEFAULT_PRICES"


def test_opus_5_5_is_priced_from_the_clis_own_catalog() -> None:
    """Claude Code 2.1.332's catalog: tier_4_20_cache_read_0_20 (input 4, output 20,
    cache write 5 min 5, cache read 0.2, USD per million tokens)."""
    priced = cost("claude-opus-5-5", Tokens(1_000_000, 1_000_000, 1_000_000, 1_000_000), [])
    assert priced.usd == pytest.approx(4 + 20 + 0.2 + 5)
    assert price_for("claude-opus-5", [])[0] == next(
        r for r in DEFAULT_PRICES if r.model == "claude-opus-5*")
    assert price_for("some-model-nobody-priced", []) == (None, False)


def test_drift_names_an_offered_model_without_a_price() -> None:
    from core.model.enums import Provider
    from tests.realcli.drift import offered_models, unpriced

    bundle = (b'xx model_selector_state:[{id:"cc",model:"claude-opus-5-5"}],'
              b'model_selector_config:[{id:"cc",models:[{id:"claude-opus-5-5",name:"Opus 5.5"'
              b'},{id:"claude-nova-7",name:"Nova 7"}]}],provider_alias_targets:{}')
    offered = offered_models(Provider.CLAUDE, bundle)
    assert offered == {"claude-opus-5-5", "claude-nova-7"}
    assert unpriced(offered) == ["claude-nova-7"]
    binary = (b'"slug": "gpt-6.2-sol",\n "visibility": "list",\n'
              b'"slug": "gpt-hidden",\n "visibility": "hide",\n'
              b'"slug": "o9-turbo",\n "visibility": "list"')
    offered = offered_models(Provider.CODEX, binary)
    assert offered == {"gpt-6.2-sol", "o9-turbo"} and unpriced(offered) == ["o9-turbo"]


def test_drift_reads_gemini_and_opencode_models_and_names_one_without_a_price() -> None:
    """Gemini CLI's bundle names its models as constants; OpenCode's binary lists the
    models it prefers as its default just before its small-model list (issue 41)."""
    from core.model.enums import Provider
    from tests.realcli.drift import offered_models, unpriced

    bundle = (b'var PREVIEW_GEMINI_3_1_MODEL = "gemini-3.1-pro-preview";\n'
              b'var DEFAULT_GEMINI_EMBEDDING_MODEL = "gemini-embedding-001";\n'
              b'var LATEST_GEMINI_FLASH_MODEL = "gemini-9.9-flash";\n'
              b'var GEMINI_MODEL_ALIAS_AUTO = "auto";')
    offered = offered_models(Provider.GEMINI, bundle)
    assert offered == {"gemini-3.1-pro-preview", "gemini-9.9-flash"}
    assert unpriced(offered) == ["gemini-9.9-flash"]
    binary = b'defaultModel:F})),Mv=["gpt-5","big-pickle","kimi-k9"],fN=["gemini-flash","gpt-nano"]'
    offered = offered_models(Provider.OPENCODE, binary)
    assert offered == {"gpt-5", "big-pickle", "kimi-k9"} and unpriced(offered) == ["kimi-k9"]
