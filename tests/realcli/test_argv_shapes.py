"""The fake agent and the pinned real CLIs accept and refuse the same argv shapes.

Each shape runs through the real binary and through ``core.providers.fake.agent``
in the same isolated home and working directory, stdin closed, no network
but loopback. What is compared is what the program made of its argv:

- refused: exit code and first error line (the whole message for an invalid
  MCP configuration, which names the file it looked for);
- accepted, Claude Code: the prompt and session it started with. Without a
  terminal it runs as ``--print`` and sends its first request to a loopback
  stand-in (which answers 401, so the run ends there): the request's last user
  text is the prompt it understood and its metadata the session id; "Input
  must be provided" means no prompt was left. A resume finds the session file
  written for it in the isolated home;
- accepted, Codex: clap is done when Codex stops at "stdin is not a
  terminal", before config or model.

The fake prints its session and initial prompt, so the same facts come out of
both. A table row also says what the real CLI does, so a shape that stops
testing what it names (a new CLI version) fails loudly.
"""

from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.realcli.install import RealCli, RealClis

SID = "11111111-1111-4111-8111-111111111111"
"""A saved Claude session (``--resume`` reaches it)."""
FRESH = "33333333-3333-4333-8333-333333333333"
"""A new session id (the real CLI refuses ``--session-id`` of a saved one)."""
TID = "019a0000-0000-7000-8000-000000000001"
NEW = "<new session>"
NO_TTY = "Error: stdin is not a terminal"
NO_PROMPT = "Error: Input must be provided either through stdin or as a prompt argument"
MCP_INVALID = "Error: Invalid MCP configuration:"
RUN_TIMEOUT_S = 60
FAKE_TEXTS = {"claude": "2.1.197", "codex": "0.171.0"}
"""The release whose error texts the fake agent prints word for word."""


@dataclass(frozen=True)
class Seen:
    """What a CLI made of one argv."""

    accepted: bool
    exit_code: int | None = None
    error: str | None = None
    prompt: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class Shape:
    name: str
    argv: tuple[str, ...]
    accepted: bool
    """What the real CLI does (checked too, so the row keeps meaning what it says)."""


CLAUDE_SHAPES = (
    Shape("prompt after variadic --mcp-config", ("--session-id", FRESH, "--mcp-config", "{mcp}",
                                                  "hello"), False),
    Shape("--mcp-config=F keeps the prompt", ("--session-id", FRESH, "--mcp-config={mcp}",
                                              "hello"), True),
    Shape("-- before the prompt", ("--session-id", FRESH, "--mcp-config", "{mcp}", "--",
                                   "hello"), True),
    Shape("switchboard's new launch", ("--session-id", FRESH, "--settings", "{settings}",
                                       "--mcp-config={mcp}", "--", "Call the tool"), True),
    Shape("switchboard's resume", ("--resume", SID, "--settings", "{settings}",
                                   "--mcp-config={mcp}", "--", "go on"), True),
    Shape("inline JSON --mcp-config", ("--mcp-config", '{"mcpServers": {}}', "--", "hi"), True),
    Shape("two configs then --", ("--mcp-config", "{mcp}", "{mcp}", "--", "hi"), True),
    Shape("variadic --allowedTools swallows the prompt", ("--allowedTools", "Bash", "hello"),
          True),
    Shape("--allowedTools then --", ("--allowedTools", "Bash", "Edit", "--", "hello"), True),
    Shape("--allowedTools=T", ("--allowedTools=mcp__switchboard__task_push", "hello"), True),
    Shape("option after the prompt", ("hello", "--strict-mcp-config"), True),
    Shape("extra operands", ("hello", "extra"), True),
    Shape("unknown option", ("--bogus", "hello"), False),
    Shape("unknown option after the prompt", ("hello", "--bogus"), False),
    Shape("unknown short option", ("-x", "hello"), False),
    Shape("--session-id without value", ("--session-id",), False),
    Shape("--session-id not a UUID", ("--session-id", "not-a-uuid", "hi"), False),
    Shape("--session-id with --resume", ("--session-id", FRESH, "--resume", SID, "hi"), False),
    Shape("--resume=ID", (f"--resume={SID}", "go on"), True),
    Shape("--resume without id", ("--resume",), False),
    Shape("--resume takes the prompt as its value", ("--resume", "hello"), False),
    Shape("--settings missing file", ("--settings", "{missing}", "hi"), False),
    Shape("--settings inline JSON", ("--settings", '{"hooks": {}}', "hi"), True),
    Shape("--permission-mode choice", ("--permission-mode", "default", "--strict-mcp-config",
                                       "hi"), True),
    Shape("--permission-mode bad choice", ("--permission-mode", "bogus", "hi"), False),
    Shape("optional --debug takes the prompt", ("--debug", "hello"), True),
    Shape("short cluster with a value", ("-pnfoo", "hello"), True),
)

