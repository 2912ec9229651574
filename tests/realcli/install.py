"""Install the pinned Claude Code and Codex CLIs with npm into a cache folder.

The tier runs the CLIs a person installs, at the versions the fixtures were
recorded from. npm is the only way they are distributed, so a machine without
npm or without the registry fails the tier loudly: it never skips.

The cache folder is keyed by the pinned versions, so bumping a pin installs
anew beside the old one; a lock file keeps two pytest processes from running
npm into one folder at once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.197"
CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
NPM_TIMEOUT_S = 600


class RealCliUnavailable(RuntimeError):
    """npm or the registry could not give us the pinned CLIs; the tier fails with this."""


@dataclass(frozen=True)
class RealClis:
    claude: Path
    codex: Path
    node_bin: Path


def cache_root() -> Path:
    base = os.environ.get("SWITCHBOARD_REALCLI_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "switchboard-realcli"


def install_folder() -> Path:
    return cache_root() / f"claude-{CLAUDE_VERSION}_codex-{CODEX_VERSION}"


def _binaries(folder: Path) -> RealClis:
    bin_dir = folder / "node_modules" / ".bin"
    return RealClis(claude=bin_dir / "claude", codex=bin_dir / "codex",
                    node_bin=Path(shutil.which("node") or "node").parent)


def _installed(clis: RealClis) -> bool:
    return all(_version_ok(path, want) for path, want in
               ((clis.claude, CLAUDE_VERSION), (clis.codex, CODEX_VERSION)))


def _version_ok(path: Path, want: str) -> bool:
    if not path.exists():
        return False
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                             timeout=60, env=_clean_env()).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return want in out


def _clean_env() -> dict[str, str]:
    """No credentials and no proxy settings of the machine reach the CLIs."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_"))}
    return env


def ensure_installed() -> RealClis:
    """The pinned CLIs, installed once per cache folder; raises RealCliUnavailable."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RealCliUnavailable(
            "node/npm not found: install Node 20 (apt-get install nodejs npm) to run the "
            "real-CLI tier")
    folder = install_folder()
    folder.mkdir(parents=True, exist_ok=True)
    clis = _binaries(folder)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(clis):
            return clis
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix",
               str(folder), f"{CLAUDE_PACKAGE}@{CLAUDE_VERSION}",
               f"{CODEX_PACKAGE}@{CODEX_VERSION}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=NPM_TIMEOUT_S, env=_clean_env())
        except subprocess.TimeoutExpired as exc:
            raise RealCliUnavailable(f"npm install timed out after {NPM_TIMEOUT_S} s: "
                                     f"{' '.join(cmd)}") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise RealCliUnavailable(f"npm install failed ({done.returncode}): "
                                     + " | ".join(tail))
        if not _installed(clis):
            raise RealCliUnavailable(
                f"npm installed into {folder} but `claude --version` / `codex --version` "
                f"do not report {CLAUDE_VERSION} / {CODEX_VERSION}")
        return clis
