"""Input from outside is read with a bound: an oversized payload is refused, never buffered.

Real processes (the console entry point as providers run it), real pipes; the
peak resident size of the child comes from ``os.wait4``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from core.agent.mcp_server import MAX_LINE_BYTES
from core.providers.hooks import MAX_PAYLOAD_BYTES
from tests.core.test_mcp_server import McpProcess, base_env

REPO = Path(__file__).resolve().parents[2]
CHUNK = b"x" * (1024 * 1024)


def _feed(stream, total_mib: int, tail: bytes = b"", *, close: bool = False) -> threading.Thread:
    """Write ``total_mib`` MiB then ``tail`` on a thread; the reader may stop early."""
    def run() -> None:
        try:
            for _ in range(total_mib):
                stream.write(CHUNK)
            stream.write(tail)
            stream.flush()
            if close:
                stream.close()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the reader refused and went away: exactly what is wanted
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# A child's ru_maxrss starts from what its parent held when it forked, so measuring
# the hook as pytest's own child reports pytest's size (100+ MiB late in a full run).
# A small Python parent runs the hook instead and reports its child's peak on a pipe.
PEAK_WRAPPER = (
    "import os, resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "os.write(int(sys.argv[1]),"
    " str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss).encode())\n"
    "sys.exit(code)\n")


def _measured(report_fd: int, argv: list[str]) -> list[str]:
    return [sys.executable, "-c", PEAK_WRAPPER, str(report_fd), *argv]


def _peak_mib(proc: subprocess.Popen[bytes], report: int | None = None) -> tuple[int, float]:
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if report is not None:
        kib = int(os.read(report, 64) or b"0")
        os.close(report)
        return proc.returncode, kib / 1024
    return proc.returncode, usage.ru_maxrss / 1024  # Linux reports KiB


def test_hook_reads_at_most_the_bound_of_a_huge_payload(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = base_env(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    subprocess.run([sys.executable, "-m", "navigator.cli", "init", "--private-tmux"],
                   cwd=REPO, env=env, check=True, capture_output=True)
    generation = (home / "state" / "current").read_text().strip()
    env.update(SWITCHBOARD_GENERATION=generation, SWITCHBOARD_CAPABILITY="sbcap_unused")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        _measured(write_end, [sys.executable, "-m", "navigator.cli", "hook", "--provider",
                              "claude", "UserPromptSubmit"]), cwd=REPO, env=env,
        pass_fds=(write_end,), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    os.close(write_end)
    assert MAX_PAYLOAD_BYTES == 16 * 1024 * 1024
    writer = _feed(proc.stdin, 120, close=True)  # 120 MiB: the old reader held all of it
    code, peak = _peak_mib(proc, read_end)
    writer.join(timeout=60)
    err = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "hook_payload_too_large" in lines[0], err
    assert "Traceback" not in err
    assert peak < 80, f"hook peaked at {peak:.0f} MiB reading a 120 MiB payload"


def test_mcp_server_refuses_an_oversized_line_and_keeps_serving(tmp_path: Path) -> None:
    server = McpProcess(base_env(SWITCHBOARD_HOME=str(tmp_path)))
    try:
        assert server.alive()
        writer = _feed(server.proc.stdin, 64, tail=b"\n")  # one 64 MiB line
        writer.join(timeout=120)
        answer = server.reply()
        assert answer["id"] is None and answer["error"]["code"] == -32600, answer
        assert answer["error"]["message"] == (
            f"message larger than {MAX_LINE_BYTES} bytes; send a smaller request "
            "(it was not read)")
        assert server.alive()  # the next line is served normally
        assert json.loads(json.dumps(server.request("tools/list")))["result"]["tools"]
        status = Path(f"/proc/{server.proc.pid}/status").read_text()
        peak_kib = int(next(line.split()[1] for line in status.splitlines()
                            if line.startswith("VmHWM:")))
        assert peak_kib / 1024 < 60, f"MCP server peaked at {peak_kib / 1024:.0f} MiB"
    finally:
        server.close()


def _init_home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    env = base_env(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"))
    subprocess.run([sys.executable, "-m", "navigator.cli", "init", "--private-tmux"],
                   cwd=REPO, env=env, check=True, capture_output=True)
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "navigator.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_an_oversized_config_is_refused_in_one_line(tmp_path: Path) -> None:
    from core.config.config import MAX_CONFIG_BYTES

    env = _init_home(tmp_path)
    config = Path(env["SWITCHBOARD_CONFIG"])
    original = config.read_bytes()
    with config.open("ab") as handle:  # still valid TOML: a comment 2 MiB long
        handle.write(b"# " + b"x" * (2 * MAX_CONFIG_BYTES) + b"\n")
    done = _cli(env, "view", "list")
    assert done.returncode == 2
    assert done.stderr == (f"switchboard: file_too_large: config file {config} is larger "
                           f"than {MAX_CONFIG_BYTES} bytes; it cannot be a valid config file: "
                           "check what wrote it (nothing was changed)\n")
    config.write_bytes(original)
    assert _cli(env, "view", "list").returncode == 0


def test_an_oversized_generation_pointer_is_refused_in_words(tmp_path: Path) -> None:
    env = _init_home(tmp_path)
    pointer = Path(env["SWITCHBOARD_HOME"]) / "state" / "current"
    pointer.write_text(pointer.read_text().strip() + "\n" + " " * 100_000)
    done = _cli(env, "view", "list")
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith(f"switchboard: pointer_invalid: {pointer} is larger than 4096 bytes")
    assert "Traceback" not in done.stderr


def test_hook_path_pins_the_config_bound() -> None:
    from core.config import config
    from core.context import session

    assert session.MAX_CONFIG_BYTES == config.MAX_CONFIG_BYTES