CODEX_SHAPES = (
    Shape("prompt", ("hi",), True),
    Shape("-c before the prompt", ("-c", "a=1", "hi"), True),
    Shape("-c before resume", ("-c", "a=1", "resume", TID, "hi"), True),
    Shape("-c after resume", ("resume", "-c", "a=1", TID, "hi"), True),
    Shape("-c after the id", ("resume", TID, "-c", "a=1", "hi"), True),
    Shape("-c after the prompt", ("resume", TID, "hi", "-c", "a=1"), True),
    Shape("--config=k=v and -ck=v", ("--config=a=1", "-cb=2", "hi"), True),
    Shape("resume without prompt", ("resume", TID), True),
    Shape("switchboard's overrides", (
        "-c", 'hooks.Stop=[{hooks = [{type = "command", command = "true", timeout = 30}]}]',
        "-c", 'mcp_servers.switchboard.command="python3"',
        "-c", 'mcp_servers.switchboard.env_vars=["SWITCHBOARD_HOME"]', "resume", TID, "hi"),
        True),
    Shape("-- before a dashed prompt", ("--", "--weird"), True),
    Shape("unknown option", ("--bogus", "hi"), False),
    Shape("unknown option in resume", ("resume", "--bogus", TID), False),
    Shape("second prompt word", ("hi", "extra"), False),
    Shape("third resume word", ("resume", TID, "hi", "extra"), False),
    Shape("-c without =", ("-c", "noequals", "hi"), False),
    Shape("-c with empty key", ("-c", "=1", "hi"), False),
    Shape("-c without value", ("-c",), False),
    Shape("resume-only flag at top level", ("--last", "hi"), False),
    Shape("flag twice", ("--oss", "--oss", "hi"), False),
    Shape("single-valued option twice", ("-m", "a", "-m", "b", "hi"), False),
    Shape("unknown option in fork", ("fork", "--bogus", TID), False),
    Shape("resume's --include-non-interactive in fork", ("fork", "--include-non-interactive",
                                                         TID), False),
    Shape("third fork word", ("fork", TID, "hi", "extra"), False),
)

EMULATION_LIMITS = (
    ("claude", ("--continue", "hi")),
    ("codex", ("resume",)),
    ("codex", ("resume", "--last")),
    ("codex", ("fork",)),
    ("codex", ("fork", "--last")),
    ("codex", ("resume", "a-session-name")),
)
"""The real CLI accepts these and continues the latest session, opens a picker or
looks a name up; the fake keeps no saved sessions and refuses them by name
(exit 1, "not emulated")."""


