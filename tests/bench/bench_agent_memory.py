"""An agent's own memory under Switchboard beside the same CLI started by hand (issue 38).

Run: ``python -m tests.bench.bench_agent_memory [--rounds 3] [--cli claude codex] [--turn tool]
[--no-parts]``.

Each round starts one release twice, side by side, in the same person's world (the
same isolated ``HOME`` and CLI config, the same loopback model stand-in of
``tests/realcli``, the same project folder, the same pane size):

* by hand: a plain tmux pane on a private tmux server of its own (``-f /dev/null``),
  running the command a person types, nothing of Switchboard's;
* by Switchboard: a real home on another private tmux server, the project entered and
  the frame started as the real-CLI journeys do (``frame_start``), so the CLI gets the
  launch's argv, hooks and HTTP MCP config.

Before both, the CLI is started once in that ``HOME`` and quit (a person's CLI has run
there before): the first start in a fresh ``HOME`` holds ~6 MB more for its whole life
(measured: Claude Code 2.1.332), which would land on whichever side started first.

Both get one identical turn (the same prompt, answered by the stand-in with the same
text); once both screens show the answer (and Switchboard has the session ``ready``),
the bench waits until every agent tree has used no CPU to speak of for ``QUIET_S`` (a
hook Switchboard runs has ended by then: it is not memory the agent holds), then reads
them all at the same moment.

Counted: the process tree under the agent's pane (the CLI and every child it keeps);
Switchboard's own processes (the server, navigators) are not under it, and other
benches count them (``bench_memory``). Per tree: RSS, PSS and USS (private pages)
from ``/proc/<pid>/smaps_rollup`` (Linux only; ``tests/`` is outside the platform
boundary of ``tests/core/test_platform.py``). The CLIs share their binary's pages, so
PSS splits those between them; RSS counts them in each; USS leaves them out.

The parts (``--parts``, on by default): more panes by hand in the same round, each
given one part of Switchboard's launch: its hooks settings only, its MCP config only,
and an MCP server on a closed port (what the CLI holds for any MCP server, tools or not).

Printed per CLI: the medians over the rounds, by hand (the floor, measured in the same
run) and under Switchboard, the difference in MB and %, the target (<= 3 %); the parts
beside the floor; the programs of each tree; the environment names only Switchboard's
side has (names only: a value may be a bearer token).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from core.config.home import Home
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.model.enums import Provider
from core.server.main import stop_server
from tests.bench import census
from tests.bench.bench_memory import environ
from tests.bench.census import Memory
from tests.realcli.harness import activity, make_real_engine, xdg_home
from tests.realcli.install import RealCli, RealCliUnavailable, ensure_cli, newest

TARGET_PCT = 3.0
QUIET_S = 5.0
"""An agent tree counts as idle once it has used at most ``QUIET_TICKS`` of CPU over
this many seconds."""
QUIET_TICKS = 3
SLOW = 120.0
"""Deadline for a CLI to start or answer on a loaded machine."""
PROMPT = "MEMTEST hello there"
HAND = "by hand"
BOARD = "Switchboard"
OWN_SETTING = "check_for_update_on_startup=false"
"""In the Codex person's own ``config.toml`` already (``harness_codex.make_person``)."""
CLOSED_PORT_URL = "http://127.0.0.1:9/mcp"
"""Port 9 (discard) on loopback: nothing listens."""


# --- reading processes (Linux /proc) -------------------------------------------------

@dataclass(frozen=True)
class ProcMemory:
    pid: int
    program: str
    memory: Memory


@dataclass(frozen=True)
class TreeMemory:
    procs: tuple[ProcMemory, ...]

    def figure(self, name: str) -> float:
        """The sum over the tree of one ``census.Memory`` field (``rss``, ``pss``, ``uss``)."""
        return sum(getattr(p.memory, name) for p in self.procs)

    def programs(self) -> str:
        return " + ".join(f"{p.program} {p.memory.rss:.1f}" for p in self.procs)


def tree(root: int) -> dict[int, int]:
    """pid -> CPU ticks of ``root`` and every descendant of it now."""
    stats = census.stats()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in stats and pid not in found:
            found[pid] = stats[pid][1]
            todo += children.get(pid, [])
    return found


