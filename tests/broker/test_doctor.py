"""`switchboard doctor` on a real home: healthy, then a broken broker file named with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from navigator.cli import main
from tests.integration.journey_env import make_live_engine


def test_doctor_healthy_then_names_a_broken_broker(
        tmp_path: Path, tmux_socket: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOME", str(tmp_path))
    make_live_engine(tmp_path, tmux_socket).conn.close()
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 0, out
    parts = [line.split(":")[0].split(None, 1)[1] for line in out.splitlines()
             if not line.startswith(("verdict", "      do:"))]
    assert parts == ["switchboard", "registry", "broker", "session files", "tmux",
                     "provider codex", "provider claude", "hooks"]
    assert out.splitlines()[-1] == "verdict: healthy"
    assert "no broker file yet" in out

    broken = tmp_path / "broker.sqlite3"
    broken.write_bytes(b"not a database at all, just some bytes" * 100)
    before = broken.read_bytes()
    code = main(["doctor", "--json"])
    findings = {f["part"]: f for f in json.loads(capsys.readouterr().out)}
    assert code == 1
    assert findings["broker"]["verdict"] == "fail"
    assert "move the file aside" in findings["broker"]["fix"]
    assert findings["registry"]["verdict"] == "ok"
    assert broken.read_bytes() == before  # doctor changes nothing
