"""Hook installation: idempotent install, exact restore, user edits detected."""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from pathlib import Path

import pytest

from core.install.hooks_install import HookStatus, HookTarget, install, status, uninstall
from core.model.enums import Provider
from core.model.errors import Conflict, ProviderError
from core.providers.codex_config import render_codex_config
from core.providers.hook_files import hook_argv
from core.providers.hooks import CLAUDE_HOOK_EVENTS, CODEX_HOOK_EVENTS
from navigator.cli import main

COMMAND = ("/opt/sb/bin/switchboard", "hook")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "sbhome" / "hooks"


def commands_by_event(document: dict) -> dict[str, list[list[str]]]:
    return {
        event: [shlex.split(hook["command"]) for group in groups for hook in group["hooks"]]
        for event, groups in document["hooks"].items()
    }


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mode & 0o7777)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_claude_settings_file_created_and_removed(tmp_path, state_dir):
    settings = tmp_path / "run" / "launch-1" / "settings.json"
    target = HookTarget.claude_settings(settings)
    assert status(target, state_dir=state_dir).status is HookStatus.NOT_INSTALLED

    first = install(target, COMMAND, state_dir=state_dir)
    assert first.status is HookStatus.INSTALLED and first.changed
    document = json.loads(settings.read_text())
    assert commands_by_event(document) == {
        event: [hook_argv(COMMAND, Provider.CLAUDE, event)] for event in CLAUDE_HOOK_EVENTS
    }
    assert set(CLAUDE_HOOK_EVENTS) == {
        "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
        "PermissionRequest", "PermissionDenied", "Notification", "Stop", "StopFailure",
        "SessionStart", "SessionEnd", "SubagentStart", "SubagentStop",
    }

    written = settings.read_bytes()
    stamp = settings.stat().st_mtime_ns
    again = install(target, COMMAND, state_dir=state_dir)
    assert again.status is HookStatus.INSTALLED and not again.changed
    assert settings.read_bytes() == written and settings.stat().st_mtime_ns == stamp
    assert status(target, state_dir=state_dir).status is HookStatus.INSTALLED

    gone = uninstall(target, state_dir=state_dir)
    assert gone.status is HookStatus.NOT_INSTALLED and gone.changed
    assert not settings.exists()
    assert not (tmp_path / "run").exists()  # directories we created are removed too
    assert status(target, state_dir=state_dir).status is HookStatus.NOT_INSTALLED
    assert not uninstall(target, state_dir=state_dir).changed


def test_existing_claude_settings_restored_byte_identical(tmp_path, state_dir):
    settings = tmp_path / "my-settings.json"
    original = (
        b'{ "model":"opus",\r\n  "hooks": {"Stop": [{"hooks": [{"type": "command", '
        b'"command": "notify-send done"}]}]}  }\n\n'
    )
    settings.write_bytes(original)
    settings.chmod(0o640)
    target = HookTarget.claude_settings(settings)

    install(target, COMMAND, state_dir=state_dir)
    document = json.loads(settings.read_text())
    assert document["model"] == "opus"
    assert commands_by_event(document)["Stop"] == [
        ["notify-send", "done"], hook_argv(COMMAND, Provider.CLAUDE, "Stop"),
    ]
    assert settings.stat().st_mode & 0o7777 == 0o640

    uninstall(target, state_dir=state_dir)
    assert settings.read_bytes() == original
    assert settings.stat().st_mode & 0o7777 == 0o640