def _program(pid: int) -> str:
    """The program's file name (node's script for a node process)."""
    try:
        argv = [os.fsdecode(a) for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
    except OSError:
        return "?"
    name = os.path.basename(argv[0]) or "?"
    if name == "node" and len(argv) > 1:
        return f"node {os.path.basename(argv[1])}"
    if len(argv) > 2 and argv[1] == "app-server":  # Codex's shared daemon
        return f"{name} app-server{' ' + argv[2] if argv[2] == 'daemon' else ''}"
    return name


def read_tree(root: int) -> TreeMemory:
    return _read_pids(sorted(tree(root)))


def _environ_of(pid: int) -> dict[str, str]:
    """``pid``'s environment as it started (empty when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(os.fsdecode(item).split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def _cmdline(pid: int) -> list[str]:
    return [os.fsdecode(a) for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]]


def wait_quiet(roots: list[int], quiet_s: float = QUIET_S, limit_s: float = SLOW) -> bool:
    """Until every tree of ``roots`` has used at most ``QUIET_TICKS`` of CPU over the
    last ``quiet_s`` (each tree on its own); False when ``limit_s`` passed first."""
    deadline = time.monotonic() + limit_s
    history: list[tuple[float, list[dict[int, int]]]] = []
    while time.monotonic() < deadline:
        now = time.monotonic()
        history.append((now, [tree(r) for r in roots]))
        old = [h for h in history if now - h[0] >= quiet_s]
        if old:
            then = old[-1][1]
            spent = [sum(ticks - then[i].get(pid, 0) for pid, ticks in trees.items())
                     for i, trees in enumerate(history[-1][1])]
            if all(s <= QUIET_TICKS for s in spent):
                return True
        time.sleep(0.5)
    return False


# --- tmux ------------------------------------------------------------------------------

def tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True,
                          text=True, check=False).stdout


def screen(socket: Path, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-S", "-200", "-t", pane)


def pane_pid(socket: Path, pane: str) -> int:
    return int(tmux(socket, "display-message", "-p", "-t", pane, "#{pane_pid}").strip())


def pane_size(socket: Path, pane: str) -> tuple[int, int]:
    width, height = tmux(socket, "display-message", "-p", "-t", pane,
                         "#{pane_width} #{pane_height}").split()
    return int(width), int(height)


def until(check: Callable[[], bool], limit_s: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up after {limit_s:g} s: {what()}")
        time.sleep(0.2)


@dataclass
class Pane:
    """One agent's pane: where it runs and the pid of the process the pane started."""

    label: str
    socket: Path
    pane: str
    pid: int = 0

    def __post_init__(self) -> None:
        self.pid = self.pid or pane_pid(self.socket, self.pane)

    def screen(self) -> str:
        return screen(self.socket, self.pane)

    def wait_for(self, text: str) -> None:
        until(lambda: text in self.screen(), SLOW, lambda: f"{self.label}:\n{self.screen()}")

    def type_line(self, text: str) -> None:
        """The words, then Enter once they are drawn (a burst with Enter is a paste)."""
        tmux(self.socket, "send-keys", "-t", self.pane, "-l", text)
        self.wait_for(text)
        time.sleep(0.6)
        tmux(self.socket, "send-keys", "-t", self.pane, "Enter")


def by_hand(folder: Path, label: str, command: tuple[str, ...], cwd: Path,
            size: tuple[int, int], env: Mapping[str, str] | None = None) -> Pane:
    """``command`` in the one pane of a new plain tmux server (no config file)."""
    folder.mkdir(parents=True, exist_ok=True)
    socket = folder / "tmux.sock"
    assigns = [part for name, value in (env or {}).items() for part in ("-e", f"{name}={value}")]
    tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", str(size[0]), "-y",
         str(size[1]), "-c", str(cwd), *assigns, *command)
    return Pane(label, socket, tmux(socket, "display-message", "-p", "#{pane_id}").strip())


# --- the two CLIs ----------------------------------------------------------------------

