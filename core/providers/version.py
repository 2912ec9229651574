"""Probe ``<provider> --version`` as strict input, with a timeout.

Version output is telemetry and a contract gate, not an allowlist: any version
at or above its provider's floor (:mod:`core.providers.window`) is accepted, and
where it stands against the tested window (tested, inside, newer, older) is
said, not enforced; anything we cannot parse exactly fails closed, because a
provider we cannot identify is a provider whose hook payloads we cannot trust.
Only stdout is read; stderr is discarded (update notices, warnings).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.model.enums import Provider
from core.model.errors import ProviderError
from core.providers.window import TESTED, WindowPlace, dotted

DEFAULT_TIMEOUT_S = 5.0
MAX_VERSION_OUTPUT = 4096

DEFAULT_EXECUTABLES: dict[Provider, str] = {Provider.CLAUDE: "claude", Provider.CODEX: "codex",
                                            Provider.GEMINI: "gemini",
                                            Provider.OPENCODE: "opencode"}

_SEMVER = r"(?P<major>0|[1-9]\d{0,5})\.(?P<minor>0|[1-9]\d{0,5})\.(?P<patch>0|[1-9]\d{0,5})" \
    r"(?P<pre>-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?"
_PATTERNS: dict[Provider, re.Pattern[str]] = {
    Provider.CLAUDE: re.compile(rf"{_SEMVER} \(Claude Code\)"),
    Provider.CODEX: re.compile(rf"codex-cli {_SEMVER}"),
    # Gemini CLI 0.61.0 and OpenCode 1.18.33 print the bare version
    Provider.GEMINI: re.compile(_SEMVER),
    Provider.OPENCODE: re.compile(_SEMVER),
}
_EXAMPLES: dict[Provider, str] = {
    Provider.CLAUDE: "2.1.197 (Claude Code)",
    Provider.CODEX: "codex-cli 0.171.0",
    Provider.GEMINI: "0.61.0",
    Provider.OPENCODE: "1.18.33",
}


@dataclass(frozen=True)
class ProviderVersion:
    """What ``--version`` said: kept as telemetry on the provider session."""

    provider: Provider
    version: tuple[int, int, int]
    raw: str
    prerelease: str | None = None

    @property
    def text(self) -> str:
        core = ".".join(str(part) for part in self.version)
        return core + (f"-{self.prerelease}" if self.prerelease else "")

    @property
    def place(self) -> WindowPlace:
        """Where this version stands against its provider's tested window."""
        return TESTED[self.provider].place(self.version)

    @property
    def verdict(self) -> str:
        """One line for a person: the version and whether it is tested."""
        return TESTED[self.provider].describe(self.version)


def parse_version(provider: Provider | str, stdout: str) -> ProviderVersion:
    """Parse the exact version line; refuse anything else, including too-old versions."""
    provider = Provider(provider)
    lines = [line.rstrip("\r") for line in stdout.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    if len(lines) != 1:
        raise ProviderError(
            f"`{provider.value} --version` printed {len(lines)} lines on stdout; expected exactly "
            f"one like {_EXAMPLES[provider]!r}",
            code="provider_version_malformed",
        )
    line = lines[0]
    match = _PATTERNS[provider].fullmatch(line)
    if match is None:
        raise ProviderError(
            f"`{provider.value} --version` printed {line[:80]!r}; expected a line like "
            f"{_EXAMPLES[provider]!r}. Is this really {provider.value}?",
            code="provider_version_malformed",
        )
    version = (int(match["major"]), int(match["minor"]), int(match["patch"]))
    pre = match["pre"][1:] if match["pre"] else None
    found = ProviderVersion(provider=provider, version=version, raw=line, prerelease=pre)
    check_supported(found)
    return found


def check_supported(found: ProviderVersion) -> None:
    """Refuse only a version below the floor: its hooks cannot carry what we read."""
    window = TESTED[found.provider]
    if found.place is WindowPlace.BELOW_FLOOR:
        raise ProviderError(
            f"{found.provider.value} {found.text} is older than {dotted(window.floor)}, the "
            f"oldest release whose hooks Switchboard can read (tested: "
            f"{dotted(window.oldest)}..{dotted(window.newest)}); upgrade {found.provider.value}",
            code="provider_version_unsupported",
        )


def resolve_command(provider: Provider, command: str | Sequence[str] | None) -> list[str]:
    """Turn a configured command into argv with an existing executable first."""
    if command is None:
        argv = [DEFAULT_EXECUTABLES[provider]]
    elif isinstance(command, str):
        argv = [command]
    else:
        argv = list(command)
    if not argv or not argv[0]:
        raise ProviderError(f"no {provider.value} command configured", code="provider_missing")
    found = shutil.which(argv[0])
    if found is None:
        raise ProviderError(
            f"{argv[0]!r} was not found or is not executable; install {provider.value} or set "
            f"its command in the providers config",
            code="provider_missing",
        )
    return [found, *argv[1:]]


def probe_version(
    provider: Provider | str,
    command: str | Sequence[str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> ProviderVersion:
    """Run ``<command> --version`` and parse its stdout; fail closed on anything odd."""
    provider = Provider(provider)
    argv = [*resolve_command(provider, command), "--version"]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            start_new_session=True,  # so a timeout can kill the whole process group
        )
    except OSError as exc:
        raise ProviderError(
            f"could not run {argv[0]!r}: {exc.strerror or exc}", code="provider_missing"
        ) from None
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise ProviderError(
            f"`{provider.value} --version` did not answer within {timeout:g} s",
            code="provider_version_timeout",
        ) from None
    if process.returncode != 0:
        raise ProviderError(
            f"`{provider.value} --version` exited with status {process.returncode}",
            code="provider_version_failed",
        )
    if len(stdout) > MAX_VERSION_OUTPUT:
        raise ProviderError(
            f"`{provider.value} --version` printed {len(stdout)} bytes; expected one short line",
            code="provider_version_malformed",
        )
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise ProviderError(
            f"`{provider.value} --version` printed bytes that are not UTF-8",
            code="provider_version_malformed",
        ) from None
    return parse_version(provider, text)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=1.0)
    except subprocess.TimeoutExpired:
        pass
