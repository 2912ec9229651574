"""The journey in the default XDG layout, set up as a person does it.

No SWITCHBOARD_HOME, no SWITCHBOARD_CONFIG: HOME points at a tmp folder,
``switchboard init`` runs through the CLI inside the person's tmux (so views
open there), the person adds a project to ``~/.config/switchboard/config.toml``,
and every later command finds config and state from the XDG defaults. The
person's tmux server was started without any Switchboard variable, so the
agent pane, its hooks, its agent tools (Bash for Claude, the MCP server Codex
starts with a cleared environment) and the navigator pane know where the
files are only from what the launch gives them.

push (after the parent's Stop) -> child claims its brief -> complete-return ->
parent claims the handoff; once per provider.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import (
    CheckoutConfig,
    ProjectConfig,
    ProviderConfig,
    load_config,
    render_config,
)
from core.config.home import Home
from core.engine.open import open_engine
from core.model.enums import Provider
from tests.integration.journey_env import fake_provider_command, one, tmux, type_line
from tests.waiting import retry_until

PROJECT_ID = "33333333-3333-4333-8333-00000000000a"
CHECKOUT_ID = "22222222-2222-4222-8222-00000000000a"


def _person_env(person: Path) -> dict[str, str]:
    """A login environment with nothing of Switchboard's in it."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(person)
    return env


def _switchboard(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "navigator.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def _add_project(config_path: Path, root: Path) -> None:
    """What a person adds to the config init wrote: one project, the agent commands
    (the fake providers stand in for the real CLIs)."""
    config = load_config(config_path)
    config = replace(
        config,
        checkouts=(CheckoutConfig(checkout_id=CHECKOUT_ID, path=str(root)),),
        projects=(ProjectConfig(project_id=PROJECT_ID, name="alpha", root=str(root),
                                checkout_id=CHECKOUT_ID),),
        providers={p: ProviderConfig(command=fake_provider_command(p.value)) for p in Provider})
    config_path.write_text(render_config(config), encoding="utf-8")




@pytest.mark.parametrize("provider", [Provider.CLAUDE, Provider.CODEX])
def test_journey_in_the_default_xdg_layout(tmp_path: Path, tmux_socket: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           provider: Provider) -> None:
    person = tmp_path / "person"
    person.mkdir()
    env = _person_env(person)
    for name in list(os.environ):
        if name.startswith(("SWITCHBOARD_", "XDG_")) or name in ("TMUX", "TMUX_PANE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(person))

    # The person's own tmux, started before Switchboard was ever set up.
    subprocess.run(["tmux", "-S", str(tmux_socket), "-f", "/dev/null", "new-session", "-d",
                    "-s", "work", "-x", "200", "-y", "50"], check=True, env=env)
    server_pid = tmux(tmux_socket, "display-message", "-p", "#{pid}").strip()
    inside = {**env, "TMUX": f"{tmux_socket},{server_pid},0", "TMUX_PANE": "%0"}
    init = json.loads(_switchboard(inside, "init", "--json"))

    state = person / ".local" / "state" / "switchboard"
    config_path = person / ".config" / "switchboard" / "config.toml"
    assert (init["config_path"], Path(init["registry_path"]).is_relative_to(state)) == \
        (str(config_path), True)
    assert not (state / "config.toml").exists()
    assert load_config(config_path).tmux.socket_path == str(tmux_socket)  # init ran inside it
    root = tmp_path / "src" / "alpha"
    root.mkdir(parents=True)
    _add_project(config_path, root)

    route = json.loads(_switchboard(env, "project", "enter", "alpha", "--json"))
    _switchboard(env, "frame", "start", route["frame_id"], "--provider", provider.value)
    engine = open_engine(Home.from_env(env))
    try:
        assert engine.home == Home(root=state, config_path=config_path)  # type: ignore[attr-defined]
        _journey(engine, tmux_socket, route["frame_id"], provider)
    finally:
        engine.conn.close()


def _journey(engine, socket: Path, workspace_frame: str, provider: Provider) -> None:
    main = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert retry_until(lambda: one(engine, "SELECT l.state FROM launch_intents l JOIN frames f"
                                            " ON f.current_session_key = l.session_key"
                                            " WHERE f.frame_id = ?", workspace_frame)
                       == ("bound",), 20), tmux(socket, "capture-pane", "-p", "-t", main)

    type_line(socket, main, "/push Fix the bug :: Make test_foo pass")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'push'") == ("completed",), 30), \
        tmux(socket, "capture-pane", "-p", "-t", main)
    child = one(engine, "SELECT main_pane_id FROM user_views")[0]
    assert child != main
    assert one(engine, "SELECT first_claimed_at FROM transition_briefs")[0] is not None
    # The claim's answer reached the agent (its tool output is on screen).
    assert retry_until(lambda: "Instructions:" in tmux(socket, "capture-pane", "-p", "-t", child),
                       20), tmux(socket, "capture-pane", "-p", "-t", child)
    child_screen = tmux(socket, "capture-pane", "-p", "-t", child)
    assert child_screen.count("Call transition_claim() and follow") == 1, child_screen

    type_line(socket, child, "/complete Fixed foo :: review and merge")
    assert retry_until(lambda: one(engine, "SELECT state FROM view_transitions"
                                            " WHERE kind = 'complete_return'") == ("completed",),
                       30), tmux(socket, "capture-pane", "-p", "-t", child)
    assert one(engine, "SELECT main_pane_id FROM user_views")[0] == main
    assert retry_until(lambda: one(engine, "SELECT first_claimed_at FROM completion_handoffs")[0]
                       is not None, 20)
    parent_screen = tmux(socket, "capture-pane", "-p", "-t", main)
    assert parent_screen.count("> Call transition_claim() and follow") == 1, parent_screen
    for screen in (parent_screen, child_screen):
        # Every hook and agent tool found the config: none of them failed.
        assert "config_missing" not in screen and "hook exited" not in screen, screen
        assert "Error (exit" not in screen, screen
    navigator = one(engine, "SELECT navigator_pane_id FROM user_views")[0]
    assert tmux(socket, "display-message", "-p", "-t", navigator, "#{pane_dead}").strip() \
        == "0", tmux(socket, "capture-pane", "-p", "-t", navigator)