@dataclass(frozen=True)
class Person:
    """One round's person: the command they type, where, and their environment."""

    command: tuple[str, ...]
    project: Path
    env: dict[str, str | None]
    """Changes to this process's environment while the round runs (tmux servers and so
    the panes start from it)."""


@dataclass(frozen=True)
class Parts:
    """The launch argv split into what each part of Switchboard's launch adds."""

    hooks: tuple[str, ...]
    mcp: tuple[str, ...]
    mcp_env: dict[str, str]
    closed_mcp: tuple[str, ...]


@dataclass(frozen=True)
class Turn:
    """The one turn each agent gets: what is typed, what shows once it is answered, and
    (for a command the person's rules do not allow) the question and the key that
    approves it."""

    prompt: str
    answer: str
    question: str | None = None
    approve_key: str = "Enter"


class Cli:
    """What differs between the CLIs: the person's world, the screens, the launch parts."""

    provider: Provider
    ready_text: str
    """On screen once the CLI takes input."""
    turns: dict[str, Turn]
    """``text``: a plain answer; ``tool``: a shell command the person approves, then an
    answer (the CLI then runs a child process, as in most real turns)."""

    def __init__(self, real: RealCli, turn: str = "text") -> None:
        self.real = real
        self.turn = self.turns[turn]

    def person(self, tmp: Path) -> AbstractContextManager[Person]:
        raise NotImplementedError

    def parts(self, argv: list[str], pid: int, tmp: Path) -> Parts:
        raise NotImplementedError

    def same_launch(self, argv: list[str]) -> list[str]:
        """The launch's argv for a second process beside the first."""
        return argv

    def own_parts(self) -> list[tuple[str, tuple[str, ...]]]:
        """(label, extra argv) of parts only this CLI has."""
        return []

    def warmed(self, tmp: Path) -> bool:
        """The warm-up left the person's home as a used one looks."""
        return True


class Claude(Cli):
    provider = Provider.CLAUDE
    ready_text = "? for shortcuts"
    turns = {"text": Turn(PROMPT, "STANDIN-OK: " + PROMPT),
             "tool": Turn("TOOLTEST please", "STANDIN-DONE Bash", "Do you want to proceed?")}

    @contextmanager
    def person(self, tmp: Path) -> Iterator[Person]:
        from tests.realcli.anthropic_standin import AnthropicStandin
        from tests.realcli.harness_claude import claude_command, seed_home

        project = tmp / "src" / "alpha"
        home = seed_home(tmp / "claude-home", [project, tmp / "src" / "beta"],
                         self.real.version)
        with AnthropicStandin() as api:
            yield Person(claude_command(self.real.binary, home, api.url), project, {})

    def parts(self, argv: list[str], pid: int, tmp: Path) -> Parts:
        """``--settings FILE`` (hooks, the wait for the tools, their permission) and
        ``--mcp-config=FILE`` (the agent tools over HTTP)."""
        index = argv.index("--settings")
        mcp = tuple(a for a in argv if a.startswith("--mcp-config="))
        closed = tmp / "closed-mcp.json"
        closed.write_text(json.dumps({"mcpServers": {"switchboard": {
            "type": "http", "url": CLOSED_PORT_URL,
            "headers": {"Authorization": "Bearer none"}}}}))
        return Parts(tuple(argv[index:index + 2]), mcp, {}, (f"--mcp-config={closed}",))

    def same_launch(self, argv: list[str]) -> list[str]:
        """Without ``--session-id ID``: two processes on one session id would share its
        transcript."""
        index = argv.index("--session-id")
        return argv[:index] + argv[index + 2:]


