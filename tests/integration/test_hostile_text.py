"""Agents' text never reaches a terminal raw: a corpus of hostile strings through
every input, then every command that prints.

Real parts: a registry with a live fake agent on a private tmux server, the real
broker, the MCP server as a subprocess, the CLI in-process (``main``), the
navigator's engine client. The corpus (CSI, OSC 0/8/52, DCS, C1 in UTF-8, BEL,
DEL, CR, bidi overrides, tmux key names, ``$(...)``, a very long line, invalid
UTF-8 as argv bytes decode it) goes through:

- every input: ``frame push``/``complete`` and ``agent task-push`` (CLI), the
  agent tools over MCP, the navigator's ``p`` and ``t`` (its engine client),
  ``message send``/``broadcast``, ``member register``, ``fleet create``,
  ``project add --name``, ``worktree add``, a config value. Text that breaks the
  rule is refused in one line and nothing is stored;
- rows written before the rule existed (the rule switched off while they are
  written), so every output has hostile data to print;
- every registered CLI command that prints (``OUTPUT_RUNS``), in text and JSON,
  plus every other command with a hostile argument (its error echoes it).

Nothing any command writes to stdout or stderr holds ESC, BEL, a C1 control,
DEL, CR, a bidi control or an undecodable byte; the hand-registered member's pane
(``cat`` into a file) received exactly one notification line per stored message
and no stray Enter; no ``$(...)`` ran. ``test_every_command_is_classified`` fails
when a command is added to the CLI without being run here or exempted with a
reason.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import core.broker.broker as broker_module
import core.engine.commands.tasks as tasks_module
from core.apps.client import EngineClient
from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME
from core.config.home import ENV_CONFIG, Home
from core.hooks.hook_handler import handle_hook
from core.model.errors import SwitchboardError
from core.model.text import describe_char
from navigator.cli import build_parser, main
from tests.core.engines import counts
from tests.core.test_hook_handler import LiveSurface, launch_live_surface, payload_for
from tests.core.test_mcp_server import McpProcess, pane_env
from tests.integration.journey_env import tmux
from tests.waiting import retry_until

# --------------------------------------------------------------------------- the corpus

MARK = "SBPWNED"  # $(...) and `...` would create files named after this


def corpus(marks: Path) -> dict[str, str]:
    """Hostile strings by name; ``marks`` is where an executed substitution would write."""
    return {
        "csi_clear": "before\x1b[2J\x1b[Hafter",
        "csi_colour": "\x1b[31mred\x1b[0m",
        "osc0_title": "\x1b]0;pwned title\x07tail",
        "osc8_link": "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
        "osc52_clipboard": "evil\x1b]52;c;ZXZpbA==\x07X\nsecond line",
        "dcs": "\x1bP+q544e\x1b\\",
        "c1_csi_utf8": "a\u009b31mb",
        "c1_osc_utf8": "\u009d0;t\u009c",
        "bel": "ding\x07",
        "del": "x\x7fy",
        "cr": "real\rfake",
        "bidi": "abc\u202edcba\u2066x\u2069",
        "tmux_enter": "Enter",
        "tmux_ctrl_c": "C-c",
        "tmux_keys": "Escape C-m Enter",
        "substitution": f"$(touch {marks}/{MARK}1)",
        "backticks": f"`touch {marks}/{MARK}2`; touch {marks}/{MARK}3",
        "long_line": "L" * 5000,
        "invalid_utf8": b"bad\xff\xfebytes".decode("utf-8", "surrogateescape"),
    }


# One argument that is all of it at once, for every command's id arguments.
HOSTILE_ID = "x\x1b[2J\x1b]52;c;ZXZpbA==\x07\u009b31m\u202e\rEnter\ny"

# What must never be written by a command: C0 controls other than LF and TAB (ESC,
# BEL, CR, NUL...), DEL, C1, bidi embeddings/overrides/isolates, line/paragraph
# separators, lone surrogates (undecodable bytes).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                 "\ud800-\udfff]")
NOTIFICATION = re.compile(r"^\[switchboard\] message \d+ from [\x20-\x7e]+$")


def assert_clean(where: str, text: str) -> None:
    found = RAW.search(text)
    assert found is None, (f"{where}: raw {describe_char(found.group())} at "
                           f"{text[max(0, found.start() - 60):found.start() + 20]!r}")


# --------------------------------------------------------------------------- the commands


@dataclass
class Ids:
    """What the output commands are pointed at (filled in by the fixture)."""

    workspace: str = "W"
    view: str = "V"
    legacy_task: str = "T"
    fleet: str = "F"
    person: str = "P"
    bob: str = "B"
    printer: str = "R"
    legacy_member: str = "L"
    legacy_message: str = "1"
    socket: str = "/tmp/none"
    scratch: str = "/tmp"
    extra: dict[str, str] = field(default_factory=dict)


def output_runs(ids: Ids) -> dict[tuple[str, ...], list[list[str]]]:
    """Every command that prints data, with real targets; each also runs with --json."""
    broker = ["--tmux-socket", ids.socket]
    return {
        ("state", "host"): [["state", "host"]],
        ("state", "navigator"): [["state", "navigator"]],
        ("view", "list"): [["view", "list"]],
        ("view", "show"): [["view", "show", ids.view]],
        ("frame", "list"): [["frame", "list"], ["frame", "list", "--project", "alpha"]],
        ("frame", "show"): [["frame", "show", ids.workspace], ["frame", "show", ids.legacy_task]],
        ("session", "show"): [["session", "show", ids.workspace],
                              ["session", "show", ids.legacy_task]],
        ("project", "list"): [["project", "list"]],
        ("context", "list"): [["context", "list"]],
        ("reconcile",): [["reconcile"]],
        ("recovery", "list"): [["recovery", "list", "--all"]],
        ("recovery", "show"): [["recovery", "show", HOSTILE_ID]],
        ("hooks", "status"): [["hooks", "status", "--provider", "claude",
                               "--project", ids.scratch]],
        ("agent", "switchboard-current"): [["agent", "switchboard-current"]],
        ("agent", "switchboard-context"): [["agent", "switchboard-context"]],
        ("agent", "switchboard-history"): [["agent", "switchboard-history"]],
        ("agent", "transition-status"): [["agent", "transition-status"]],
        ("agent", "message-poll"): [["agent", "message-poll"]],
        ("agent", "message-wait"): [["agent", "message-wait", "--timeout", "0.2"]],
        ("fleet", "list"): [["fleet", "list", "--all", *broker]],
        ("member", "list"): [["member", "list", *broker]],
        ("member", "show"): [["member", "show", m, *broker]
                             for m in (ids.person, ids.bob, ids.legacy_member)],
        ("member", "capture"): [["member", "capture", ids.printer, *broker]],
        ("member", "ping"): [["member", "ping", ids.bob, *broker]],
        ("message", "show"): [["message", "show", ids.legacy_message, *broker]],
        ("message", "poll"): [["message", "poll", "--member", ids.person, *broker]],
        ("message", "wait"): [["message", "wait", "--member", ids.person, "--timeout", "0.2",
                               *broker]],
        ("inbox",): [["inbox", "--member", ids.person, *broker],
                     ["inbox", "--member", ids.person, "--include-completed", *broker],
                     ["inbox", "--member", ids.person, "--stream", "--max-seconds", "0.3",
                      *broker]],
        ("remote", "list"): [["remote", "list"]],
        ("remote", "refresh"): [["remote", "refresh"]],
        ("attention",): [["attention"]],
        ("doctor",): [["doctor"]],
        ("restore",): [["restore"], ["restore", "--json"]],
        ("prune",): [["prune", "--older-than", "0", "--dry-run"],
                     ["prune", "--older-than", "0", "--dry-run", "--json"]],
        ("completion",): [["completion", "--names", kind]
                          for kind in ("projects", "frames", "members", "views")],
        ("frame", "diff"): [["frame", "diff", ids.workspace],
                            ["frame", "diff", ids.workspace, "--stat"]],
        ("conflicts",): [["conflicts"], ["conflicts", "--refresh"]],
        ("search",): [["search", "pwned"], ["search", "red", "--project", "alpha"],
                      ["search", "--rebuild"]],
        ("usage",): [["usage"], ["usage", "--turns"],
                     ["usage", "--project", "alpha", "--since", "2020-01-01"]],
        ("limits",): [["limits"], ["limits", "--resume-all"]],
        ("server",): [["server", "--status"]],
    }


def hostile_runs(ids: Ids, text: str) -> dict[tuple[str, ...], list[list[str]]]:
    """Every command that takes text or an id, given ``text``: refused or stored, its
    output (an error that echoes the argument) is checked like any other."""
    h, broker = text, ["--tmux-socket", ids.socket]
    return {
        ("frame", "push"): [["frame", "push", ids.workspace, "--title", h, "--brief", "b"],
                            ["frame", "push", ids.workspace, "--title", "t", "--brief", h],
                            ["frame", "push", ids.workspace, "--title", "t", "--brief", "b",
                             "--purpose", h]],
        ("frame", "complete"): [["frame", "complete", ids.legacy_task, "--summary", h],
                                ["frame", "complete", h, "--summary", "s"]],
        ("frame", "start"): [["frame", "start", h], ["frame", "start", ids.workspace,
                                                     "--provider", h]],
        ("frame", "stop"): [["frame", "stop", h]],
        ("frame", "diff"): [["frame", "diff", h]],
        ("search",): [["search", h], ["search", "x", "--project", h]],
        ("frame", "back"): [["frame", "back", h]],
        ("frame", "close"): [["frame", "close", h]],
        ("frame", "reopen"): [["frame", "reopen", h]],
        ("view", "focus"): [["view", "focus", h, h]],
        ("view", "mode"): [["view", "mode", h]],
        ("view", "retire"): [["view", "retire", h]],
        ("view", "open"): [["view", "open", "--project", h]],
        ("view", "enter"): [["view", "enter", "--project", h]],
        ("project", "enter"): [["project", "enter", h]],
        ("project", "add"): [["project", "add", ids.extra["new_dir"], "--name", h]],
        ("transition", "cancel"): [["transition", "cancel", h]],
        ("context", "release"): [["context", "release", h]],
        ("context", "block"): [["context", "block", h]],
        ("context", "resolve"): [["context", "resolve", h, "--to", "held"]],
        ("recovery", "resolve"): [["recovery", "resolve", h]],
        ("recovery", "dismiss"): [["recovery", "dismiss", h]],
        ("recovery", "run"): [["recovery", "run", h]],
        ("reset",): [["reset", "--confirm-generation", h]],
        ("agent", "task-push"): [["agent", "task-push", "--title", h, "--brief", "b"],
                                 ["agent", "task-push", "--title", "t", "--brief", h]],
        ("agent", "task-complete-return"): [["agent", "task-complete-return", "--summary", h,
                                             "--next-action", h]],
        ("agent", "message-send"): [["agent", "message-send", "--to", "person", "--text", h],
                                    ["agent", "message-send", "--to", h, "--text", "hi"]],
        ("agent", "message-broadcast"): [["agent", "message-broadcast", "--text", h]],
        ("agent", "message-ack"): [["agent", "message-ack", "--id", "999999"]],
        ("agent", "transition-claim"): [["agent", "transition-claim"]],
        ("agent", "transition-cancel"): [["agent", "transition-cancel"]],
        ("agent", "task-back"): [["agent", "task-back"]],
        ("fleet", "create"): [["fleet", "create", h, "--director-name", "d", "--session", "s",
                               "--window", "@1", "--pane", "%999", "--coding-agent", "x",
                               *broker],
                              ["fleet", "create", "--director-name", h, "--session", "s",
                               "--window", "@1", "--pane", "%999", "--coding-agent", "x",
                               *broker]],
        ("fleet", "delete"): [["fleet", "delete", h, *broker]],
        ("member", "register"): [["member", "register", "--fleet", ids.fleet, "--name", h,
                                  "--session", "s", "--window", "@1", "--coding-agent", "x",
                                  *broker]],
        ("member", "place"): [["member", "place", h, "--session", h, "--window", h, *broker]],
        ("member", "deregister"): [["member", "deregister", h, *broker]],
        ("member", "delete"): [["member", "delete", h, *broker]],
        ("message", "send"): [["message", "send", "--fleet", ids.fleet, "--from", "person",
                               "--to", "bob", h, *broker],
                              ["message", "send", "--fleet", ids.fleet, "--from", "person",
                               "--to", h, "hi", *broker]],
        ("message", "broadcast"): [["message", "broadcast", "--fleet", ids.fleet, "--from",
                                    "person", h, *broker]],
        ("message", "cancel"): [["message", "cancel", "--from", h, "999999", *broker]],
        ("message", "ack"): [["message", "ack", "--member", h, "999999", *broker]],
        ("remote", "open"): [["remote", "open", h, h]],
        ("worktree", "add"): [["worktree", "add", h, "--project", "alpha"]],
        ("worktree", "remove"): [["worktree", "remove", h]],
        ("prune",): [["prune", "--older-than", h]],
        ("usage",): [["usage", "--project", h], ["usage", "--since", h]],
        ("frame", "switch-provider"): [["frame", "switch-provider", h, "--to", "codex",
                                        "--yes"],
                                       ["frame", "switch-provider", ids.legacy_task, "--to",
                                        "codex"]],
        ("remote", "follow"): [["remote", "follow", h]],
        ("frame", "message"): [["frame", "message", ids.workspace, "--text", h],
                               ["frame", "message", h, "--text", "hi"]],
        ("serve",): [["serve", "--port", h]],
        ("frame", "fork"): [["frame", "fork", h], ["frame", "fork", h, "--title", h]],
        ("frame", "answer"): [["frame", "answer", h, "--yes"],
                              ["frame", "answer", ids.workspace, "--no"]],
    }


EXEMPT: dict[tuple[str, ...], str] = {
    ("init",): "writes the config and registry; prints ids and paths Switchboard made",
    ("hook",): "the providers' hook entry: reads their JSON on stdin, prints JSON for them",
    ("mcp",): "JSON-RPC on stdio for the agent; its tools are run over MCP in this test",
    ("hooks", "install"): "writes provider settings; prints the paths it wrote",
    ("hooks", "uninstall"): "removes provider settings; prints the paths it removed",
    ("demo",): "builds the demo home and attaches the terminal to tmux",
    ("ui",): "the Textual navigator itself (its panels are checked through the client)",
    ("open",): "attaches or switches the terminal to a view (tmux takes the terminal)",
}


def registered_commands() -> set[tuple[str, ...]]:
    """Every leaf command of the CLI, as the words that name it."""
    found: set[tuple[str, ...]] = set()

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups:
            found.add(prefix)
        for group in groups:
            for name, child in group.choices.items():
                walk(child, (*prefix, name))

    walk(build_parser(), ())
    return found


def test_every_command_is_classified() -> None:
    """A new command fails here until it is run below (or exempted, with a reason)."""
    ids = Ids(extra={"new_dir": "/tmp"})
    covered = set(output_runs(ids)) | set(hostile_runs(ids, "x"))
    assert not covered & set(EXEMPT)
    missing = registered_commands() - covered - set(EXEMPT)
    assert not missing, f"commands not in the hostile-text corpus run: {sorted(missing)}"
    assert not (covered | set(EXEMPT)) - registered_commands()


# --------------------------------------------------------------------------- the run


@dataclass
class World:
    live: LiveSurface
    root: Path
    socket: Path
    marks: Path
    ids: Ids
    cli: Callable[..., tuple[int, str, str]]
    bob_file: Path


@pytest.fixture
def world(tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[World]:
    root = tmp_path / "home"
    root.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv(ENV_HOME, str(root))
    monkeypatch.setenv(ENV_CONFIG, str(root / "config.toml"))
    for name in ("TMUX", "TMUX_PANE", ENV_CAPABILITY, ENV_GENERATION,
                 "SWITCHBOARD_TMUX_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    live = launch_live_surface(root, tmux_socket)

    def cli(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse refusing an argument
            code = int(exc.code or 0)
        except SwitchboardError as exc:  # pragma: no cover - main reports these itself
            raise AssertionError(f"{argv}: escaped main: {exc}") from exc
        out = capsys.readouterr()
        assert_clean(f"stdout of {argv!r}", out.out)
        assert_clean(f"stderr of {argv!r}", out.err)
        return code, out.out, out.err

    bob_file = tmp_path / "bob.txt"
    yield World(live, root, tmux_socket, marks, Ids(socket=str(tmux_socket),
                                                    scratch=str(tmp_path)),
                cli, bob_file)
    live.engine.conn.close()


def stored(conn: sqlite3.Connection, broker_path: Path) -> dict[str, int]:
    """Rows of the registry and the broker: equal before and after means nothing stored."""
    rows = {f"registry.{k}": v for k, v in counts(conn).items()}
    broker = sqlite3.connect(f"file:{broker_path}?mode=ro", uri=True)
    try:
        for table in ("fleets", "members", "member_placements", "messages"):
            rows[f"broker.{table}"] = broker.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        broker.close()
    return rows


def _pane(socket: Path, command: str) -> tuple[str, str, str]:
    """A new window on the private server running ``command``: pane, window, session."""
    made = tmux(socket, "new-window", "-d", "-P", "-F",
                "#{pane_id} #{window_id} #{session_name}", command).split()
    assert len(made) == 3, made
    return made[0], made[1], made[2]


@contextmanager
def _rule_off() -> Iterator[None]:
    """Rows as a Switchboard without the rule wrote them (they must stay readable)."""
    with pytest.MonkeyPatch.context() as patch:
        for module in (tasks_module, broker_module):
            patch.setattr(module, "refuse_unsafe", lambda *_a, **_k: None)
        yield


def _hostile_usage(root: Path, session_key: str, model: str, message: str) -> None:
    """A usage row whose model and limit message are hostile (a CLI's file is agents'
    text too): ``usage`` and ``limits`` print them."""
    from storage import session_db
    from storage.session_usage import Advance, UsageRow, advance_usage

    row = UsageRow("t-hostile", "claude", model, 10, 1, 0, 0, 0, 1, "rate_limit", message,
                   "2020-01-01T00:00:00.000Z")
    conn = session_db.open_session_db(session_db.session_db_path(root, session_key))
    try:
        advance_usage(conn, session_key, "/hostile.jsonl",
                      lambda offset, state: Advance([row], 1, {}), "2026-01-01T00:00:00.000Z")
    finally:
        conn.close()


def test_hostile_text_through_every_input_and_output(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    live, cli, ids, socket = world.live, world.cli, world.ids, world.socket
    conn = live.engine.conn
    hostile = corpus(world.marks)
    route = live.engine.project_enter(str(uuid.uuid4()), "alpha")
    ids.workspace, ids.view = route.frame_id, route.view_id
    home = Home(root=world.root, config_path=world.root / "config.toml")
    client = EngineClient.open(home)

    # The project's fleet (its Director and the person) exists after the first message.
    client.message_frame(ids.workspace, "hello from the person")
    fleet = conn.execute("SELECT project_id FROM frames WHERE frame_id = ?",
                         (ids.workspace,)).fetchone()[0]
    ids.fleet = f"project:{fleet}"
    _, out, _ = cli("member", "list", "--json", "--tmux-socket", str(socket))
    members = {m["name"]: str(m["member_id"]) for m in json.loads(out)}
    ids.person = members["person"]

    # A hand-registered member whose pane writes every typed line to a file, and one
    # whose pane printed hostile bytes (for capture).
    pane, window, session = _pane(socket, f"cat > {world.bob_file}")
    code, out, err = cli("member", "register", "--fleet", ids.fleet, "--name", "bob",
                         "--session", session, "--window", window, "--pane", pane,
                         "--coding-agent", "cat", "--json", "--tmux-socket", str(socket))
    assert code == 0, err
    ids.bob = str(json.loads(out)["member"]["member_id"])
    printed = "\\033]52;c;ZXZpbA==\\007\\033[31mred\\033[0m \\302\\233 \\342\\200\\256 done"
    pane, window, session = _pane(socket, f"printf '{printed}\\n'; exec sleep 600")
    code, out, err = cli("member", "register", "--fleet", ids.fleet, "--name", "printer",
                         "--session", session, "--window", window, "--pane", pane,
                         "--coding-agent", "sh", "--json", "--tmux-socket", str(socket))
    assert code == 0, err
    ids.printer = str(json.loads(out)["member"]["member_id"])

    # The workspace agent is mid-turn: a push waits for its Stop (and is withdrawn).
    handle_hook("claude", "UserPromptSubmit", payload_for(live, "UserPromptSubmit"),
                live.env())

    # ---- rows written before the rule: a task, its brief, a member and messages
    legacy = "evil\x1b]52;c;ZXZpbA==\x07X\nsecond line"
    # (An undecodable byte never reached a row: UTF-8 cannot encode it, SQLite refused it.)
    legacy_text = "\n".join(v for k, v in hostile.items() if k != "invalid_utf8")
    with _rule_off():
        pushed = live.engine.frame_push(str(uuid.uuid4()), ids.workspace, legacy,
                                        legacy_text)
        live.engine.transition_cancel(str(uuid.uuid4()), view_id=ids.view)
        ids.legacy_task = pushed.target_frame_id
        with broker_module.Broker.open(home.broker_path, tmux_socket=str(socket),
                                       create=False) as broker:
            fleet_id = next(f.fleet_id for f in broker.list_fleets() if f.name == ids.fleet)
            detail = broker.register_member(
                fleet_id, legacy, description=legacy,
                placement=broker_module.PlacementSpec("s\x1b[2J", "@1", None, "x\x07"))
            ids.legacy_member = str(detail.member.member_id)
            message = broker.send(fleet_id, detail.member.member_id, int(ids.person),
                                  legacy_text)
            ids.legacy_message = str(message.message.message_id)
            broker.send(fleet_id, detail.member.member_id, int(ids.bob), "from a legacy name")
    _hostile_usage(world.root, live.session_key, legacy, legacy_text)
    monkeypatch.chdir(world.root.parent)

    # ---- every input, every corpus string
    agent_env = pane_env(live)
    refused_anywhere = 0
    for name, text in hostile.items():
        ids.extra["new_dir"] = str(world.root.parent / f"proj-{name}")
        Path(ids.extra["new_dir"]).mkdir()
        before = stored(conn, home.broker_path)
        for command, runs in hostile_runs(ids, text).items():
            agent = command[0] == "agent"
            if agent:
                for key in (ENV_CAPABILITY, ENV_GENERATION, "TMUX_PANE"):
                    monkeypatch.setenv(key, agent_env[key])
            try:
                for argv in runs:
                    code, _, err = cli(*argv)
                    if code != 0 and err and not err.startswith("usage:"):  # argparse: usage
                        assert err.count("\n") == 1, (argv, err)  # a refusal is one line
                        refused_anywhere += 1
            finally:
                for key in (ENV_CAPABILITY, ENV_GENERATION, "TMUX_PANE"):
                    monkeypatch.delenv(key, raising=False)
        if RAW.search(text):
            assert stored(conn, home.broker_path) == before, name  # refused: nothing stored
        else:
            # Accepted: a push waits for the agent's Stop; withdraw it for the next.
            cli("transition", "cancel", "--view", ids.view)
    assert refused_anywhere

    # The acceptance: a control character in a title is one line, nothing stored.
    before = counts(conn)
    code, out, err = cli("frame", "push", ids.workspace, "--title", "evil\x1b]0;x\x07",
                         "--brief", "b")
    assert (code, out) == (2, "")
    assert err == ("switchboard: unsafe_text: title holds a control character U+001B (ESC) "
                   "at position 5; use printable text on one line (nothing was changed)\n")
    assert counts(conn) == before

    # ---- the agent tools over MCP, and bytes that are not UTF-8
    mcp = McpProcess(agent_env)
    try:
        for name, text in hostile.items():
            before = stored(conn, home.broker_path)
            pushed_tool = mcp.call("task_push", {"title": text, "brief": "b"})
            sent = mcp.call("message_send", {"to": "person", "text": text})
            if RAW.search(text):  # the same set a block refuses
                assert pushed_tool["isError"] and sent["isError"], name
                assert stored(conn, home.broker_path) == before, name
            else:
                cli("transition", "cancel", "--view", ids.view)
        mcp.send_raw(b'{"jsonrpc":"2.0","id":999,"method":"tools/call","params":'
                     b'{"name":"task_push","arguments":{"title":"bad\xff\xfe","brief":"b"}}}')
        answer = mcp.reply()
        assert "error" in answer or answer["result"]["isError"], answer
    finally:
        mcp.close()

    # ---- the navigator's p and t (its engine client), then what it would draw
    for name, text in hostile.items():
        before = stored(conn, home.broker_path)
        try:
            client.push(ids.workspace, text, "brief")
        except SwitchboardError as exc:
            assert_clean(f"navigator push {name}", exc.message)
        else:
            client.cancel_transition(ids.view)
        try:
            client.message_frame(ids.workspace, text)
        except SwitchboardError as exc:
            assert "\x1b" not in exc.message
        if RAW.search(text):
            assert stored(conn, home.broker_path) == before, name
    state = client.state()
    drawn = [f.title for p in state.projects for f in p.frames]
    drawn += [v.title for v in state.views] + [c.title for v in state.views
                                               for c in v.breadcrumb]
    drawn += [r.explanation for r in state.recoveries]
    assert any("\\x1b]52" in title for title in drawn)  # the legacy title, spelled out
    for text in drawn:
        assert_clean("navigator state", text)
    client.shutdown()

    # ---- every output command, text and JSON
    for command, runs in output_runs(ids).items():
        agent = command[0] == "agent"
        if agent:
            for key in (ENV_CAPABILITY, ENV_GENERATION, "TMUX_PANE"):
                monkeypatch.setenv(key, agent_env[key])
        try:
            for argv in runs:
                cli(*argv)
                code, out, _ = cli(*argv, "--json")
                if code == 0 and command != ("agent", "message-wait"):
                    json.loads(out.splitlines()[0])
        finally:
            for key in (ENV_CAPABILITY, ENV_GENERATION, "TMUX_PANE"):
                monkeypatch.delenv(key, raising=False)

    # The legacy rows are readable, spelled out, and exact in JSON.
    _, out, _ = cli("frame", "list")
    assert "evil\\x1b]52;c;ZXZpbA==\\x07X\\nsecond line" in out
    _, out, _ = cli("frame", "show", ids.legacy_task, "--json")
    assert json.loads(out)["title"] == legacy
    _, out, _ = cli("message", "show", ids.legacy_message, "--tmux-socket", str(socket))
    assert "\\x1b[2J" in out

    # ---- a config value: refused in words, the value never echoed raw
    config = world.root / "config.toml"
    kept = config.read_text(encoding="utf-8")
    config.write_text(kept.replace('display_name = "', 'display_name = "\\u001b]0;t\\u0007',
                                   1), encoding="utf-8")
    for argv in (["frame", "list"], ["doctor"], ["state", "host", "--json"]):
        code, _, err = cli(*argv)
    config.write_text(kept, encoding="utf-8")

    # ---- bob's pane got one line per stored message, no stray Enter; nothing ran
    def bob_lines() -> list[str]:
        return world.bob_file.read_text(encoding="utf-8", errors="replace").splitlines()

    broker_file = sqlite3.connect(f"file:{home.broker_path}?mode=ro", uri=True)
    try:
        notified = broker_file.execute(
            "SELECT message_id FROM messages WHERE to_member_id = ?"
            " AND notified_at IS NOT NULL", (int(ids.bob),)).fetchall()
    finally:
        broker_file.close()
    assert notified
    assert retry_until(lambda: len(bob_lines()) >= len(notified), 10), bob_lines()
    lines = bob_lines()
    assert len(lines) == len(notified), lines
    for line in lines:
        assert NOTIFICATION.match(line), line
    assert not list(world.marks.iterdir()), "a $(...) in the corpus was executed"
    assert subprocess.run(["tmux", "-S", str(socket), "has-session"],
                          capture_output=True).returncode == 0
