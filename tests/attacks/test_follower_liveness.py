"""Issue 37 item 9: a follower's liveness is a heartbeat or a complete valid document,
and what a host may send is rate-limited.

Each test runs a real follower process against an ``ssh`` stand-in (``$SWITCHBOARD_SSH``,
as the follower's own tests use) that first sends one valid HostState document, so
the host is online with a cached state, and then misbehaves:

- drips a document one byte a second, never finishing it (before the fix every byte
  counted as life: the host stayed online for as long as the drip went on);
- sends a line a second that is no document (each refused, yet counted as life);
- stops in the middle of a document (offline after the limit; this already held);
- floods valid documents as fast as the pipe takes them (before the fix the follower
  decoded and stored every one: ~97 % of a core; now it reads and decodes within its
  allowance and leaves the rest in the pipe).

Later connections fail at once (exit 255, as ssh does), so the offline mark stays
where the test can see it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.config.config import RemoteConfig
from core.engine.engine import Engine
from core.remote.follower import OFFLINE_AFTER_S
from core.state.envelope import encode_canonical
from core.state.state_builder import build_host_state
from tests.factories import HOST_ID, make_engine
from tests.waiting import retry_value

REPO_ROOT = Path(__file__).resolve().parents[2]
TWIN = "44444444-4444-4444-8444-444444444444"

FAKE_SSH = """\
#!{python}
import os, sys, time

folder = {folder!r}
if os.path.exists(os.path.join(folder, "connected")):
    sys.exit(255)  # later connections: the host is gone
open(os.path.join(folder, "connected"), "w").close()
mode = open(os.path.join(folder, "mode")).read().strip()
doc = open(os.path.join(folder, "doc.json"), "rb").read().strip()
out = sys.stdout.buffer
out.write(doc + b"\\n")
out.flush()
if mode == "stuck":
    out.write(doc[: len(doc) // 2])
    out.flush()
elif mode == "drip":
    for byte in doc:
        out.write(bytes([byte]))
        out.flush()
        time.sleep(1)
elif mode == "refused":
    while True:
        out.write(b"{{not a document}}\\n")
        out.flush()
        time.sleep(1)
elif mode == "flood":
    chunk = (doc + b"\\n") * 64
    while True:
        out.write(chunk)
time.sleep(600)
"""

#: Runs the follower in this process and reports its own CPU time (``RUSAGE_SELF``:
#: not the ssh stand-in's) over a window once the flood is under way.
MEASURE = """\
import json, os, resource, sys, threading, time
from core.config.home import Home
from core.remote.follower import Follower
from core.remote.interest import interest

WARM_S, WINDOW_S = {warm}, {window}

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

def measure():
    time.sleep(WARM_S)
    cpu0, wall0 = cpu(), time.monotonic()
    time.sleep(WINDOW_S)
    print(json.dumps({{"cpu": cpu() - cpu0, "wall": time.monotonic() - wall0}}), flush=True)
    os._exit(0)  # ssh (the stand-in) gets SIGTERM with its parent

threading.Thread(target=measure, daemon=True).start()
home = Home.from_env()
with interest(home):
    Follower(home, "twin", keep=True).run()
"""


class Hosted:
    """The local home following ``twin`` through the stand-in in ``folder``."""

    def __init__(self, engine: Engine, root: Path, folder: Path) -> None:
        self.engine, self.root, self.folder = engine, root, folder

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SWITCHBOARD_HOME": str(self.root),
                "SWITCHBOARD_CONFIG": str(self.root / "config.toml"),
                "SWITCHBOARD_SSH": str(self.folder / "ssh"),
                "PYTHONPATH": str(REPO_ROOT)}

    def serve(self, mode: str) -> None:
        (self.folder / "mode").write_text(mode)

    def row(self) -> tuple[str, str | None]:
        found = self.engine.conn.execute(
            "SELECT reachability, bounded_error FROM host_state_cache WHERE remote_name = ?",
            ("twin",)).fetchone()
        return (found[0], found[1]) if found is not None else ("", None)


@pytest.fixture
def hosted(tmp_path: Path) -> Hosted:
    twin = RemoteConfig(name="twin", host_id=TWIN, ssh_target="dev@twin.example")
    engine = make_engine(tmp_path / "local", remotes=(twin,))
    remote = make_engine(tmp_path / "remote")  # a real home's document, as twin's
    document = encode_canonical(build_host_state(remote)).replace(HOST_ID.encode(),
                                                                   TWIN.encode())
    remote.conn.close()
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "doc.json").write_bytes(document)
    script = folder / "ssh"
    script.write_text(FAKE_SSH.format(python=sys.executable, folder=str(folder)))
    script.chmod(0o755)
    return Hosted(engine, tmp_path / "local", folder)


def _follow(hosted: Hosted) -> subprocess.Popen[bytes]:
    """``switchboard remote follow twin``: the follower in the foreground (as the
    navigator starts it, minus the detaching)."""
    return subprocess.Popen([sys.executable, "-m", "navigator.cli", "remote", "follow", "twin"],
                            env=hosted.env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("mode", ["drip", "refused", "stuck"])
def test_a_host_without_a_heartbeat_or_a_valid_document_goes_offline(
        hosted: Hosted, mode: str) -> None:
    hosted.serve(mode)
    follower = _follow(hosted)
    try:
        first = retry_value(hosted.row, lambda row: row[0] == "online", 60, interval=0.05)
        assert first[0] == "online", first  # the one good document was taken
        online_at = time.monotonic()
        limit = OFFLINE_AFTER_S + 4.0  # the limit, and a slow shared machine's slack
        row = retry_value(hosted.row, lambda row: row[0] == "offline", limit + 6,
                          interval=0.05)
        took = time.monotonic() - online_at
        assert row[0] == "offline", f"{mode}: still {row} after {took:.1f} s"
        assert took <= limit, f"{mode}: offline only after {took:.1f} s"
        assert f"no word from twin for {OFFLINE_AFTER_S:.0f} s" in (row[1] or ""), row
    finally:
        _end(follower)


def test_a_document_flood_is_rate_limited(hosted: Hosted) -> None:
    hosted.serve("flood")
    warm, window = 3.0, 4.0
    started_ms = time.time() * 1000
    measured = subprocess.run([sys.executable, "-c", MEASURE.format(warm=warm, window=window)],
                              env=hosted.env, cwd=REPO_ROOT, capture_output=True,
                              timeout=warm + window + 60)
    assert measured.returncode == 0, measured.stderr.decode()[-2000:]
    figures = json.loads(measured.stdout.decode().strip().splitlines()[-1])
    share = figures["cpu"] / figures["wall"]
    # an honest host costs a few documents a second; the flood may cost no more than that
    assert share < 0.25, f"the follower used {share:.0%} of a core under a flood"
    # rate-limited, not stalled: the flood's documents were still taken, host online
    reachability, error = hosted.row()
    assert (reachability, error) == ("online", None)
    received = hosted.engine.conn.execute(
        "SELECT received_at FROM host_state_cache WHERE remote_name = 'twin'").fetchone()[0]
    assert received >= started_ms + warm * 1000  # one was stored during the window
