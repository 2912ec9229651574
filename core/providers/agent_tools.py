"""Which program an agent's CLI starts as its stdio MCP server: the ~1 MB shim.

``agent_tool_argv`` wraps the full server's argv (``switchboard mcp``) as the
shim's fallback: ``[shim, SOCKET, python, -m, navigator.cli, mcp]``. The shim
(``mcp_shim.c``) is compiled once per source version into the person's cache
folder (``~/.cache/switchboard/bin``) with the system C compiler; a machine without one (or with
``SWITCHBOARD_MCP_SHIM=off``) keeps the full server per agent, as before.

Why C and not a stdlib Python shim: a Python 3.11 process that has only imported
socket and json already holds ~10 MB RSS (``python -I -S``: 8.3 MB asleep), twice
the 5 MB per-agent target; the compiled shim holds ~1 MB. See docs/decisions.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from core.model.files import own_dir, private_dir

ENV_SHIM = "SWITCHBOARD_MCP_SHIM"
"""``off``: every agent runs the full ``switchboard mcp`` server (no shim, no host)."""
SOURCE = Path(__file__).with_name("mcp_shim.c")
SOCKET_NAME = "mcp-host.sock"
MAX_SOCKET_PATH = 100
"""A unix socket path must fit ``sun_path`` (108 bytes); a longer run folder's
socket goes to the per-user private temp folder, named by the home."""
FULL_SERVER_TAIL = ("-m", "navigator.cli", "mcp")


def socket_path(run_dir: Path) -> Path:
    """Where the home's agent-tool host server listens (0600).

    The per-user temp folder is shared ground (``$TMPDIR``): another user could make
    it first and swap the socket, receiving every agent's environment. ``own_dir``
    refuses it then, in one line naming the folder, instead of using it; the home's
    run folder is checked the same way (the shim and the host refuse any other)."""
    path = run_dir / SOCKET_NAME
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return own_dir(run_dir) / SOCKET_NAME
    digest = hashlib.sha256(os.fsencode(run_dir)).hexdigest()[:16]
    folder = own_dir(Path(tempfile.gettempdir()) / f"switchboard-run-{os.getuid()}")
    return folder / f"mcp-{digest}.sock"


def _bin_dir(run_dir: Path) -> Path:
    """Where compiled shims are kept: the person's cache folder (one build per source
    version for every home, tests included), else the home's run folder. A folder
    another user could write to is never used: its program would run as the agent."""
    raw = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(raw) if os.path.isabs(raw) else Path.home() / ".cache"
    folder = base / "switchboard" / "bin"
    try:
        private_dir(folder)
        info = folder.stat()
        if info.st_uid == os.getuid() and not info.st_mode & 0o022:
            return folder
    except OSError:
        pass
    return own_dir(run_dir / "bin")


def shim_binary(run_dir: Path) -> Path | None:
    """The compiled shim for this source, built now if missing; None when it cannot be."""
    try:
        source = SOURCE.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256(source).hexdigest()[:12]
    try:
        binary = _bin_dir(run_dir) / f"sb-mcp-shim-{digest}"
    except OSError:
        return None
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    partial = binary.with_name(f"{binary.name}.{os.getpid()}.tmp")
    try:
        subprocess.run([compiler, "-O2", "-o", str(partial), str(SOURCE)], check=True,
                       capture_output=True, timeout=60)
        os.chmod(partial, 0o700)
        os.replace(partial, binary)
    except (OSError, subprocess.SubprocessError):
        with contextlib.suppress(OSError):
            partial.unlink()
        return None
    return binary


def agent_tool_argv(run_dir: Path, full_server: Sequence[str]) -> tuple[str, ...]:
    """The argv an agent's CLI starts for Switchboard's tools.

    ``full_server`` is ``switchboard mcp`` in this interpreter; anything else (a
    test's stand-in) is used as it is, and so is the full server when the shim is
    off or cannot be built.
    """
    argv = tuple(full_server)
    if os.environ.get(ENV_SHIM) == "off" or tuple(argv[1:]) != FULL_SERVER_TAIL:
        return argv
    binary = shim_binary(run_dir)
    if binary is None:
        return argv
    return (str(binary), str(socket_path(run_dir)), *argv)


__all__ = ["ENV_SHIM", "agent_tool_argv", "shim_binary", "socket_path"]