def test_codex_project_restored_byte_identical(tmp_path, state_dir):
    project = tmp_path / "proj"
    codex_dir = project / ".codex"
    codex_dir.mkdir(parents=True)
    original_config = (
        b'# my codex config\nmodel = "gpt-x"  # inline comment\n\n[profiles.fast]\n'
        b'model = "mini"\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    )
    (codex_dir / "config.toml").write_bytes(original_config)
    (codex_dir / "config.toml").chmod(0o600)
    before = snapshot(project)
    target = HookTarget.codex_project(project)
    assert target.location == codex_dir

    outcome = install(target, COMMAND, state_dir=state_dir)
    assert outcome.status is HookStatus.INSTALLED
    config = tomllib.loads((codex_dir / "config.toml").read_text())
    assert config["notify"] == hook_argv(COMMAND, Provider.CODEX, "notify")
    assert config["model"] == "gpt-x" and config["profiles"]["fast"]["model"] == "mini"
    hooks = json.loads((codex_dir / "hooks.json").read_text())
    assert commands_by_event(hooks) == {
        event: [hook_argv(COMMAND, Provider.CODEX, event)] for event in CODEX_HOOK_EVENTS
    }
    assert not install(target, COMMAND, state_dir=state_dir).changed

    uninstall(target, state_dir=state_dir)
    assert snapshot(project) == before
    assert codex_dir.is_dir()


def test_codex_home_created_from_nothing_is_removed(tmp_path, state_dir):
    home = tmp_path / "codex-home" / "launch-7"
    target = HookTarget.codex_home(home)
    install(target, COMMAND, state_dir=state_dir)
    assert (home / "hooks.json").is_file() and (home / "config.toml").is_file()
    config = tomllib.loads((home / "config.toml").read_text())
    assert config == {"notify": hook_argv(COMMAND, Provider.CODEX, "notify")}
    uninstall(target, state_dir=state_dir)
    assert not (tmp_path / "codex-home").exists()


def test_directories_holding_other_files_are_kept(tmp_path, state_dir):
    project = tmp_path / "proj"
    project.mkdir()
    target = HookTarget.codex_project(project)
    install(target, COMMAND, state_dir=state_dir)
    (project / ".codex" / "notes.md").write_text("mine")
    uninstall(target, state_dir=state_dir)
    assert (project / ".codex" / "notes.md").read_text() == "mine"
    assert sorted(p.name for p in (project / ".codex").iterdir()) == ["notes.md"]


def test_changed_hook_command_rerenders_from_the_originals(tmp_path, state_dir):
    settings = tmp_path / "s.json"
    settings.write_bytes(b'{"theme": "dark"}')
    target = HookTarget.claude_settings(settings)
    install(target, COMMAND, state_dir=state_dir)
    moved = install(target, ("/new/switchboard", "hook"), state_dir=state_dir)
    assert moved.changed and moved.hook_command == ("/new/switchboard", "hook")
    stops = commands_by_event(json.loads(settings.read_text()))["Stop"]
    assert stops == [["/new/switchboard", "hook", "--provider", "claude", "Stop"]]
    uninstall(target, state_dir=state_dir)
    assert settings.read_bytes() == b'{"theme": "dark"}'


def test_user_edits_are_detected_and_never_overwritten_silently(tmp_path, state_dir):
    settings = tmp_path / "s.json"
    settings.write_bytes(b"{}")
    target = HookTarget.claude_settings(settings)
    install(target, COMMAND, state_dir=state_dir)
    settings.write_text(settings.read_text().replace("Stop", "Stop2"))
    edited = settings.read_bytes()

    seen = status(target, state_dir=state_dir)
    assert seen.status is HookStatus.MODIFIED and seen.modified_files == (str(settings),)
    with pytest.raises(Conflict) as caught:
        install(target, COMMAND, state_dir=state_dir)
    assert caught.value.code == "hooks_modified"
    with pytest.raises(Conflict):
        uninstall(target, state_dir=state_dir)
    assert settings.read_bytes() == edited

    forced = uninstall(target, state_dir=state_dir, force=True)
    assert forced.status is HookStatus.NOT_INSTALLED and forced.modified_files
    assert settings.read_bytes() == b"{}"


def test_deleted_file_counts_as_modified(tmp_path, state_dir):
    target = HookTarget.codex_home(tmp_path / "ch")
    install(target, COMMAND, state_dir=state_dir)
    (tmp_path / "ch" / "hooks.json").unlink()
    assert status(target, state_dir=state_dir).status is HookStatus.MODIFIED
    uninstall(target, state_dir=state_dir, force=True)
    assert not (tmp_path / "ch").exists()


@pytest.mark.parametrize(
    ("config", "code"),
    [
        (b'notify = ["terminal-notifier"]\n', "hooks_conflict"),
        (b"this is = not toml [\n", "hooks_existing_invalid"),
        (b"\xef\xbb\xbfmodel = 'x'\n", "hooks_existing_invalid"),
    ],
)
def test_codex_config_we_cannot_extend_is_left_alone(tmp_path, state_dir, config, code):
    home = tmp_path / "ch"
    home.mkdir()
    (home / "config.toml").write_bytes(config)
    before = snapshot(home)
    with pytest.raises(ProviderError) as caught:
        install(HookTarget.codex_home(home), COMMAND, state_dir=state_dir)
    assert caught.value.code == code
    assert snapshot(home) == before
    assert status(HookTarget.codex_home(home), state_dir=state_dir).status is (
        HookStatus.NOT_INSTALLED
    )


@pytest.mark.parametrize(
    "body", [b"{not json", b"[1]", b'{"hooks": []}', b'{"hooks": {"Stop": {}}}', b"\xff"]
)
def test_claude_settings_we_cannot_extend_are_left_alone(tmp_path, state_dir, body):
    settings = tmp_path / "s.json"
    settings.write_bytes(body)
    with pytest.raises(ProviderError) as caught:
        install(HookTarget.claude_settings(settings), COMMAND, state_dir=state_dir)
    assert caught.value.code == "hooks_existing_invalid"
    assert settings.read_bytes() == body


def test_symlinked_target_is_refused(tmp_path, state_dir):
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ProviderError):
        install(HookTarget.claude_settings(link), COMMAND, state_dir=state_dir)
    assert link.is_symlink() and real.read_text() == "{}"


