"""Shell completion: the generated scripts run in the real shells against a real registry.

bash is driven through what `complete` registered (the function named by
`complete -p switchboard`, with COMP_WORDS/COMP_CWORD as readline sets them);
fish through its own `complete -C LINE`; zsh's function with its completion
builtins (`compadd`, `_describe`) replaced by printers, since they exist only
inside a completion widget. Names come from `switchboard completion --names`,
run by the script itself from PATH, reading the registry made here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.home import Home
from core.state.names import NameKind, registry_names
from tests.factories import make_engine

PROVIDERS = ("claude", "codex", "gemini", "opencode")
"""Every provider, as a completion offers them (issue 41 added the last two)."""
BIN = Path(sys.executable).parent  # holds the `switchboard` entry point of this install


@dataclass(frozen=True)
class Registry:
    home: Path
    view_id: str
    workspace_id: str
    task_id: str


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    home = tmp_path_factory.mktemp("completion") / "home"
    engine = make_engine(home)
    entered = engine.project_enter("20000000-0000-4000-8000-000000000001", "alpha")
    pushed = engine.frame_push("20000000-0000-4000-8000-000000000002", entered.frame_id,
                               "Write the parser", "a brief")
    engine.conn.close()
    return Registry(home, entered.view_id, entered.frame_id, pushed.target_frame_id)


def _env(registry: Registry) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(SWITCHBOARD_HOME=str(registry.home),
               SWITCHBOARD_CONFIG=str(registry.home / "config.toml"),
               PATH=os.pathsep.join([str(BIN), "/usr/bin", "/bin"]))
    return env


def _script(shell: str, registry: Registry, tmp_path: Path) -> Path:
    done = subprocess.run([str(BIN / "switchboard"), "completion", shell], env=_env(registry),
                          capture_output=True, text=True, timeout=60, check=True)
    path = tmp_path / f"switchboard.{shell}"
    path.write_text(done.stdout, encoding="utf-8")
    return path


def _shell(name: str) -> str:
    found = shutil.which(name)
    assert found is not None, f"{name} is not installed: `make setup` installs bash, zsh and fish"
    return found


BASH_DRIVER = r"""
source "$1"; shift
spec=$(complete -p switchboard) || exit 3
fn=${spec#*-F }; fn=${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" switchboard "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
(( ${#COMPREPLY[@]} == 0 )) || printf '%s\n' "${COMPREPLY[@]}"
"""


def _bash(script: Path, registry: Registry, *words: str) -> list[str]:
    done = subprocess.run([_shell("bash"), "--norc", "--noprofile", "-c", BASH_DRIVER, "bash",
                           str(script), "switchboard", *words], env=_env(registry),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.splitlines()


def test_bash_completes_commands_options_and_registry_names(
        registry: Registry, tmp_path: Path) -> None:
    script = _script("bash", registry, tmp_path)
    assert "completion" in _bash(script, registry, "")
    assert _bash(script, registry, "fr") == ["frame"]
    assert set(_bash(script, registry, "frame", "")) >= {"list", "show", "start", "push"}
    assert _bash(script, registry, "frame", "start", "x", "--provider", "") == list(PROVIDERS)
    # every option that names a provider offers all four (issue 41), and a prefix narrows
    for words in (("project", "add", "x", "--provider"), ("frame", "push", "x", "--provider"),
                  ("agent", "task-push", "--provider")):
        assert _bash(script, registry, *words, "") == list(PROVIDERS), words
    assert sorted(_bash(script, registry, "frame", "switch-provider", "x", "--to", "")) == \
        list(PROVIDERS)
    assert _bash(script, registry, "frame", "start", "x", "--provider", "ge") == ["gemini"]
    assert _bash(script, registry, "project", "add", "x", "--provider", "o") == ["opencode"]
    assert _bash(script, registry, "doctor", "--") == ["--help", "--json"]
    # a project name where a project goes, as a positional and as an option's value
    assert _bash(script, registry, "open", "") == ["alpha", "beta"]
    assert _bash(script, registry, "frame", "list", "--json", "--project", "al") == ["alpha"]
    # `--project=al`: readline splits the word at `=`
    assert _bash(script, registry, "frame", "list", "--project", "=", "al") == ["alpha"]
    # a frame's name (its title) where a member goes, quoted for the command line
    assert _bash(script, registry, "member", "capture", "Wr") == ["Write\\ the\\ parser"]
    members = _bash(script, registry, "message", "send", "--to", "")
    assert {"Write\\ the\\ parser", "alpha", "person", "parent"} <= set(members)
    # frame and view names where frames and views go (issue 40): `view focus VIEW FRAME`,
    # a view by its project's name, a frame by its title
    assert _bash(script, registry, "view", "focus", "") == ["alpha"]
    assert set(_bash(script, registry, "view", "focus", "alpha", "")) == {
        "alpha", "Write\\ the\\ parser"}
    assert _bash(script, registry, "frame", "show", "Wr") == ["Write\\ the\\ parser"]
    # free text is never completed with names
    assert _bash(script, registry, "frame", "push", registry.task_id, "--title", "") == []


def test_fish_completes_through_its_own_complete(registry: Registry, tmp_path: Path) -> None:
    script = _script("fish", registry, tmp_path)

    def fish(line: str) -> list[str]:
        done = subprocess.run([_shell("fish"), "--no-config", "-c",
                               f"source {script}; complete -C {line!r}"], env=_env(registry),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and not done.stderr, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert {"frame", "completion", "doctor"} <= set(fish("switchboard "))
    assert fish("switchboard member capture Wr") == ["Write the parser"]
    assert fish("switchboard frame diff Wr") == ["Write the parser"]  # a frame by its title
    assert fish("switchboard frame list --project ") == ["alpha", "beta"]
    assert fish("switchboard completion ") == ["bash", "fish", "zsh"]
    assert fish("switchboard frame start x --provider ") == list(PROVIDERS)
    assert sorted(fish("switchboard frame switch-provider x --to ")) == list(PROVIDERS)
    assert "--json" in fish("switchboard doctor -")


def test_zsh_function_offers_names_with_descriptions(registry: Registry, tmp_path: Path) -> None:
    script = _script("zsh", registry, tmp_path)
    driver = ('compadd() { print -rl -- "${@:#--}" }; _describe() { print -rl -- "${(@P)4}" }; '
              'compdef() { print "compdef $*" }; source "$1"; shift; '
              'words=(switchboard "$@"); CURRENT=${#words}; _switchboard')

    def zsh(*words: str) -> list[str]:
        done = subprocess.run([_shell("zsh"), "-f", "-c", driver, "zsh", str(script), *words],
                              env=_env(registry), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and not done.stderr, done.stderr
        return done.stdout.splitlines()

    assert zsh("")[0] == "compdef _switchboard switchboard"  # sourcing registers it
    assert zsh("member", "capture", "")[1:3] == ["Write the parser:frame in alpha",
                                                  "alpha:frame in alpha"]
    assert zsh("frame", "list", "--project", "")[1:] == [
        f"alpha:project at {registry.home / 'src' / 'alpha'}",
        f"beta:project at {registry.home / 'src' / 'beta'}"]
    assert zsh("completion", "")[1:] == ["bash", "zsh", "fish"]
    assert zsh("project", "add", "x", "--provider", "")[1:] == list(PROVIDERS)


def test_names_are_read_only_fast_and_silent_without_a_home(
        registry: Registry, tmp_path: Path) -> None:
    registry_file = next((registry.home / "state").glob("*/registry.sqlite3"))
    before = registry_file.stat().st_mtime_ns
    start = time.monotonic()
    done = subprocess.run([str(BIN / "switchboard"), "completion", "--names", "frames"],
                          env=_env(registry), capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    assert (f"Write the parser\talpha task, open, {registry.task_id[:8]}"
            in done.stdout.splitlines())
    assert registry_file.stat().st_mtime_ns == before
    assert elapsed < 2.0, f"a TAB waited {elapsed:.2f} s for names"
    nowhere = {**_env(registry), "SWITCHBOARD_HOME": str(tmp_path / "none"),
               "SWITCHBOARD_CONFIG": str(tmp_path / "none" / "config.toml")}
    empty = subprocess.run([str(BIN / "switchboard"), "completion", "--names", "projects"],
                           env=nowhere, capture_output=True, text=True, timeout=60)
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")


def test_a_title_with_a_control_character_is_never_offered(tmp_path: Path) -> None:
    engine = make_engine(tmp_path / "home")
    entered = engine.project_enter("20000000-0000-4000-8000-000000000001", "alpha")
    # a row from before titles were checked: written past the engine's rule
    engine.conn.execute("UPDATE frames SET title = ? WHERE frame_id = ?",
                        ("evil\x1b]0;owned\x07", entered.frame_id))
    engine.conn.commit()
    engine.conn.close()
    home = Home(tmp_path / "home", tmp_path / "home" / "config.toml")
    members = [entry.value for entry in registry_names(home, NameKind.MEMBER)]
    assert members == ["person", "parent", "workspace"]
    (frame,) = registry_names(home, NameKind.FRAME)
    assert frame.value == entered.frame_id and "\\x1b" in frame.description
