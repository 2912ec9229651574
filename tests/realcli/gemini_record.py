"""Record the hook payloads a Gemini CLI release sends, for ``tests/fixtures/hooks``.

``python -m tests.realcli.gemini_record 0.61.0 [--force]`` installs that release into
the real-CLI cache, launches it as the adapter plans it (``core.providers.gemini.plan``:
its per-launch home, hooks on every event Switchboard subscribes to) in a tmux pane on a
private socket against the loopback Gemini API stand-in, and drives one short session
as a person would: a plain prompt, a shell command that asks for permission and is
allowed once, ``/quit``; then the same session again with ``--resume`` and one prompt.
Paths are rewritten to ``/home/dev/...`` as in the other recordings, and the result goes
to ``tests/fixtures/hooks/gemini-<version>.tsv``, beside the other recordings. Recording
is a step of moving the tested window, not part of ``make test``;
``tests/realcli/record_hooks.py`` does the same for the other two CLIs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from core.model.enums import LaunchAction
from core.providers.gemini import plan
from tests.realcli.gemini_standin import API_KEY, GeminiStandin
from tests.realcli.install import ensure_gemini

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
SESSION = "b647ebe7-d435-4405-be26-fae6cf724d98"
WAIT_S = 90.0
_RECORDER = (
    "import sys, json\n"
    "line = json.dumps(json.loads(sys.stdin.read()), separators=(',', ':'), "
    "ensure_ascii=False)\n"
    "open(sys.argv[1], 'a', encoding='utf-8').write(sys.argv[-1] + '\\t' + line + '\\n')\n"
)


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


def _events(out: Path) -> list[str]:
    if not out.exists():
        return []
    return [line.split("\t", 1)[0] for line in out.read_text(encoding="utf-8").splitlines()]


_GROUPS: list[int] = []
"""Process groups of the panes started: Gemini CLI does not always end with its tmux
server, so each is ended by its group."""


def _stop(socket: Path) -> None:
    """The server before is gone (its socket and its CLI too) before the next one starts."""
    _tmux(socket, "kill-server")
    while _GROUPS:
        group = _GROUPS.pop()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            time.sleep(1.0)
    deadline = time.monotonic() + 5
    while socket.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def _at_least(out: Path, event: str, count: int) -> Callable[[], bool]:
    return lambda: _events(out).count(event) >= count


def _type(socket: Path, text: str) -> None:
    _tmux(socket, "send-keys", "-l", text)
    _wait(lambda: text in _screen(socket), f"{text!r} on screen", socket)
    time.sleep(0.2)
    _tmux(socket, "send-keys", "Enter")


def record(version: str, work: Path, out: Path) -> None:
    binary = ensure_gemini(version)
    project = work / "src" / "demo"
    project.mkdir(parents=True)
    theirs = work / "home" / ".gemini"
    theirs.mkdir(parents=True)
    (theirs / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8")
    (theirs / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}),
                                                encoding="utf-8")
    recorder = work / "record_hook.py"
    recorder.write_text(_RECORDER, encoding="utf-8")
    hook = (sys.executable, str(recorder), str(out))
    person = {"HOME": str(work / "home"), "PATH": f"{binary.parent}:/usr/bin:/bin",
              "TERM": "xterm-256color"}
    socket = work / "tmux.sock"
    with GeminiStandin() as api:
        for action in (LaunchAction.NEW, LaunchAction.RESUME):
            launch = plan((str(binary),), action, SESSION, None, work / "run", hook, None,
                          person)
            env = {**person, "GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": api.url,
                   **dict(launch.env)}
            _stop(socket)
            _tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", "150", "-y", "45",
                  "-c", str(project), "env", *(f"{k}={v}" for k, v in env.items()),
                  *launch.argv)
            _tmux(socket, "set-option", "-g", "remain-on-exit", "on")
            pid = _tmux(socket, "display-message", "-p", "#{pane_pid}").strip()
            if pid.isdigit():
                _GROUPS.append(os.getpgid(int(pid)))
            _wait(lambda: "Type your message" in _screen(socket), "the prompt", socket)
            stops = _events(out).count("AfterAgent")
            _type(socket, "hello there")
            _wait(_at_least(out, "AfterAgent", stops + 1), "AfterAgent", socket)
            if action is LaunchAction.NEW:
                _type(socket, "TOOLTEST please")
                _wait(lambda: "Allow once" in _screen(socket), "the permission dialog", socket)
                while "Allow once" in _screen(socket):
                    _tmux(socket, "send-keys", "Enter")
                    time.sleep(1.0)
                _wait(_at_least(out, "AfterAgent", stops + 2), "AfterAgent", socket)
                _type(socket, "/quit")
                _wait(lambda: "SessionEnd" in _events(out), "SessionEnd", socket)
        _stop(socket)


def _rewrite(raw: str, work: Path) -> str:
    return (raw.replace(str(work / "src"), "/home/dev/src")
            .replace(str(work / "home"), "/home/dev").replace(str(work), "/home/dev"))


def main(argv: list[str]) -> int:
    force = "--force" in argv
    argv = [arg for arg in argv if arg != "--force"]
    if len(argv) != 1:
        print("usage: python -m tests.realcli.gemini_record VERSION [--force]", file=sys.stderr)
        return 2
    version = argv[0]
    target = FIXTURES / f"gemini-{version}.tsv"
    if target.exists() and not force:
        print(f"{target} exists (recorded earlier); pass --force to replace it",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sb-record-") as tmp:
        work = Path(tmp).resolve()
        out = work / "hooks.tsv"
        os.environ.pop("TMUX", None)
        try:
            record(version, work, out)
        finally:  # a step that timed out must not leave its CLI running
            _stop(work / "tmux.sock")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_rewrite(out.read_text(encoding="utf-8"), work), encoding="utf-8")
    events = _events(target)
    print(f"{target}: {len(events)} payloads ({', '.join(sorted(set(events)))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
