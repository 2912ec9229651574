"""A remote host that sends malicious or malformed HostState documents over the live
channel: each is refused, nothing local changes, the stream goes on.

The host is a real home behind a real sshd (``remote_hosts``); its ``switchboard``
on the remote PATH is replaced by a script that writes prepared lines, as a
compromised or broken remote could.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from core.config.home import Home
from core.context.session import open_reader
from core.remote.interest import ensure_followers, hold_interest
from core.state.envelope import encode_canonical
from core.state.state_builder import build_host_state
from tests.integration.journey_env import make_live_engine
from tests.integration.remote_hosts import add_agents, make_hosts, plain_home
from tests.waiting import retry_until


def _doc(home: Path) -> dict:
    reader = open_reader(Home(root=home, config_path=home / "config.toml"))
    try:
        return json.loads(encode_canonical(build_host_state(reader)))
    finally:
        reader.conn.close()


def _line(doc: dict) -> str:
    return json.dumps(doc, separators=(",", ":"))


def test_malicious_or_malformed_documents_are_refused_without_effect(
        tmp_path: Path, tmux_socket: Path, monkeypatch) -> None:
    hosts = make_hosts(1, plain_home(("gamma",)))
    pids: list[int] = []
    try:
        host = hosts.hosts[0]
        add_agents(host, 1)
        good = _doc(host.home)
        root = tmp_path / "local"
        monkeypatch.setenv("SWITCHBOARD_SSH", str(hosts.wrapper))
        engine = make_live_engine(root, tmux_socket, remotes=(host.remote,))
        local_host = engine.config.host.host_id
        canary = tmp_path / "pwned"

        bad = []
        escape = json.loads(json.dumps(good))
        escape["frames"][0]["title"] = "fine\x1b]0;pwned\x07\x1b[2J"
        bad.append(_line(escape))
        # whole documents of another host, and of this very host (consistent inside)
        bad.append(_line(good).replace(host.host_id, "99999999-9999-4999-8999-999999999999"))
        bad.append(_line(good).replace(host.host_id, local_host))
        locator = json.loads(json.dumps(good))
        locator["frames"][0]["tmuxPane"] = "%1"
        bad.append(_line(locator))
        dangling = json.loads(json.dumps(good))
        dangling["frames"][0]["projectId"] = "77777777-7777-4777-8777-777777777777"
        bad.append(_line(dangling))
        bad.append(f"$(touch {canary}); not json {{")
        bad.append(_line(good)[:-40])  # cut short
        deep = "[" * 200 + "]" * 200
        bad.append(deep)
        later = json.loads(json.dumps(good))
        later["frames"][0]["title"] = "Renamed later"
        later["generatedAt"] += 1

        folder = host.folder
        (folder / "good.json").write_text(_line(good) + "\n")
        (folder / "bad.json").write_text("\n".join(bad) + "\n")
        (folder / "later.json").write_text(_line(later) + "\n")
        script = host.folder / "bin" / "switchboard"
        script.write_text(
            "#!/bin/sh\n"
            f"cat {folder / 'good.json'}; sleep 1\n"
            f"cat {folder / 'bad.json'}\n"
            f"while [ ! -e {folder / 'go'} ]; do echo; sleep 1; done\n"
            f"cat {folder / 'later.json'}\n"
            "while true; do echo; sleep 1; done\n")
        script.chmod(0o755)

        home = Home(root=root, config_path=root / "config.toml")
        hold_interest(home)
        pids = [pid for _, pid in ensure_followers(home, engine.config)]

        def cache() -> tuple:
            return tuple(engine.conn.execute(
                "SELECT reachability, bounded_error, state_json FROM host_state_cache"
            ).fetchone() or ("", None, ""))

        assert retry_until(lambda: cache()[0] == "online", 30)
        stored = cache()[2]
        before = {table: engine.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                  for table in ("frames", "user_views", "provider_sessions", "recoveries")}
        # every bad line refused: the last one's reason is noted, nothing else moved
        assert retry_until(lambda: "nesting is deeper" in (cache()[1] or ""), 15), cache()[1]
        reachability, error, state_json = cache()
        assert (reachability, state_json) == ("online", stored)
        assert error.startswith("refused: ")
        assert "pwned" not in state_json and "tmuxPane" not in state_json
        assert not canary.exists()
        assert before == {table: engine.conn.execute(f"SELECT COUNT(*) FROM {table}")
                          .fetchone()[0] for table in before}
        log = next((root / "run" / "remote").glob("*.follow.log")).read_text()
        for reason in ("terminal control", "not the configured", "locator",
                       "77777777-7777-4777-8777-777777777777", "invalid JSON"):
            assert reason in log, (reason, log)
        assert "\x1b" not in log  # the refused bytes are spelled out, never replayed
        # the person sees why in `remote list`, still online, in one line per remote
        listed = subprocess.run([sys.executable, "-m", "navigator.cli", "remote", "list"],
                                capture_output=True, text=True, timeout=60, env={
                                    **os.environ, "SWITCHBOARD_HOME": str(root),
                                    "SWITCHBOARD_CONFIG": str(root / "config.toml")})
        assert listed.returncode == 0, listed.stderr
        assert "online" in listed.stdout and "(envelope_invalid: refused: " not in listed.stdout
        assert "refused: envelope_invalid: $[0]" in listed.stdout, listed.stdout
        assert len(listed.stdout.splitlines()) == 1 and "\x1b" not in listed.stdout
        # the stream goes on: the next good document is taken and clears the error
        (folder / "go").write_text("")
        assert retry_until(lambda: "Renamed later" in cache()[2], 15)
        assert cache()[1] is None
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        hosts.close()
