"""check_provider: the configured provider's version, probed once, failing closed.

Crafted executables stand in for `claude` / `codex`: a good line (with stderr
noise), garbage, a hang, an old version, a missing binary, a disabled
provider. The version is kept as telemetry on the session by a named op.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.config.config import Config, ProviderConfig, default_config
from core.context.requests import new_request_id
from core.model.enums import Provider
from core.model.errors import Conflict, ProviderError
from core.providers import version as version_mod
from core.providers.checks import check_provider, clear_provider_cache
from storage.connection import write_transaction
from storage.operations import sessions as sessions_ops
from tests.core.engines import fresh_engine
from tests.factories import HOST_ID
from tests.integration.journey_env import fake_provider_command


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    clear_provider_cache()
    yield
    clear_provider_cache()


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts real `--version` runs."""
    calls: list[str] = []
    real = version_mod.probe_version

    def counting(provider, command=None, **kwargs):
        calls.append(str(provider))
        return real(provider, command, **kwargs)

    monkeypatch.setattr(version_mod, "probe_version", counting)
    return calls


def config_with(provider: Provider, command: tuple[str, ...], *, enabled: bool = True,
                timeout: float = 5.0) -> Config:
    base = default_config(generation_id="", host_id=HOST_ID, display_name="test-host")
    providers = dict(base.providers)
    providers[provider] = ProviderConfig(command=command, enabled=enabled,
                                         version_timeout_seconds=timeout)
    return replace(base, providers=providers)


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_fake_provider_versions_are_probed_once(probes: list[str]) -> None:
    for provider, expected in ((Provider.CLAUDE, (2, 1, 197)), (Provider.CODEX, (0, 171, 0))):
        config = config_with(provider, fake_provider_command(provider.value))
        found = check_provider(config, provider)
        assert found.provider is provider and found.version == expected
        assert check_provider(config, provider.value) is found  # cached, str accepted
    assert probes == ["claude", "codex"]


def test_stderr_noise_is_ignored(tmp_path: Path) -> None:
    exe = script(tmp_path / "claude",
                 "echo 'update available!' >&2\necho '2.3.0-beta.1 (Claude Code)'")
    found = check_provider(config_with(Provider.CLAUDE, (str(exe),)), Provider.CLAUDE)
    assert found.text == "2.3.0-beta.1"


@pytest.mark.parametrize("body, code", [
    ("echo 'Claude Code, probably'", "provider_version_malformed"),
    ("echo '2.1.197 (Claude Code)'; echo 'extra'", "provider_version_malformed"),
    ("printf '\\377\\376'", "provider_version_malformed"),
    ("echo '1.9.0 (Claude Code)'", "provider_version_unsupported"),
    ("exit 3", "provider_version_failed"),
    ("sleep 5", "provider_version_timeout"),
])
def test_bad_version_output_fails_closed_and_is_not_cached(
        tmp_path: Path, probes: list[str], body: str, code: str) -> None:
    exe = script(tmp_path / "claude", body)
    config = config_with(Provider.CLAUDE, (str(exe),), timeout=0.3)
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            check_provider(config, Provider.CLAUDE)
        assert caught.value.code == code
    assert len(probes) == 2  # a failure is asked again, never remembered


def test_missing_executable_then_installed(tmp_path: Path) -> None:
    path = tmp_path / "codex"
    config = config_with(Provider.CODEX, (str(path),))
    with pytest.raises(ProviderError) as caught:
        check_provider(config, Provider.CODEX)
    assert caught.value.code == "provider_missing"
    script(path, "echo 'codex-cli 0.172.3'")
    assert check_provider(config, Provider.CODEX).version == (0, 172, 3)


def test_missing_from_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ProviderError) as caught:
        check_provider(config_with(Provider.CLAUDE, ("claude",)), Provider.CLAUDE)
    assert caught.value.code == "provider_missing"


def test_disabled_provider_is_refused_without_probing(probes: list[str]) -> None:
    config = config_with(Provider.CODEX, (sys.executable,), enabled=False)
    with pytest.raises(ProviderError) as caught:
        check_provider(config, Provider.CODEX)
    assert caught.value.code == "provider_disabled"
    assert probes == []


def test_a_replaced_executable_is_probed_again(tmp_path: Path, probes: list[str]) -> None:
    exe = script(tmp_path / "claude", "echo '2.1.200 (Claude Code)'")
    config = config_with(Provider.CLAUDE, (str(exe),))
    assert check_provider(config, Provider.CLAUDE).text == "2.1.200"
    assert check_provider(config, Provider.CLAUDE).text == "2.1.200"
    script(exe, "echo '2.10.0 (Claude Code)'   # upgraded")
    assert check_provider(config, Provider.CLAUDE).text == "2.10.0"
    assert len(probes) == 2


# ------------------------------------------------------------------ telemetry op


def test_version_is_kept_on_the_session_without_touching_evidence(tmp_path: Path) -> None:
    engine = fresh_engine(tmp_path / "home")
    try:
        route = engine.project_enter(new_request_id(), "alpha")
        key = engine.frame_start(new_request_id(), route.frame_id).session_key
        found = check_provider(config_with(Provider.CLAUDE,
                                           fake_provider_command("claude")), Provider.CLAUDE)
        before = engine.conn.execute("SELECT last_observed_at, activity FROM provider_sessions"
                                     " WHERE session_key = ?", (key,)).fetchone()
        engine.clock.advance(5_000)
        with write_transaction(engine.conn) as conn:
            sessions_ops.record_provider_version(conn, key, found.text, engine.now())
        row = engine.conn.execute(
            "SELECT provider_version, last_observed_at, activity, updated_at"
            " FROM provider_sessions WHERE session_key = ?", (key,)).fetchone()
        assert tuple(row) == ("2.1.197", before[0], before[1], engine.now())
        with pytest.raises(Conflict), write_transaction(engine.conn) as conn:
            sessions_ops.record_provider_version(conn, "no-such-key", "1.0.0", engine.now())
    finally:
        engine.conn.close()
