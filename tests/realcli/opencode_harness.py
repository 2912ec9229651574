"""OpenCode's TUI in a private tmux pane, against the loopback stand-in, with a recorder.

Everything the launch needs is per launch and private to the test: the config is
given inline (``OPENCODE_CONFIG_CONTENT``: the stand-in as its Anthropic provider,
the recorder plugin, bash asking for permission), HOME and the four XDG folders
point into the test's own folder, and ``PWD`` names the project folder (OpenCode
1.18.33 takes its project from ``$PWD``, not from the process's working folder).
``OPENCODE_DISABLE_MODELS_FETCH`` keeps it from asking models.opencode.ai for its
catalogue, so no request leaves 127.0.0.1 (its built-in catalogue knows the model).

The recorder is an OpenCode plugin (an ES module loaded from a ``file://`` spec)
that appends every bus event and the named hooks it is given to a JSON-lines file:
``{"kind": "event"|"hook"|"init", "name": ..., "payload": ...}``.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.realcli.install import _clean_env
from tests.realcli.opencode_standin import OpencodeStandin

RECORDER_JS = """\
// Switchboard's recorder: every OpenCode event and hook as one JSON line (per launch).
import { appendFileSync } from "node:fs";
const OUT = process.env.SWITCHBOARD_OPENCODE_EVENTS;
function put(kind, name, payload) {
  if (!OUT) return;
  try { appendFileSync(OUT, JSON.stringify({ kind, name, payload }) + "\\n"); } catch {}
}
export const SwitchboardRecorder = async (ctx) => {
  put("init", "plugin.init", { directory: ctx.directory, keys: Object.keys(ctx) });
  return {
    event: async ({ event }) => put("event", event.type, event),
    "chat.message": async (input, output) => put("hook", "chat.message", { input, output }),
    "permission.ask": async (input, output) => put("hook", "permission.ask", { input, output }),
    "tool.execute.before": async (input, output) =>
      put("hook", "tool.execute.before", { input, output }),
    "tool.execute.after": async (input, output) =>
      put("hook", "tool.execute.after", { input, output }),
  };
};
"""
PANE = "oc"
START_S = 150.0
"""OpenCode's first start on a loaded 2-core machine took up to ~60 s (it unpacks and
indexes); the bound is generous so a slow machine does not fail the tier."""
TURN_S = 120.0


@dataclass(frozen=True)
class OpencodeTui:
    """One OpenCode TUI launched in its own tmux server (``socket``)."""

    root: Path
    project: Path
    events: Path
    socket: Path

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True,
                              text=True, timeout=30)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", PANE).stdout

    def type_line(self, text: str) -> None:
        """Type a prompt as a person does, then Enter as its own key press."""
        self.tmux("send-keys", "-t", PANE, "-l", text)
        time.sleep(0.5)
        self.tmux("send-keys", "-t", PANE, "Enter")

    def press(self, key: str) -> None:
        self.tmux("send-keys", "-t", PANE, key)

    def recorded(self) -> list[dict[str, Any]]:
        if not self.events.exists():
            return []
        lines = self.events.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def names(self) -> list[str]:
        return [str(item["name"]) for item in self.recorded()]


def wait_for(what: str, check: Callable[[], bool], timeout_s: float,
             screen: Callable[[], str] | None = None) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` (and the screen) on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    shown = screen() if screen else ""
    raise AssertionError(f"OpenCode: {what} did not happen within {timeout_s:.0f} s\n{shown}")


def launch_config(api: OpencodeStandin, plugin: Path) -> dict[str, Any]:
    """The per-launch config: the stand-in, the recorder, bash asks the person."""
    return {**api.provider_config(), "autoupdate": False, "share": "disabled",
            "plugin": [plugin.as_uri()], "permission": {"bash": "ask"}}


def start_tui(binary: Path, api: OpencodeStandin, root: Path, socket: Path, launch: str,
              extra_args: tuple[str, ...] = ()) -> OpencodeTui:
    """OpenCode's TUI in a new private tmux server, ready for a prompt.

    Launches under one ``root`` share the project, HOME and XDG folders (so a later
    launch finds the sessions of an earlier one); each ``launch`` has its own events file."""
    plugin = root / "switchboard-recorder.js"
    plugin.write_text(RECORDER_JS, encoding="utf-8")
    events = root / f"{launch}-events.jsonl"
    env = {**private_env(root),
           "OPENCODE_CONFIG_CONTENT": json.dumps(launch_config(api, plugin)),
           "SWITCHBOARD_OPENCODE_EVENTS": str(events)}
    return start_pane(root, socket, events, (str(binary), *extra_args), env)


def private_env(root: Path) -> dict[str, str]:
    """HOME, the XDG folders and PWD of a launch under ``root`` (the project folder)."""
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"), "XDG_STATE_HOME": str(root / "state"),
            "XDG_CACHE_HOME": str(root / "cache"), "PWD": str(project),
            "TERM": "xterm-256color", "OPENCODE_DISABLE_MODELS_FETCH": "1"}


def start_pane(root: Path, socket: Path, events: Path, argv: tuple[str, ...],
               env: dict[str, str]) -> OpencodeTui:
    """``argv`` (an OpenCode TUI) in a new private tmux server, ready for a prompt."""
    tui = OpencodeTui(root, root / "project", events, socket)
    env_args = [part for key, value in env.items() for part in ("-e", f"{key}={value}")]
    done = subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d",
                           "-s", PANE, "-x", "160", "-y", "45", "-c", str(tui.project),
                           *env_args, *argv],
                          capture_output=True, text=True, timeout=30,
                          env={**_clean_env(), **env})
    assert done.returncode == 0, done.stderr
    wait_for("the TUI's prompt (ctrl+p commands)", lambda: "ctrl+p" in tui.screen(), START_S,
             tui.screen)
    return tui