class _Stub(http.server.BaseHTTPRequestHandler):
    """Anthropic Messages on loopback: keeps the request, refuses it with 401."""

    bodies: list[bytes] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        data = self.rfile.read(length) if length else b""
        if self.command == "POST" and "/messages" in self.path:
            type(self).bodies.append(data)
        body = json.dumps({"type": "error", "error": {
            "type": "authentication_error", "message": "argv-shape stand-in"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[str, list[bytes]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Stub.bodies
    finally:
        server.shutdown()


@dataclass(frozen=True)
class Place:
    home: Path
    cwd: Path
    files: dict[str, str]


def _place(tmp_path: Path) -> Place:
    """An isolated home and project with the files the shapes name, and a saved Claude
    session SID (so ``--resume SID`` reaches the model call)."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir(parents=True)
    (home / ".codex").mkdir(parents=True)
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    settings = tmp_path / "settings.json"
    settings.write_text("{}", encoding="utf-8")
    sessions = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    sessions.mkdir(parents=True)
    line = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(cwd),
            "sessionId": SID, "version": "2.1.197", "type": "user",
            "message": {"role": "user", "content": "first"},
            "uuid": "22222222-2222-4222-8222-222222222222",
            "timestamp": "2026-12-03T10:00:00.000Z"}
    (sessions / f"{SID}.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return Place(home, cwd, {"mcp": str(mcp), "settings": str(settings),
                             "missing": str(tmp_path / "missing.json")})


def _argv(shape_argv: tuple[str, ...], place: Place) -> list[str]:
    """The shape with ``{mcp}``, ``{settings}``, ``{missing}`` put in."""
    words = []
    for word in shape_argv:
        for key, value in place.files.items():
            word = word.replace("{" + key + "}", value)
        words.append(word)
    return words


def _env(place: Place, clis: RealClis, base_url: str) -> dict[str, str]:
    return {"PATH": f"{clis.node_bin}:/usr/bin:/bin", "HOME": str(place.home), "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-argv-shapes", "ANTHROPIC_BASE_URL": base_url,
            "CLAUDE_CODE_MAX_RETRIES": "0", "API_TIMEOUT_MS": "10000",
            "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def _refusal(done: subprocess.CompletedProcess) -> Seen:
    # (Codex warns first when its home sits under /tmp: not the error)
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("WARNING: ")] or [done.stdout.strip()]
    error = "\n".join(lines) if lines[0] == MCP_INVALID else lines[0]
    return Seen(False, done.returncode, error)


def _run(argv: list[str], place: Place, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=place.cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def real_claude(clis: RealClis, argv: list[str], place: Place,
                stand_in: tuple[str, list[bytes]]) -> Seen:
    base_url, bodies = stand_in
    bodies.clear()
    done = _run([str(clis.claude), *argv], place, _env(place, clis, base_url))
    if bodies:
        request = json.loads(bodies[0])
        texts = [part.get("text", "") for message in request["messages"]
                 if message["role"] == "user"
                 for part in (message["content"] if isinstance(message["content"], list)
                              else [{"text": message["content"]}])
                 if not part.get("text", "").startswith("<system-reminder>")]
        session = json.loads(request["metadata"]["user_id"])["session_id"]
        return Seen(True, prompt=texts[-1], session=session if session in (SID, FRESH) else NEW)
    if NO_PROMPT in done.stderr:
        return Seen(True)
    return _refusal(done)


def real_codex(clis: RealClis, argv: list[str], place: Place) -> Seen:
    done = _run([str(clis.codex), *argv], place, _env(place, clis, "http://127.0.0.1:9"))
    if done.returncode == 1 and NO_TTY in done.stderr:
        return Seen(True)
    return _refusal(done)


def fake(provider: str, argv: list[str], place: Place, clis: RealClis) -> Seen:
    env = {**_env(place, clis, "http://127.0.0.1:9"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = _run([sys.executable, "-m", "core.providers.fake.agent", "--provider", provider,
                 "--hook-command", "true", "--agent-command", "true", *argv], place, env)
    if done.returncode != 0 or "✻ Fake" not in done.stdout:
        return _refusal(done)
    if provider == "codex":
        return Seen(True)
    lines = done.stdout.splitlines()
    session = next(line.split()[1] for line in lines if line.startswith("  session: "))
    after = lines[next(i for i, line in enumerate(lines) if line.startswith("  cwd: ")) + 1]
    if not after.startswith("> ") or after == "> Bye.":
        return Seen(True)  # no initial prompt (as the real one in print mode: no input)
    return Seen(True, prompt=after[2:], session=session if session in (SID, FRESH) else NEW)


def _same(seen: Seen, real: Seen, exact: bool) -> bool:
    """The fake made of the argv what the real CLI did; the refusal's words too when
    ``exact`` (the release whose texts the fake reproduces: error texts change between
    releases, accepting and refusing must not)."""
    if exact:
        return seen == real
    return (seen.accepted, seen.exit_code, seen.prompt, seen.session) == \
        (real.accepted, real.exit_code, real.prompt, real.session)


@pytest.mark.parametrize("shape", CLAUDE_SHAPES, ids=lambda shape: shape.name)
def test_claude_shapes(shape: Shape, claude_cli: RealCli, real_clis: RealClis, tmp_path: Path,
                       stand_in: tuple[str, list[bytes]]) -> None:
    clis = replace(real_clis, claude=claude_cli.binary)
    place = _place(tmp_path)
    argv = _argv(shape.argv, place)
    real = real_claude(clis, argv, place, stand_in)
    assert real.accepted == shape.accepted, real
    seen = fake("claude", argv, place, clis)
    assert _same(seen, real, claude_cli.version == FAKE_TEXTS["claude"]), (seen, real)


@pytest.mark.parametrize("shape", CODEX_SHAPES, ids=lambda shape: shape.name)
def test_codex_shapes(shape: Shape, codex_cli: RealCli, real_clis: RealClis,
                      tmp_path: Path) -> None:
    clis = replace(real_clis, codex=codex_cli.binary)
    place = _place(tmp_path)
    argv = _argv(shape.argv, place)
    real = real_codex(clis, argv, place)
    assert real.accepted == shape.accepted, real
    seen = fake("codex", argv, place, clis)
    assert _same(seen, real, codex_cli.version == FAKE_TEXTS["codex"]), (seen, real)


@pytest.mark.parametrize(("provider", "argv"), EMULATION_LIMITS,
                         ids=lambda value: " ".join(value) if isinstance(value, tuple) else value)
def test_emulation_limits_are_named(provider: str, argv: tuple[str, ...], real_clis: RealClis,
                                    tmp_path: Path, stand_in: tuple[str, list[bytes]]) -> None:
    place = _place(tmp_path)
    real = real_claude(real_clis, list(argv), place, stand_in) if provider == "claude" \
        else real_codex(real_clis, list(argv), place)
    assert real.accepted, real
    seen = fake(provider, list(argv), place, real_clis)
    assert (seen.accepted, seen.exit_code) == (False, 1)
    assert seen.error is not None and seen.error.startswith("fake_agent:") and \
        "not emulated" in seen.error


def test_every_shape_is_run_with_distinct_argv() -> None:
    """Two rows with one argv would hide a missing case."""
    for shapes in (CLAUDE_SHAPES, CODEX_SHAPES):
        assert len({shape.argv for shape in shapes}) == len(shapes)
