"""A navigator reads through a RegistryReader: the engine, its storage operations and
the broker's writes load with the first request, not with every state and Inbox read
(each navigator reads on every change; most are never typed into)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from core.broker.broker import Broker, PlacementSpec
from tests.navigator.scenario import Scenario

#: Modules of the write side that a read must not load.
WRITE_SIDE = ("core.engine.engine", "storage.operations.transitions", "core.broker.broker",
              "core.broker.delivery", "hashlib")

PROGRAM = f"""
import json, sys
from core.apps.client import EngineClient
client = EngineClient.open(with_stage=False)
state = client.state()
view = sys.argv[1]
inbox = [entry.text for entry in client.inbox(view)]
read = [name for name in {WRITE_SIDE!r} if name in sys.modules]
mode = client.toggle_mode(view).mode
after = next(v.mode for v in client.state().views if v.view_id == view)
print(json.dumps({{"inbox": inbox, "read": read,
                   "frames": sum(len(p.frames) for p in state.projects),
                   "mode": str(mode), "engine": "core.engine.engine" in sys.modules,
                   "after": str(after)}}))
"""


def test_reads_load_no_write_side_and_a_request_still_runs(demo: Scenario) -> None:
    project_id = demo.view_row("alpha")["project_id"]
    with Broker.open(demo.home.broker_path, tmux_socket=None) as broker:
        created = broker.create_fleet(f"project:{project_id}", director_name="director",
                                      director_description="runs the fleet",
                                      placement=PlacementSpec("s", "@1", "%1", "claude"))
        director = created.director.member.member_id
        broker.send(created.fleet.fleet_id, director, director, "hello from the fleet")
    before = demo.view_row("alpha")["mode"]
    result = subprocess.run([sys.executable, "-c", PROGRAM, demo.views["alpha"]],
                            capture_output=True, text=True, timeout=60, env=os.environ.copy(),
                            check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["read"] == []
    assert seen["inbox"] == ["hello from the fleet"]
    assert seen["frames"] > 0
    assert seen["engine"] is True  # the request brought the engine
    assert seen["mode"] != before and seen["after"] == seen["mode"]
    assert demo.view_row("alpha")["mode"] == seen["mode"]
