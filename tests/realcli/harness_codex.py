"""The real Codex CLI in a person's own home, talking to the loopback model stand-in.

A person who has used Codex before has a Codex home (``~/.codex``) with their
login (``codex login --with-api-key`` writes ``auth.json``), a model provider
configured in ``config.toml`` and the folders they trust. This builds exactly
that under an isolated ``HOME``, with the provider's ``base_url`` pointing at
:mod:`tests.realcli.openai_standin`, and a live Switchboard home on a private
tmux server whose Codex command is the pinned real binary.

Nothing leaves loopback: the only provider is the stand-in on 127.0.0.1, and
the proxy variables send anything else Codex might try to a closed loopback
port.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig, TmuxConfig
from core.config.home import Home
from core.config.registry import init_registry
from core.engine.engine import Engine
from core.engine.open import open_engine
from core.model.enums import Provider
from core.providers.codex_config import toml_string
from tests.factories import project_config
from tests.integration.journey_env import fake_provider_command, tmux
from tests.realcli.install import RealClis
from tests.waiting import fail_unless

API_KEY = "sk-standin-person-0001"
PROJECT = "alpha"
"""The project Switchboard opens: ``tests.factories.project_config`` puts it at ``src/alpha``."""
MODEL = "gpt-5.4"
DEAD_PROXY = "http://127.0.0.1:9"
"""Port 9 (discard) on loopback: nothing listens, so any non-loopback request fails fast."""
SCRUBBED_PREFIXES = ("OPENAI_", "CODEX_", "ANTHROPIC_", "CLAUDE_", "TMUX")


@dataclass(frozen=True)
class PersonCodex:
    """The isolated person: their HOME, Codex home and project folder."""

    home: Path
    codex_home: Path
    project: Path

    @property
    def config(self) -> Path:
        return self.codex_home / "config.toml"

    @property
    def auth(self) -> Path:
        return self.codex_home / "auth.json"

    def session_files(self, thread_id: str) -> list[Path]:
        """Codex's rollout files of one thread (``sessions/YYYY/MM/DD/rollout-...-ID.jsonl``)."""
        return sorted((self.codex_home / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))


def person_env(person: PersonCodex, base: dict[str, str] | None = None) -> dict[str, str]:
    """The person's environment: no credentials or Codex settings of this machine."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(SCRUBBED_PREFIXES)}
    env.update(HOME=str(person.home), HTTPS_PROXY=DEAD_PROXY, HTTP_PROXY=DEAD_PROXY,
               ALL_PROXY=DEAD_PROXY, https_proxy=DEAD_PROXY, http_proxy=DEAD_PROXY,
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


def act_as_person(monkeypatch: pytest.MonkeyPatch, root: Path, person: PersonCodex) -> None:
    """This test process becomes the person: their environment (no credentials or Codex
    settings of this machine), no Switchboard home named, and Switchboard's default XDG
    layout under ``root/sb`` (what a person who never set SWITCHBOARD_HOME has)."""
    for name in list(os.environ):
        if name.startswith(SCRUBBED_PREFIXES):
            monkeypatch.delenv(name)
    for name, value in person_env(person).items():
        monkeypatch.setenv(name, value)
    for name in ("SWITCHBOARD_HOME", "SWITCHBOARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "sb" / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "sb" / ".config"))


def make_person(root: Path, clis: RealClis, base_url: str) -> PersonCodex:
    """Config and login as a person who has used Codex here before."""
    person = PersonCodex(home=root / "person", codex_home=root / "person" / ".codex",
                         project=root / "src" / PROJECT)
    person.codex_home.mkdir(parents=True)
    person.project.mkdir(parents=True, exist_ok=True)
    person.config.write_text(
        "# my Codex settings\n"
        f"model = {toml_string(MODEL)}\n"
        'model_provider = "standin"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        "[model_providers.standin]\n"
        'name = "Loopback stand-in"\n'
        f"base_url = {toml_string(base_url)}\n"
        'wire_api = "responses"\n'
        "requires_openai_auth = true\n"
        "\n"
        f"[projects.{toml_string(str(person.project))}]\n"
        'trust_level = "trusted"\n',
        encoding="utf-8")
    done = subprocess.run([str(clis.codex), "login", "--with-api-key"], input=API_KEY,
                          capture_output=True, text=True, timeout=60,
                          env=person_env(person), cwd=person.home)
    if done.returncode != 0 or not person.auth.is_file():
        pytest.fail(f"codex login --with-api-key failed ({done.returncode}): "
                    f"{done.stderr.strip()[-500:]}", pytrace=False)
    return person


def switchboard_home(root: Path) -> Home:
    """Switchboard in the default XDG layout of the person ``root/sb``: state and
    config in separate XDG dirs, no SWITCHBOARD_HOME anywhere."""
    from tests.realcli.harness import xdg_home

    return xdg_home(root / "sb")


def make_codex_engine(root: Path, socket: Path, clis: RealClis) -> Engine:
    """A Switchboard home whose Codex is the real binary (Claude stays the fake)."""
    home = switchboard_home(root)
    template = project_config(root / "src")
    providers = {p: ProviderConfig(command=fake_provider_command(p.value)) for p in Provider}
    providers[Provider.CODEX] = ProviderConfig(command=(str(clis.codex),))
    template = replace(template, providers=providers,
                       tmux=TmuxConfig(socket_path=str(socket)))
    init_registry(home, template=template)
    return open_engine(home, with_stage=True)


def reopen_engine(root: Path) -> Engine:
    return open_engine(switchboard_home(root), with_stage=True)


def screen(socket: Path, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-t", pane)


def type_prompt(socket: Path, pane: str, text: str) -> None:
    """Type like a person: the text, a pause, Enter.

    Codex treats keys that arrive in one burst as a paste, where Enter is a
    newline, so the Enter comes once the text shows and a moment has passed.
    """
    tmux(socket, "send-keys", "-t", pane, "-l", text)
    fail_unless(lambda: text in screen(socket, pane), 15,
                lambda: f"{text!r} never showed in the composer:\n{screen(socket, pane)}")
    time.sleep(0.6)
    tmux(socket, "send-keys", "-t", pane, "Enter")


def press(socket: Path, pane: str, *keys: str) -> None:
    tmux(socket, "send-keys", "-t", pane, *keys)