class Codex(Cli):
    provider = Provider.CODEX
    ready_text = "Ask Codex to do anything"
    turns = {"text": Turn(PROMPT, "Stand-in reply to: " + PROMPT),
             "tool": Turn("TOOLTEST", "TOOLTEST finished.",
                          "Would you like to run the following command?", "y")}

    @contextmanager
    def person(self, tmp: Path) -> Iterator[Person]:
        from tests.realcli.harness_codex import SCRUBBED_PREFIXES, make_person, person_env
        from tests.realcli.install import RealClis
        from tests.realcli.openai_standin import OpenAIStandin

        with OpenAIStandin() as standin:
            clis = RealClis(claude=Path("claude"), codex=self.real.binary,
                            node_bin=self.real.node_bin)
            person = make_person(tmp, clis, standin.base_url)
            env: dict[str, str | None] = {name: None for name in os.environ
                                          if name.startswith(SCRUBBED_PREFIXES)}
            env.update(person_env(person, base={}))
            yield Person((str(self.real.binary),), person.project, env)

    def parts(self, argv: list[str], pid: int, tmp: Path) -> Parts:
        """``-c`` overrides: ``mcp_servers.*`` (the agent tools over HTTP, the token in
        the pane's environment) and the rest (hooks and their trust)."""
        pairs = [(argv[i], argv[i + 1]) for i in range(len(argv) - 1) if argv[i] == "-c"]
        mcp = [p for p in pairs if p[1].startswith("mcp_servers.")]
        hooks = [p for p in pairs if not p[1].startswith("mcp_servers.")]
        names = {p[1].split("=", 1)[1].strip('"') for p in mcp if ".bearer_token_env_var=" in p[1]}
        started = _environ_of(pid)
        token_env = {name: started[name] for name in names if started.get(name)}
        key = mcp[0][1].split(".url=")[0] if mcp else "mcp_servers.switchboard"
        closed = ("-c", f'{key}.url="{CLOSED_PORT_URL}"')
        return Parts(tuple(a for p in hooks for a in p), tuple(a for p in mcp for a in p),
                     token_env, closed)

    def warmed(self, tmp: Path) -> bool:
        """The home's app-server daemon runs (a TUI started by hand starts it a moment
        after its prompt shows, and it outlives the TUI): every session by hand in the
        round then shares it, and the bench reads it apart from them."""
        return bool(_strays(tmp))

    def own_parts(self) -> list[tuple[str, tuple[str, ...]]]:
        """Codex (0.171.0) serves a TUI from a shared per-home app-server daemon, unless
        the command line overrides configuration (``-c``): then it runs an app server
        inside the TUI's own process. One override of a setting the person already has
        shows what any ``-c`` costs."""
        return [("+ one -c of the person's own setting", ("-c", OWN_SETTING))]


# --- one round -------------------------------------------------------------------------

@dataclass
class Round:
    trees: dict[str, TreeMemory]
    env_only_board: set[str] = field(default_factory=set)
    argv_board: list[str] = field(default_factory=list)
    shared: TreeMemory | None = None
    """Processes of the person's home outside every pane (Codex's app-server daemon)."""


def _warm(cli: Cli, person: Person, tmp: Path) -> None:
    """The CLI once in the person's HOME, to its prompt, then gone."""
    pane = by_hand(tmp / "warm", "warm-up", person.command, person.project, (160, 50))
    try:
        pane.wait_for(cli.ready_text)
        deadline = time.monotonic() + 30
        while not cli.warmed(tmp) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2.0)
    finally:
        tmux(pane.socket, "kill-server")


def _switchboard(cli: Cli, person: Person, tmp: Path) -> tuple[Engine, Home, str, Pane]:
    home = xdg_home(tmp / "sb")
    engine = make_real_engine(tmp, tmp / "sb.sock", {cli.provider: person.command},
                              home=home)
    route = engine.project_enter(new_request_id(), "alpha")
    engine.frame_start(new_request_id(), route.frame_id, cli.provider)
    pane = str(engine.conn.execute("SELECT main_pane_id FROM user_views WHERE view_id = ?",
                                   (route.view_id,)).fetchone()[0])
    return engine, home, route.frame_id, Pane(BOARD, tmp / "sb.sock", pane)


def _answered(pane: Pane, turn: Turn) -> None:
    """Until the turn's answer shows, approving its command whenever it is asked (a
    newer Claude Code ignores a key that comes right after the question appears)."""
    def done() -> bool:
        text = pane.screen()
        if turn.answer in text:
            return True
        if turn.question is not None and turn.question in text:
            tmux(pane.socket, "send-keys", "-t", pane.pane, turn.approve_key)
            time.sleep(1.0)
        return False
    until(done, SLOW, lambda: f"{pane.label}:\n{pane.screen()}")


