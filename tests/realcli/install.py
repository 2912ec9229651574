"""Install the Claude Code, Codex, Gemini CLI and OpenCode releases of the tested window with npm
into a cache folder.

The tier runs the CLIs a person installs: every version of each provider's tested
window (:data:`core.providers.window.TESTED`), or, for ``make realcli-latest``,
the newest release the registry serves at that moment (``SWITCHBOARD_REALCLI_LATEST=1``:
then the matrix is that one version per CLI). npm is the only way they are
distributed, so a machine without npm or without the registry fails the tier
loudly: it never skips.

Each CLI version has a cache folder of its own (``claude-2.1.332``), so moving the
window installs only what is new; a lock file keeps two pytest processes from
running npm into one folder at once.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from core.model.enums import Provider
from core.providers.window import NPM_PACKAGES as PACKAGES
from core.providers.window import TESTED, dotted

NPM_TIMEOUT_S = 600
LATEST_ENV = "SWITCHBOARD_REALCLI_LATEST"
GEMINI = Provider.GEMINI.value
"""Gemini CLI, the third provider (issue 41); its binary is ``gemini`` like its name."""
GEMINI_PACKAGE = PACKAGES[Provider.GEMINI]
GEMINI_TESTED = tuple(dotted(v) for v in reversed(TESTED[Provider.GEMINI].tested))
"""Gemini CLI releases of the tested window, newest first."""
OPENCODE = Provider.OPENCODE.value
"""OpenCode, the fourth provider (issue 41); its binary is ``opencode``. npm fetches the
platform binary (``opencode-linux-x64`` ...) as an optional dependency of ``opencode-ai``,
from the same registry."""
OPENCODE_PACKAGE = PACKAGES[Provider.OPENCODE]
OPENCODE_TESTED = tuple(dotted(v) for v in reversed(TESTED[Provider.OPENCODE].tested))
"""OpenCode releases of the tested window, newest first."""


class RealCliUnavailable(RuntimeError):
    """npm or the registry could not give us a CLI of the matrix; the tier fails with this."""


@dataclass(frozen=True)
class RealCli:
    """One installed CLI: which provider, which version, its binary."""

    provider: Provider
    version: str
    binary: Path

    @property
    def node_bin(self) -> Path:
        return Path(shutil.which("node") or "node").parent

    @property
    def id(self) -> str:
        return f"{self.provider.value}-{self.version}"


@dataclass(frozen=True)
class RealClis:
    """A Claude Code and a Codex, for tests that configure both providers."""

    claude: Path
    codex: Path
    node_bin: Path


def latest_wanted() -> bool:
    return os.environ.get(LATEST_ENV, "") not in ("", "0")


def matrix(provider: Provider) -> tuple[str, ...]:
    """The versions the tier runs for ``provider``: the tested window, newest first
    (so a failure on the release people run now comes first), or the registry's latest."""
    if latest_wanted():
        return (registry_latest(provider),)
    return tuple(dotted(v) for v in reversed(TESTED[provider].tested))


def newest(provider: Provider) -> str:
    return matrix(provider)[0]


def window_ends(provider: Provider) -> tuple[str, ...]:
    """The newest and the oldest version of the matrix (one when it has one): for a narrow
    check whose CLI-facing part other tests already run on every version (the whole
    journey, the argv shapes), so the releases inside the window add only time."""
    versions = matrix(provider)
    return tuple(dict.fromkeys((versions[0], versions[-1])))


@functools.cache
def registry_latest(provider: Provider) -> str:
    """The version npm's ``latest`` tag names today."""
    _need_npm()
    try:
        done = subprocess.run(["npm", "view", PACKAGES[provider], "version", "--json"],
                              capture_output=True, text=True, timeout=120, env=_clean_env())
    except subprocess.TimeoutExpired as exc:
        raise RealCliUnavailable(f"npm view {PACKAGES[provider]} timed out") from exc
    if done.returncode != 0:
        raise RealCliUnavailable(f"npm view {PACKAGES[provider]} failed: "
                                 + done.stderr.strip()[-300:])
    return str(json.loads(done.stdout))


def cache_root() -> Path:
    base = os.environ.get("SWITCHBOARD_REALCLI_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "switchboard-realcli"


def install_folder(provider: Provider, version: str) -> Path:
    return cache_root() / f"{provider.value}-{version}"


def _binary(name: str, folder: Path) -> Path:
    return folder / "node_modules" / ".bin" / name


def version_of(binary: Path) -> str | None:
    """What ``--version`` prints (stdout, stripped), or None when it does not run."""
    if not binary.exists():
        return None
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, env=_clean_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _clean_env() -> dict[str, str]:
    """No credentials and no proxy settings of the machine reach the CLIs."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_",
                                 "GOOGLE_", "OPENCODE_"))}


def _need_npm() -> None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RealCliUnavailable(
            "node/npm not found: install Node 20 (apt-get install nodejs npm) to run the "
            "real-CLI tier")


def ensure_cli(provider: Provider, version: str) -> RealCli:
    """One CLI at one version, installed once into its cache folder."""
    binary = _ensure(provider.value, PACKAGES[provider], version)
    return RealCli(provider, version, binary)


def ensure_gemini(version: str | None = None) -> Path:
    """Gemini CLI at one version (its binary), installed once like the other CLIs; by
    default the newest of the matrix (the registry's latest for ``make realcli-latest``)."""
    return _ensure(GEMINI, GEMINI_PACKAGE, version or newest(Provider.GEMINI))


def ensure_opencode(version: str | None = None) -> Path:
    """OpenCode at one version (its binary), installed once like the other CLIs; by
    default the newest of the matrix (the registry's latest for ``make realcli-latest``)."""
    return _ensure(OPENCODE, OPENCODE_PACKAGE, version or newest(Provider.OPENCODE))


def _ensure(name: str, package: str, version: str) -> Path:
    _need_npm()
    folder = cache_root() / f"{name}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    binary = _binary(name, folder)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        said = version_of(binary)
        if said is None or version not in said:
            _npm_install(folder, f"{package}@{version}")
            said = version_of(binary)
            if said is None or version not in said:
                raise RealCliUnavailable(
                    f"npm installed into {folder} but `{name} --version` says "
                    f"{said!r}, not {version}")
    return binary


def _npm_install(folder: Path, spec: str) -> None:
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(folder),
           spec]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=NPM_TIMEOUT_S,
                              env=_clean_env())
    except subprocess.TimeoutExpired as exc:
        raise RealCliUnavailable(f"npm install timed out after {NPM_TIMEOUT_S} s: "
                                 f"{' '.join(cmd)}") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RealCliUnavailable(f"npm install {spec} failed ({done.returncode}): "
                                 + " | ".join(tail))


def ensure_installed() -> RealClis:
    """The newest Claude Code and Codex of the matrix."""
    claude = ensure_cli(Provider.CLAUDE, newest(Provider.CLAUDE))
    codex = ensure_cli(Provider.CODEX, newest(Provider.CODEX))
    return RealClis(claude=claude.binary, codex=codex.binary, node_bin=claude.node_bin)
