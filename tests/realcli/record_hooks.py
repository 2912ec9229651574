"""Record the hook payloads one real CLI release sends, into ``tests/fixtures/hooks``.

``python -m tests.realcli.record_hooks claude 2.1.332`` (or ``codex 0.166.0``)
installs that release, runs it in a tmux pane on a private socket against the
loopback stand-in, with a hook on every event Switchboard subscribes to (and the
newer ones it may use) whose command appends ``EVENT<TAB>payload`` to a file,
and drives one short session as a person would: a prompt, a tool call that asks
for permission and is approved, a turn end (for Claude Code then a turn the stand-in
refuses with a rate limit, which ends on StopFailure), and for Claude Code a second session
in auto mode whose risky command the service's check blocks, a third without the
service's check (a plain command the side request allows, the risky one it blocks), and
a fourth behind a gateway that does not pass the check through, whose notice mid-turn
(``Notification(agent_needs_input)``) the person answers with Enter, then exit. Paths
are rewritten to ``/home/dev/...`` as in the first recordings, and the result is
written to ``tests/fixtures/hooks/<cli>-<version>.tsv``; the tests replay every
file there through the hook parser (``tests/core/test_providers.py``).

Recording is a step of moving the tested window (``docs/cli-versions.md``), not
part of ``make test``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.model.enums import Provider
from core.providers.codex_config import SessionHooks
from core.providers.hooks import CLAUDE_HOOK_EVENTS, CODEX_HOOK_EVENTS
from tests.realcli.install import ensure_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
CLAUDE_RECORDED = (*CLAUDE_HOOK_EVENTS, "StopFailure", "PermissionDenied", "SubagentStart",
                   "SubagentStop")
WAIT_S = 60.0

_APPEND = (
    "import sys, json\n"
    "data = sys.stdin.read()\n"
    "line = json.dumps(json.loads(data), separators=(',', ':'), ensure_ascii=False)\n"
    "open(sys.argv[2], 'a', encoding='utf-8').write(sys.argv[1] + '\\t' + line + '\\n')\n"
)


def _hook_command(out: Path, event: str) -> str:
    """One line (Codex refuses a multi-line hook command): a script beside the output."""
    script = out.with_name("append_hook.py")
    if not script.exists():
        script.write_text(_APPEND, encoding="utf-8")
    return " ".join(shlex.quote(part) for part in (sys.executable, str(script), event,
                                                   str(out)))


def _tmux(socket: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(socket), *args], capture_output=True,
                          text=True).stdout


def _screen(socket: Path) -> str:
    return _tmux(socket, "capture-pane", "-p", "-J")


def _wait(check: Callable[[], bool], what: str, socket: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    panes = _tmux(socket, "list-panes", "-a", "-F", "#{pane_dead} #{pane_dead_status}")
    raise SystemExit(f"timed out waiting for {what} (panes: {panes.strip()!r}):\n"
                     f"{_screen(socket)}")


def _type(socket: Path, text: str) -> None:
    _tmux(socket, "send-keys", "-l", text)
    _wait(lambda: text in _screen(socket), f"{text!r} on screen", socket)
    time.sleep(0.2)
    _tmux(socket, "send-keys", "Enter")


def _approve(socket: Path, question: str) -> None:
    """Enter until the permission dialog is gone (2.1.250+ ignore the first one)."""
    _wait(lambda: question in _screen(socket), "the permission dialog", socket)

    def gone() -> bool:
        if question not in _screen(socket):
            return True
        _tmux(socket, "send-keys", "Enter")
        time.sleep(1.0)
        return question not in _screen(socket)
    _wait(gone, "the dialog to close", socket)


def _start(socket: Path, project: Path, command: list[str]) -> None:
    """A session of its own on a server of its own: the one before is gone first, and a
    CLI that exits leaves its last words on screen."""
    _tmux(socket, "kill-server")
    deadline = time.monotonic() + 5
    while socket.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    _tmux(socket, "new-session", "-d", "-x", "150", "-y", "45", "-c", str(project), *command)
    _tmux(socket, "set-option", "-g", "remain-on-exit", "on")


def _events(out: Path) -> list[str]:
    if not out.exists():
        return []
    return [line.split("\t", 1)[0] for line in out.read_text(encoding="utf-8").splitlines()]


def record_claude(version: str, work: Path, out: Path) -> None:
    from tests.realcli.anthropic_standin import AnthropicStandin
    from tests.realcli.harness_claude import LOCAL_CHECK_ENV, claude_command, seed_home

    binary = ensure_cli(Provider.CLAUDE, version).binary
    project = work / "src" / "demo"
    project.mkdir(parents=True)
    home = seed_home(work / "home", [project], version)
    settings = work / "record-settings.json"
    settings.write_text(json.dumps({"hooks": {
        event: [{"hooks": [{"type": "command", "command": _hook_command(out, event)}]}]
        for event in CLAUDE_RECORDED}}))
    socket = work / "tmux.sock"
    with AnthropicStandin() as api:
        command = [*claude_command(binary, home, api.url), "--settings", str(settings)]
        _tmux(socket, "new-session", "-d", "-x", "150", "-y", "45", "-c", str(project),
              *command)
        _wait(lambda: "? for shortcuts" in _screen(socket), "the prompt", socket)
        _type(socket, "TOOLTEST please run it")
        _approve(socket, "Do you want to proceed?")
        _wait(lambda: "Stop" in _events(out), "the Stop hook", socket)
        # a turn the service refuses with a rate limit: Claude Code ends it on StopFailure
        _type(socket, "LIMITTEST please")
        _wait(lambda: "StopFailure" in _events(out), "the StopFailure hook", socket)
        _type(socket, "/exit")
        _wait(lambda: "SessionEnd" in _events(out), "SessionEnd", socket)
        _tmux(socket, "kill-server")
        # a second session in auto mode: the service's check blocks a risky command
        _tmux(socket, "new-session", "-d", "-x", "150", "-y", "45", "-c", str(project),
              *command, "--permission-mode", "auto")
        _wait(lambda: "auto mode on" in _screen(socket), "auto mode's prompt", socket)
        _type(socket, "RISKYTEST please")
        _wait(lambda: _events(out).count("Stop") >= 2, "the second Stop", socket)
        _tmux(socket, "kill-server")
        # a third in auto mode without the service's check: the CLI asks about each
        # command in a side request, which allows the plain one and blocks the risky one
        command = [*claude_command(binary, home, api.url, LOCAL_CHECK_ENV),
                   "--settings", str(settings)]
        _start(socket, project, [*command, "--permission-mode", "auto"])
        _wait(lambda: "auto mode on" in _screen(socket), "auto mode's prompt", socket)
        _type(socket, "PLAINTEST please")
        _wait(lambda: _events(out).count("Stop") >= 3, "the plain command's Stop", socket)
        _type(socket, "RISKYTEST please")
        _wait(lambda: _events(out).count("Stop") >= 4, "the risky command's Stop", socket)
        _tmux(socket, "kill-server")
    # a fourth behind a gateway that does not pass the check through: a notice mid-turn,
    # announced by Notification(agent_needs_input); Enter stays in auto mode, then the
    # CLI asks the person about the command (No is focused, and No interrupts the turn
    # without a Stop): Yes, and the command runs
    with AnthropicStandin(refuses_check=True) as api:
        command = [*claude_command(binary, home, api.url), "--settings", str(settings)]
        _start(socket, project, [*command, "--permission-mode", "auto"])
        _wait(lambda: "auto mode on" in _screen(socket), "auto mode's prompt", socket)
        before = _events(out).count("Notification")
        _type(socket, "PLAINTEST please")
        # the CLI announces a dialog still up after some seconds (about 6): the person
        # answers once it has, so the recording holds the announcement
        _wait(lambda: _events(out).count("Notification") > before, "the notice's hook", socket)
        _approve(socket, "Enter to stay in auto mode")
        _wait(lambda: "Do you want to proceed?" in _screen(socket), "the question", socket)
        _wait(lambda: _events(out).count("Notification") > before + 1, "the question's hook",
              socket)
        _tmux(socket, "send-keys", "Down")
        _approve(socket, "Do you want to proceed?")
        _wait(lambda: _events(out).count("Stop") >= 5, "the fifth Stop", socket)
        _tmux(socket, "kill-server")


def record_codex(version: str, work: Path, out: Path) -> None:
    from tests.realcli.harness_codex import make_person, person_env
    from tests.realcli.install import RealClis
    from tests.realcli.openai_standin import OpenAIStandin

    cli = ensure_cli(Provider.CODEX, version)
    socket = work / "tmux.sock"
    with OpenAIStandin() as standin:
        clis = RealClis(claude=cli.binary, codex=cli.binary, node_bin=cli.node_bin)
        person = make_person(work, clis, standin.base_url)
        hooks = SessionHooks(tuple((event, _hook_command(out, event))
                                   for event in CODEX_HOOK_EVENTS), timeout_s=30)
        env = person_env(person)
        argv = [str(cli.binary), *hooks.overrides()]
        assigns = [f"{k}={v}" for k, v in env.items() if k in ("HOME", "PATH") or
                   k.lower().endswith("_proxy")]
        _tmux(socket, "new-session", "-d", "-x", "150", "-y", "45", "-c", str(person.project),
              "env", *assigns, *argv)
        _wait(lambda: "Ask Codex to do anything" in _screen(socket), "the composer", socket)
        _type(socket, "hello SLOW")
        _wait(lambda: "Stop" in _events(out), "the Stop hook", socket)
        _type(socket, "TOOLTEST please")
        _wait(lambda: "PermissionRequest" in _events(out), "the permission request", socket)
        time.sleep(1.0)
        _tmux(socket, "send-keys", "Enter")
        _wait(lambda: _events(out).count("Stop") >= 2, "the second Stop", socket)
        _tmux(socket, "kill-server")


def _rewrite(raw: str, work: Path) -> str:
    """Temporary paths become /home/dev/... as in the first recordings."""
    text = raw
    for real, shown in ((str(work / "src"), "/home/dev/src"), (str(work / "home"), "/home/dev"),
                        (str(work / "person"), "/home/dev"), (str(work), "/home/dev")):
        text = text.replace(real, shown)
        mangled = real.replace("/", "-").replace(".", "-").replace("_", "-")
        text = text.replace(mangled, shown.replace("/", "-"))
    return text


def main(argv: list[str]) -> int:
    force = "--force" in argv
    argv = [arg for arg in argv if arg != "--force"]
    if len(argv) != 2 or argv[0] not in ("claude", "codex"):
        print("usage: python -m tests.realcli.record_hooks claude|codex VERSION [--force]",
              file=sys.stderr)
        return 2
    provider, version = Provider(argv[0]), argv[1]
    target = FIXTURES / f"{provider.value}-{version}.tsv"
    if target.exists() and not force:
        print(f"{target} exists (recorded earlier); pass --force to replace it",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sb-record-") as tmp:
        work = Path(tmp).resolve()
        out = work / "hooks.tsv"
        os.environ.pop("TMUX", None)
        try:
            (record_claude if provider is Provider.CLAUDE else record_codex)(version, work, out)
        finally:  # a step that timed out must not leave its CLI running
            _tmux(work / "tmux.sock", "kill-server")
        target.write_text(_rewrite(out.read_text(encoding="utf-8"), work), encoding="utf-8")
    events = _events(target)
    print(f"{target}: {len(events)} payloads ({', '.join(sorted(set(events)))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
