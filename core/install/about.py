"""What is installed: Switchboard's own version and the provider CLIs it would start.

``switchboard --version`` answers before anything else loads: the package's
version comes from the installed distribution's metadata (the one number,
``pyproject.toml``'s ``version``), and each provider's from its own
``--version`` against the tested window (``core.providers.window``). The
probes run side by side, each with its timeout, so the slowest CLI bounds the
wait; no registry, engine or tmux is opened. A provider that is not installed
is a fact to print ("not found"), not a failure: a person may use only one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from core.model.enums import Provider
from core.model.errors import ProviderError, SwitchboardError

if TYPE_CHECKING:
    from core.config.home import Home

DISTRIBUTION = "switchboard"
UNKNOWN_VERSION = "unknown"


def package_version() -> str:
    """The installed distribution's version (``unknown`` when run from a bare tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN_VERSION


class ProbeOutcome(StrEnum):
    FOUND = "found"
    NOT_FOUND = "not_found"
    DISABLED = "disabled"
    FAILED = "failed"
    """It ran but its version could not be read or is refused (below the floor)."""


@dataclass(frozen=True)
class ProviderReport:
    """One provider CLI as ``--version`` reports it."""

    provider: Provider
    outcome: ProbeOutcome
    detail: str
    """For a person: ``2.1.332 (tested)``, ``not found``, or why it failed."""
    executable: str | None = None


@dataclass(frozen=True)
class ProbeSpec:
    """What to run for one provider: its configured command and timeout."""

    provider: Provider
    command: tuple[str, ...]
    timeout: float
    enabled: bool = True


def probe_specs(home: Home) -> list[ProbeSpec]:
    """The configured commands when the config reads, else each provider's default.

    ``--version`` must answer on a machine with no config yet (right after an
    install) and with a broken one (it is what a person runs to report it), so
    an unreadable config falls back to the defaults ``switchboard init`` writes.
    """
    from core.config.config import default_providers, load_config

    try:
        providers = load_config(home.config_path).providers
    except (SwitchboardError, OSError):
        providers = default_providers()
    return [ProbeSpec(provider, settings.command, settings.version_timeout_seconds,
                      settings.enabled) for provider, settings in providers.items()]


def probe_providers(specs: list[ProbeSpec]) -> list[ProviderReport]:
    """Every provider's report, probed in parallel, in the order given."""
    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        return list(pool.map(_probe, specs))


def _probe(spec: ProbeSpec) -> ProviderReport:
    from core.providers.version import probe_version, resolve_command
    from core.providers.window import TESTED

    if not spec.enabled:
        return ProviderReport(spec.provider, ProbeOutcome.DISABLED,
                              "disabled in the config (not probed)")
    try:
        argv = resolve_command(spec.provider, spec.command)
    except ProviderError:
        return ProviderReport(spec.provider, ProbeOutcome.NOT_FOUND, "not found")
    try:
        found = probe_version(spec.provider, argv, timeout=spec.timeout)
    except ProviderError as exc:
        return ProviderReport(spec.provider, ProbeOutcome.FAILED, exc.message, argv[0])
    window = TESTED.get(spec.provider)
    detail = window.describe(found.version) if window is not None else found.text
    if found.prerelease:
        detail += f" (pre-release {found.prerelease})"
    return ProviderReport(spec.provider, ProbeOutcome.FOUND, detail, argv[0])