def _parts(cli: Cli, person: Person, argv: list[str], pid: int,
           tmp: Path) -> list[tuple[str, tuple[str, ...], dict[str, str]]]:
    """(label, command, tmux pane environment) of each part run alone by hand. The last
    one carries the Switchboard pane's capability, so its hooks report to the home as
    that pane; the bench reads Switchboard's activity only after every answer showed."""
    split = cli.parts(argv, pid, tmp)
    whole = ("env", "-i", *[f"{name}={value}" for name, value in _environ_of(pid).items()],
             *cli.same_launch(argv))
    return [("+ its hooks settings only", (*person.command, *split.hooks), {}),
            ("+ its MCP config only", (*person.command, *split.mcp), split.mcp_env),
            ("+ its hooks settings and MCP config", (*person.command, *split.hooks,
                                                     *split.mcp), split.mcp_env),
            ("+ an MCP server on a closed port", (*person.command, *split.closed_mcp), {}),
            *[(label, (*person.command, *extra), {}) for label, extra in cli.own_parts()],
            (f"with {BOARD}'s whole argv and environment", whole, {})]


def one_round(cli: Cli, tmp: Path, parts: bool, board_first: bool) -> Round:
    with cli.person(tmp) as person, environ(**{
            "SWITCHBOARD_HOME": None, "SWITCHBOARD_CONFIG": None, "TMUX": None,
            "TMUX_PANE": None, **person.env,
            "XDG_STATE_HOME": str(tmp / "sb" / ".local" / "state"),
            "XDG_CONFIG_HOME": str(tmp / "sb" / ".config")}):
        person.project.mkdir(parents=True, exist_ok=True)
        _warm(cli, person, tmp)
        engine: Engine | None = None
        home: Home | None = None
        panes: list[Pane] = []
        try:
            engine, home, frame, board = _switchboard(cli, person, tmp)
            hand = by_hand(tmp / "hand", HAND, person.command, person.project,
                           pane_size(board.socket, board.pane))
            panes = [board, hand] if board_first else [hand, board]
            board.wait_for(cli.ready_text)
            argv = _cmdline(board.pid)
            if parts:
                size = pane_size(board.socket, board.pane)
                for label, command, env in _parts(cli, person, argv, board.pid, tmp):
                    panes.append(by_hand(tmp / f"part{len(panes)}", f"{HAND} {label}",
                                         command, person.project, size, env))
            for pane in panes:
                pane.wait_for(cli.ready_text)
            for pane in panes:
                pane.type_line(cli.turn.prompt)
            for pane in panes:
                _answered(pane, cli.turn)
            until(lambda: activity(engine, frame) == "ready", SLOW,
                  lambda: f"Switchboard's activity: {activity(engine, frame)}")
            if not wait_quiet([p.pid for p in panes]):
                print("   (an agent was not idle within the limit: read anyway)")
            trees = {p.label: read_tree(p.pid) for p in panes}
            counted = {proc.pid for one in trees.values() for proc in one.procs}
            daemon = [pid for pid in _strays(tmp) if pid not in counted]
            return Round(trees, set(_environ_of(board.pid)) - set(_environ_of(hand.pid)),
                         argv, _read_pids(daemon) if daemon else None)
        finally:
            for pane in panes:
                if pane.label != BOARD:
                    tmux(pane.socket, "kill-server")
            if home is not None:
                stop_server(home.run_dir)
            tmux(tmp / "sb.sock", "kill-server")
            if engine is not None:
                engine.conn.close()
            _end_strays(tmp)


def _strays(tmp: Path) -> list[int]:
    """Processes running a program from the round's folder: Codex's app-server daemon,
    run from the person's ``~/.codex/packages``, which a TUI started by hand (the
    warm-up's) leaves running for the home's later sessions to share."""
    found = []
    for pid in census.stats():
        try:
            argv = _cmdline(pid)
        except OSError:
            continue
        if argv and argv[0].startswith(f"{tmp}/"):
            found.append(pid)
    return sorted(found)


