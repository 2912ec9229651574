"""`switchboard doctor` on a real home: healthy, then a broken broker file named with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from navigator.cli import main
from tests.integration.journey_env import make_live_engine


def test_doctor_healthy_then_names_a_broken_broker(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    make_live_engine(tmp_path, tmux_socket).conn.close()
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0, out
    parts = [line.split(":")[0].split(None, 1)[1] for line in out.splitlines()
             if not line.startswith(("verdict", "      do:"))]
    assert parts == ["switchboard", "registry", "broker", "session files", "tmux",
                     "provider codex", "provider claude", "provider gemini",
                     "provider opencode", "hooks"]
    assert out.splitlines()[-1] == "verdict: healthy"
    assert "no broker file yet" in out

    broken = tmp_path / "broker.sqlite3"
    broken.write_bytes(b"not a database at all, just some bytes" * 100)
    before = broken.read_bytes()
    code = main(["doctor", "--json"])
    findings = {f["part"]: f for f in json.loads(capsys.readouterr().out)}
    assert code == 1
    assert findings["broker"]["verdict"] == "fail"
    assert "move the file aside" in findings["broker"]["fix"]
    assert findings["registry"]["verdict"] == "ok"
    assert broken.read_bytes() == before  # doctor changes nothing


def _doctor_json(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict]]:
    code = main(["doctor", "--json"])
    return code, {f["part"]: f for f in json.loads(capsys.readouterr().out)}


def test_doctor_says_where_each_cli_stands_and_what_changed(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A tested release is ok with its drift verdict; a newer one is called untested and
    still runs; one whose help lacks an option Switchboard passes cannot work."""
    from dataclasses import replace

    from core.config.config import ProviderConfig
    from core.model.enums import Provider
    from tests.integration.journey_env import fake_provider_command

    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    newer = (*fake_provider_command("claude"), "--fake-version", "2.1.400")
    engine = make_live_engine(tmp_path, tmux_socket)
    engine.conn.close()
    code, findings = _doctor_json(capsys)
    assert code == 0
    codex = findings["provider codex"]
    assert codex["verdict"] == "ok"
    assert codex["detail"].startswith("0.171.0 (tested); every option Switchboard passes is"
                                      " there; since 0.171.0 (newest tested): ")

    # a newer Claude Code than the window: untested, it starts, doctor warns
    from core.config.config import load_config, render_config

    home_config = tmp_path / "config.toml"
    config = load_config(home_config)
    providers = dict(config.providers)
    providers[Provider.CLAUDE] = replace(providers[Provider.CLAUDE], command=newer)
    home_config.write_text(render_config(replace(config, providers=providers)))
    code, findings = _doctor_json(capsys)
    claude = findings["provider claude"]
    assert code == 0 and claude["verdict"] == "warn", claude
    assert "2.1.400 is newer than the tested window 2.1.197..2.1.332" in claude["detail"]
    assert "untested, it starts" in claude["detail"] and "since 2.1.332" in claude["detail"]

    # a CLI whose own help lacks --settings cannot start Switchboard's agents
    cli = tmp_path / "claude-without-settings"
    cli.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)';"
                   " exit 0; fi\necho 'Options:'\necho '  --session-id <uuid>'\n"
                   "echo '  -r, --resume [value]'\necho '  --mcp-config <configs...>'\n")
    cli.chmod(0o755)
    providers[Provider.CLAUDE] = ProviderConfig(command=(str(cli),))
    home_config.write_text(render_config(replace(config, providers=providers)))
    code, findings = _doctor_json(capsys)
    claude = findings["provider claude"]
    assert code == 1 and claude["verdict"] == "fail", claude
    assert "it lacks --settings, which Switchboard passes at launch" in claude["detail"]