def test_awkward_hook_commands_round_trip():
    command = ('/opt/my "sb"/bin\\switchboard', "hook", "ünï", "a\tb", "\x7f")
    config = tomllib.loads(render_codex_config(command).decode())
    assert config["notify"] == hook_argv(command, Provider.CODEX, "notify")
    with pytest.raises(ProviderError):
        render_codex_config(("sb\nrm -rf /",))
    with pytest.raises(ProviderError):
        render_codex_config(())


# --- CLI -------------------------------------------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli_claude_round_trip(sb_home, capsys):
    code, out = run_cli(capsys, "hooks", "status", "--provider", "claude", "--json")
    assert code == 1 and json.loads(out)["status"] == "not_installed"

    code, out = run_cli(capsys, "hooks", "install", "--provider", "claude", "--json",
                        "--hook-command", "sb hook")
    result = json.loads(out)
    assert code == 0 and result["status"] == "installed" and result["changed"] is True
    settings = Path(result["location"])
    assert settings == sb_home / "run" / "claude-hooks.settings.json"
    assert commands_by_event(json.loads(settings.read_text()))["SessionEnd"] == [
        ["sb", "hook", "--provider", "claude", "SessionEnd"]
    ]
    code, out = run_cli(capsys, "hooks", "install", "--provider", "claude", "--json",
                        "--hook-command", "sb hook")
    assert json.loads(out)["changed"] is False

    code, out = run_cli(capsys, "hooks", "status", "--provider", "claude")
    assert code == 0 and "installed" in out
    code, out = run_cli(capsys, "hooks", "uninstall", "--provider", "claude", "--json")
    assert code == 0 and json.loads(out)["status"] == "not_installed"
    assert not settings.exists()


def test_cli_codex_project_defaults_to_cwd(sb_home, tmp_path, monkeypatch, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    code, out = run_cli(capsys, "hooks", "install", "--provider", "codex")
    assert code == 0 and str(project / ".codex") in out
    assert (project / ".codex" / "hooks.json").is_file()
    notify = tomllib.loads((project / ".codex" / "config.toml").read_text())["notify"]
    assert notify[-3:] == ["--provider", "codex", "notify"]
    assert os.access(notify[0], os.X_OK) or notify[1:3] == ["-m", "navigator.cli"]
    code, _ = run_cli(capsys, "hooks", "uninstall", "--provider", "codex", "--project", ".")
    assert code == 0 and not (project / ".codex").exists()


def test_cli_modified_files_refused_with_exit_2(sb_home, tmp_path, capsys):
    home = tmp_path / "ch"
    code, _ = run_cli(capsys, "hooks", "install", "--provider", "codex", "--codex-home", str(home))
    assert code == 0
    (home / "hooks.json").write_text("{}")
    code, out = run_cli(capsys, "hooks", "status", "--provider", "codex", "--codex-home",
                        str(home), "--json")
    assert code == 1 and json.loads(out)["status"] == "modified_by_user"
    assert main(["hooks", "uninstall", "--provider", "codex", "--codex-home", str(home)]) == 2
    assert "hooks_modified" in capsys.readouterr().err
    assert main(["hooks", "uninstall", "--provider", "codex", "--codex-home", str(home),
                 "--force"]) == 0
    assert not home.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["hooks", "install", "--provider", "claude", "--codex-home", "/tmp/x"],
        ["hooks", "install", "--provider", "codex", "--settings", "/tmp/x.json"],
        ["hooks", "install", "--provider", "claude", "--hook-command", "  "],
    ],
)
def test_cli_refuses_mismatched_options(sb_home, capsys, argv):
    assert main(argv) == 2
    assert "config_invalid" in capsys.readouterr().err
