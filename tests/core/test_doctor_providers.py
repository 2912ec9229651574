"""`switchboard doctor` checks the providers something here runs (issue 31.8): a person
who only uses Claude gets no failure for a Codex that is not installed, only a
warning that says when it would be needed; a project that runs Codex still fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import ProviderConfig
from core.model.enums import Provider
from core.providers.checks import clear_provider_cache
from navigator.cli import main
from tests.integration.journey_env import fake_provider_command, make_live_engine

MISSING = ("/nonexistent/switchboard-test-codex",)


def _doctor(tmp_path: Path, socket: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str], codex_project: bool) -> list[str]:
    providers = {Provider.CLAUDE: ProviderConfig(command=fake_provider_command("claude")),
                 Provider.CODEX: ProviderConfig(command=MISSING)}
    engine = make_live_engine(tmp_path, socket, providers=providers)
    if codex_project:  # the same registry, its one project now runs Codex
        from core.config.config import load_config, render_config

        config = load_config(engine.home.config_path)
        projects = tuple(replace(p, preferred_provider=Provider.CODEX)
                         for p in config.projects)
        engine.home.config_path.write_text(render_config(replace(config, projects=projects)))
    engine.conn.close()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    clear_provider_cache()
    main(["doctor"])
    return capsys.readouterr().out.splitlines()


def test_a_codex_nobody_runs_is_a_warning(tmp_path: Path, tmux_socket: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    lines = _doctor(tmp_path, tmux_socket, monkeypatch, capsys, codex_project=False)
    codex = [line for line in lines if "provider codex" in line]
    assert codex and codex[0].startswith("warn  provider codex:"), lines
    assert "no project runs codex" in codex[0]


def test_a_codex_a_project_runs_still_fails(tmp_path: Path, tmux_socket: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    lines = _doctor(tmp_path, tmux_socket, monkeypatch, capsys, codex_project=True)
    codex = [line for line in lines if "provider codex" in line]
    assert codex and codex[0].startswith("fail  provider codex:"), lines


def test_an_enabled_gemini_is_checked_and_its_blind_spots_said(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Gemini (the fake as Gemini CLI 0.61.0): its version and help are checked like the
    others', and doctor names what it sends no event for (issue 41); OpenCode, off by
    default and run by nobody, is only said to be off."""
    providers = {Provider.CLAUDE: ProviderConfig(command=fake_provider_command("claude")),
                 Provider.CODEX: ProviderConfig(command=fake_provider_command("codex")),
                 Provider.GEMINI: ProviderConfig(command=fake_provider_command("gemini"))}
    engine = make_live_engine(tmp_path, tmux_socket, providers=providers)
    engine.conn.close()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))
    clear_provider_cache()
    main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    [gemini] = [line for line in lines if "provider gemini" in line]
    assert gemini.startswith("ok    provider gemini: 0.61.0 (tested)"), lines
    assert "every option Switchboard passes is there" in gemini
    assert "no event for its start-up folder-trust question" in gemini
    [opencode] = [line for line in lines if "provider opencode" in line]
    assert opencode.startswith("ok    provider opencode: off"), lines


def test_doctor_places_gemini_and_opencode_in_their_tested_windows(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Both new providers turned on (issue 41): each line names the installed version
    against its tested window and what the CLI sends no event for (the activity shows
    unknown there). A newer Gemini CLI than the window starts, flagged untested; one
    below the floor fails with the npm package to upgrade."""
    from core.config.config import load_config, render_config

    def run_doctor(gemini: tuple[str, ...]) -> dict[str, str]:
        providers = {p: ProviderConfig(command=fake_provider_command(p.value)) for p in
                     (Provider.CLAUDE, Provider.CODEX, Provider.OPENCODE)}
        providers[Provider.GEMINI] = ProviderConfig(command=gemini)
        config = load_config(tmp_path / "config.toml")
        (tmp_path / "config.toml").write_text(
            render_config(replace(config, providers=providers)))
        clear_provider_cache()
        main(["doctor"])
        lines = capsys.readouterr().out.splitlines()
        return {name: next(line for line in lines if f"provider {name}:" in line)
                for name in ("gemini", "opencode")}

    make_live_engine(tmp_path, tmux_socket).conn.close()
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_CONFIG", str(tmp_path / "config.toml"))

    found = run_doctor(fake_provider_command("gemini"))
    assert found["opencode"].startswith("ok    provider opencode: 1.18.33 (tested)"), found
    assert "no event for its process ending and a turn the service refused" in \
        found["opencode"]
    assert "the activity shows unknown there" in found["opencode"]
    assert "no usage limit is shown for it: OpenCode 1.18.33 records none" in found["opencode"]
    assert "no usage limit is shown for it: Gemini CLI 0.61.0 records none" in found["gemini"]
    assert found["gemini"].startswith("ok    provider gemini: 0.61.0 (tested)"), found
    assert "a whole session in a folder untrusted when it started" in found["gemini"]

    newer = run_doctor((*fake_provider_command("gemini"), "--fake-version", "0.62.0"))
    assert newer["gemini"].startswith("warn  provider gemini: 0.62.0 is newer than the tested"
                                      " window 0.61.0 (as of 2026-12-06): untested, it starts"
                                      ), newer
    assert "no event for its start-up folder-trust question" in newer["gemini"]

    older = run_doctor((*fake_provider_command("gemini"), "--fake-version", "0.60.0"))
    assert older["gemini"].startswith("warn  provider gemini:"), older  # nobody runs it
    assert "0.60.0" in older["gemini"] and "no project runs gemini" in older["gemini"]