def _read_pids(pids: list[int]) -> TreeMemory:
    return TreeMemory(tuple(ProcMemory(pid, _program(pid), census.memory_of(pid)) for pid in pids))


def _end_strays(tmp: Path) -> None:
    """End what a CLI left running from the round's folder (``_strays``): started by
    this bench, so ended by it, by pid."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        strays = _strays(tmp)
        if not strays:
            return
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
    print(f"   (processes from {tmp} still running after SIGTERM)")


# --- the figures -----------------------------------------------------------------------

def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def report(cli: Cli, rounds: list[Round]) -> None:
    """Print the medians (a figure over its target is printed OVER; it does not fail the
    run, as in the other benches)."""
    print(f"{cli.real.id}, turn {cli.turn.prompt!r}: {len(rounds)} rounds, each side by side; load "
          f"{os.getloadavg()[0]:.2f}")
    for name in ("rss", "pss", "uss"):
        hand = _median([r.trees[HAND].figure(name) for r in rounds])
        board = _median([r.trees[BOARD].figure(name) for r in rounds])
        diff = _median([r.trees[BOARD].figure(name) - r.trees[HAND].figure(name)
                        for r in rounds])
        pct = diff / hand * 100 if hand else 0.0
        print(f"  {name.upper()}: {HAND} {hand:6.1f} MB (floor), under {BOARD} {board:6.1f} MB:"
              f" {diff:+5.1f} MB ({pct:+.1f} %), target <= {TARGET_PCT:g} %: "
              f"{'OK' if pct <= TARGET_PCT else 'OVER'}")
    labels = [label for label in rounds[0].trees if label not in (HAND, BOARD)]
    if labels:
        print("  the parts of the launch, each alone by hand (median difference to the floor):")
    for label in labels:
        diffs = {name: _median([r.trees[label].figure(name) - r.trees[HAND].figure(name)
                                for r in rounds]) for name in ("rss", "pss", "uss")}
        print(f"    {label:50s} RSS {diffs['rss']:+5.1f}  PSS {diffs['pss']:+5.1f}  "
              f"USS {diffs['uss']:+5.1f} MB")
    for index, one in enumerate(rounds):
        print(f"  round {index + 1} RSS MB: {HAND} [{one.trees[HAND].programs()}], {BOARD} "
              f"[{one.trees[BOARD].programs()}]")
    shared = [r.shared for r in rounds if r.shared is not None]
    if shared:
        rss, pss, uss = (_median([t.figure(n) for t in shared]) for n in ("rss", "pss", "uss"))
        print(f"  outside every pane, shared by the home's sessions by hand (median): "
              f"RSS {rss:.1f}  PSS {pss:.1f}  USS {uss:.1f} MB [{shared[-1].programs()}]")
    print(f"  environment only under {BOARD}: {sorted(rounds[-1].env_only_board) or 'none'}")


def _cli(name: str, turn: str) -> Cli:
    provider = Provider(name)
    real = ensure_cli(provider, newest(provider))
    return Claude(real, turn) if provider is Provider.CLAUDE else Codex(real, turn)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cli", nargs="+", default=["claude", "codex"],
                        choices=[Provider.CLAUDE.value, Provider.CODEX.value])
    parser.add_argument("--turn", choices=["text", "tool"], default="text",
                        help="the one turn: a plain answer, or a shell command approved")
    parser.add_argument("--parts", action=argparse.BooleanOptionalAction, default=True,
                        help="also run each part of the launch alone by hand")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: `make setup` installs it")
        return 1
    try:
        chosen = [_cli(name, args.turn) for name in args.cli]
    except RealCliUnavailable as exc:
        print(f"the real CLIs are not installed and could not be: {exc}")
        return 1
    for cli in chosen:
        rounds = []
        for index in range(args.rounds):
            tmp = Path(tempfile.mkdtemp(prefix="sbam-", dir="/tmp"))
            try:
                rounds.append(one_round(cli, tmp, args.parts, board_first=index % 2 == 0))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        report(cli, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
