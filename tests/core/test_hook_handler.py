"""handle_hook on a real registry with a launched fake-provider surface.

Every recorded Claude hook line is replayed through ``handle_hook`` with the
pane markers (capability, generation, home) and its session id rewritten to the
launched session's; after each line the session's activity/runtime must match
the recorded facts. Then every refusal path is checked to write nothing.

The capability a hook presents is minted by the test: a second
``agent_capabilities`` row with the exact bindings of the launcher's row and a
raw value the test knows (the launcher's raw value lives only in the pane's
environment, which is deliberately not readable from the registry).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config.capabilities import ENV_CAPABILITY, ENV_GENERATION, ENV_HOME, digest
from core.context.requests import new_request_id
from core.engine.engine import Engine
from core.hooks.hook_handler import handle_hook
from core.model.errors import ProviderError, Unauthorized
from storage.connection import write_transaction
from tests.integration.journey_env import make_live_engine
from tests.waiting import retry_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
CLAUDE_FIXTURE = FIXTURES / "claude-2.1.197.tsv"
FOREIGN_ID = "b983c0f1-b0b3-43a2-85c2-a97a4919cd70"


@dataclass(frozen=True)
class LiveSurface:
    engine: Engine
    root: Path
    session_key: str
    provider_session_id: str
    launch_id: str
    raw: str

    def env(self, **changes: str | None) -> dict[str, str]:
        base = {ENV_CAPABILITY: self.raw, ENV_GENERATION: self.engine.generation_id,
                ENV_HOME: str(self.root)}
        base.update(changes)
        return {k: v for k, v in base.items() if v is not None}


def fixture_lines(path: Path = CLAUDE_FIXTURE) -> list[tuple[str, dict]]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            event, _, payload = line.partition("\t")
            lines.append((event, json.loads(payload)))
    return lines


def mint_capability(engine: Engine, launch_id: str, raw: str) -> None:
    """A second capability row bound exactly like the launcher's, for ``raw``."""
    with write_transaction(engine.conn) as conn:
        row = conn.execute("SELECT * FROM agent_capabilities WHERE launch_id = ?"
                           " AND revoked_at IS NULL ORDER BY issued_at LIMIT 1",
                           (launch_id,)).fetchone()
        assert row is not None, "the launcher minted no capability"
        conn.execute(
            "INSERT INTO agent_capabilities (capability_id, capability_digest, host_id,"
            " view_id, frame_id, session_key, surface_id, launch_id, tmux_server_id, pane_id,"
            " placement_generation, issued_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (str(uuid.uuid4()), digest(raw), row["host_id"], row["view_id"], row["frame_id"],
             row["session_key"], row["surface_id"], row["launch_id"], row["tmux_server_id"],
             row["pane_id"], row["placement_generation"], row["issued_at"],
             row["expires_at"]))


def launch_live_surface(root: Path, socket: Path, provider: str = "claude") -> LiveSurface:
    """A registry with one started fake-provider frame whose launch is bound."""
    from core.model.enums import Provider

    engine = make_live_engine(root, socket)
    route = engine.project_enter(new_request_id(), "alpha")
    started = engine.frame_start(new_request_id(), route.frame_id, Provider(provider))

    def launch_state() -> str:
        return engine.conn.execute("SELECT state FROM launch_intents WHERE launch_id = ?",
                                   (started.launch_id,)).fetchone()[0]

    # The fake agent's own SessionStart hook binds the launch; after that it idles.
    assert retry_until(lambda: launch_state() == "bound", 20), launch_state()
    session = engine.conn.execute(
        "SELECT session_key, provider_session_id FROM provider_sessions"
        " WHERE session_key = (SELECT session_key FROM launch_intents WHERE launch_id = ?)",
        (started.launch_id,)).fetchone()
    raw = "sbcap1_test-" + uuid.uuid4().hex
    mint_capability(engine, started.launch_id, raw)
    return LiveSurface(engine, root, session["session_key"], session["provider_session_id"],
                       started.launch_id, raw)




def session_state(live: LiveSurface) -> tuple[str, str]:
    row = live.engine.conn.execute(
        "SELECT activity, runtime_presence FROM provider_sessions WHERE session_key = ?",
        (live.session_key,)).fetchone()
    return row["activity"], row["runtime_presence"]


def dump(live: LiveSurface) -> dict[str, list[tuple]]:
    tables = ("provider_sessions", "launch_intents", "agent_capabilities", "control_turns",
              "view_transitions")
    return {t: [tuple(r) for r in live.engine.conn.execute(f"SELECT * FROM {t} ORDER BY 1")]
            for t in tables}


def payload_for(live: LiveSurface, event: str = "Stop", **changes) -> bytes:
    document = {"session_id": live.provider_session_id, "hook_event_name": event,
                "prompt_id": "p-" + uuid.uuid4().hex[:8]}
    document.update(changes)
    return json.dumps(document).encode()


# ----------------------------------------------------------------- replay

# (activity, runtime) after each line of claude-2.1.197.tsv, replayed in order
# with every session_id rewritten to the launched session's.
EXPECTED_AFTER_LINE = [
    ("UserPromptSubmit", "working", "live"),
    ("PreToolUse", "working", "live"),
    ("PermissionRequest", "needs_input", "live"),
    ("Notification", "needs_input", "live"),   # permission_prompt
    ("PostToolUse", "working", "live"),
    ("Stop", "ready", "live"),
    ("Notification", "ready", "live"),         # idle_prompt: no change
    ("SessionEnd", "ready", "stopped"),
    ("SessionStart", "ready", "live"),         # resume
    ("UserPromptSubmit", "working", "live"),   # the control template
    ("Stop", "ready", "live"),
    ("Notification", "ready", "live"),         # idle_prompt: no change
    ("SessionEnd", "ready", "stopped"),
    ("SessionEnd", "ready", "stopped"),
]


def test_fixture_matches_expectation_table() -> None:
    assert [e for e, _ in fixture_lines()] == [e for e, _, _ in EXPECTED_AFTER_LINE]


def test_replay_every_recorded_claude_line(live: LiveSurface) -> None:
    assert session_state(live)[1] == "live"
    for index, ((event, document), (_, activity, runtime)) in enumerate(
            zip(fixture_lines(), EXPECTED_AFTER_LINE, strict=True), start=1):
        document = dict(document, session_id=live.provider_session_id)
        outcome = handle_hook("claude", event, json.dumps(document).encode(), live.env())
        assert outcome.handled, (index, event, outcome)
        assert outcome.session_key == live.session_key
        assert outcome.activity == activity, (index, event, outcome)
        assert session_state(live) == (activity, runtime), (index, event)
    last = live.engine.conn.execute("SELECT last_turn_id FROM provider_sessions"
                                    " WHERE session_key = ?", (live.session_key,)).fetchone()
    assert last[0] == "ee5be873-88f3-4314-9744-91d4c9062c29"


def test_recorded_foreign_session_lines_change_nothing(live: LiveSurface) -> None:
    foreign = [(e, d) for e, d in fixture_lines() if d["session_id"] == FOREIGN_ID]
    assert len(foreign) == 2  # idle_prompt Notification and SessionEnd of another session
    before = dump(live)
    for event, document in foreign:
        outcome = handle_hook("claude", event, json.dumps(document).encode(), live.env())
        assert not outcome.handled
        assert "foreign" in outcome.reason
    assert dump(live) == before


def test_str_payload_is_accepted(live: LiveSurface) -> None:
    outcome = handle_hook("claude", "UserPromptSubmit",
                          payload_for(live, "UserPromptSubmit").decode(), live.env())
    assert outcome.handled and outcome.activity == "working"


# ----------------------------------------------------------------- refusals


def refused_nothing_written(live: LiveSurface, env: dict[str, str], payload: bytes,
                            event: str = "UserPromptSubmit", provider: str = "claude",
                            raises: type[Exception] | None = None):
    before = dump(live)
    if raises is not None:
        with pytest.raises(raises) as caught:
            handle_hook(provider, event, payload, env)
        result = caught.value
    else:
        result = handle_hook(provider, event, payload, env)
        assert result.handled is False, result
    assert dump(live) == before
    return result


@pytest.mark.parametrize("raw", [
    "sbcap1_" + "A" * 43,             # well-formed, never issued
    "not-a-capability",               # wrong prefix
    "sbcap1_" + "x" * 300,            # oversized
])
def test_forged_capability_is_unauthorized(live: LiveSurface, raw: str) -> None:
    error = refused_nothing_written(live, live.env(**{ENV_CAPABILITY: raw}),
                                    payload_for(live, "UserPromptSubmit"), raises=Unauthorized)
    assert error.code == "unauthorized"


def test_revoked_capability_is_unauthorized(live: LiveSurface) -> None:
    with write_transaction(live.engine.conn) as conn:
        conn.execute("UPDATE agent_capabilities SET revoked_at = 1 WHERE capability_digest = ?",
                     (digest(live.raw),))
    refused_nothing_written(live, live.env(), payload_for(live, "UserPromptSubmit"),
                            raises=Unauthorized)


def test_capability_for_another_provider_is_unauthorized(live: LiveSurface) -> None:
    payload = payload_for(live, "UserPromptSubmit", turn_id="t-1")
    refused_nothing_written(live, live.env(), payload, provider="codex", raises=Unauthorized)


@pytest.mark.parametrize("generation", ["stale-generation-id", "", " "])
def test_wrong_or_stale_generation_is_a_successful_noop(live: LiveSurface,
                                                        generation: str) -> None:
    env = live.env(**{ENV_GENERATION: generation})
    if generation == "":
        # empty generation with a capability present is a partial marker set
        refused_nothing_written(live, env, payload_for(live), raises=Unauthorized)
        return
    outcome = refused_nothing_written(live, env, payload_for(live, "UserPromptSubmit"))
    assert "stale generation" in outcome.reason


def test_stale_generation_noop_even_with_garbage_payload(live: LiveSurface) -> None:
    outcome = refused_nothing_written(live, live.env(**{ENV_GENERATION: "old"}), b"{not json")
    assert "stale" in outcome.reason


def test_no_markers_is_a_noop(live: LiveSurface) -> None:
    env = live.env(**{ENV_CAPABILITY: None, ENV_GENERATION: None})
    outcome = refused_nothing_written(live, env, payload_for(live, "UserPromptSubmit"))
    assert "unmanaged" in outcome.reason
    # also without SWITCHBOARD_HOME and even with a garbage payload
    outcome = refused_nothing_written(live, {}, b"garbage")
    assert "unmanaged" in outcome.reason


@pytest.mark.parametrize("missing", [ENV_CAPABILITY, ENV_GENERATION])
def test_partial_markers_are_unauthorized(live: LiveSurface, missing: str) -> None:
    env = live.env(**{missing: None})
    refused_nothing_written(live, env, payload_for(live, "UserPromptSubmit"),
                            raises=Unauthorized)


def test_unknown_session_id_is_a_noop(live: LiveSurface) -> None:
    payload = payload_for(live, "UserPromptSubmit", session_id=str(uuid.uuid4()))
    outcome = refused_nothing_written(live, live.env(), payload)
    assert "foreign" in outcome.reason


@pytest.mark.parametrize("payload", [
    b"{not json", b"", b"   ", b"[1, 2]", b"\xff\xfe", b'{"hook_event_name": "Stop"}',
    b'{"session_id": "not-a-uuid", "hook_event_name": "Stop"}',
])
def test_malformed_payload_is_a_provider_error(live: LiveSurface, payload: bytes) -> None:
    refused_nothing_written(live, live.env(), payload, event="Stop", raises=ProviderError)


def test_event_name_mismatch_is_a_provider_error(live: LiveSurface) -> None:
    refused_nothing_written(live, live.env(), payload_for(live, "Stop"),
                            event="UserPromptSubmit", raises=ProviderError)


def test_a_notification_line_the_agent_submits_stamps_its_message(live: LiveSurface) -> None:
    """The prompt hook is the witness that a message's line reached the agent (a typist
    killed before its own stamp then leaves nothing to be typed twice)."""
    import sqlite3

    from core.broker.membership import person_send
    from core.model.notice_line import managed_line

    frame_id = live.engine.conn.execute(
        "SELECT frame_id FROM agent_capabilities WHERE launch_id = ?",
        (live.launch_id,)).fetchone()[0]
    sent = person_send(live.engine, frame_id, "please look at the tests")
    assert sent.delivery.startswith("pending")  # no Stop yet: the gate kept it for later
    broker = live.root / "broker.sqlite3"

    def notified() -> str | None:
        with sqlite3.connect(broker) as conn:
            return conn.execute("SELECT notified_at FROM messages WHERE message_id = ?",
                                (sent.message_id,)).fetchone()[0]

    other = payload_for(live, "UserPromptSubmit", prompt="please: " + managed_line(
        sent.message_id, "person"))
    assert handle_hook("claude", "UserPromptSubmit", other, live.env()).handled
    assert notified() is None  # only the exact line is a witness
    line = payload_for(live, "UserPromptSubmit", prompt=managed_line(sent.message_id, "person"))
    assert handle_hook("claude", "UserPromptSubmit", line, live.env()).handled
    assert notified() is not None


def test_an_agent_resumed_after_dying_mid_turn_is_not_working(live: LiveSurface) -> None:
    """The turn of a process that died (kill, reboot) ended without a Stop: its resumed
    session reads unknown, not the dead process's `working`, until its own hooks speak."""
    import os
    import signal

    from core.reconcile.reconcile import reconcile

    prompt = payload_for(live, "UserPromptSubmit", prompt="refactor the parser")
    assert handle_hook("claude", "UserPromptSubmit", prompt, live.env()).handled
    assert session_state(live) == ("working", "live")
    frame_id, pid = live.engine.conn.execute(
        "SELECT l.frame_id, s.process_id FROM launch_intents l JOIN surfaces s"
        " USING (launch_id) WHERE launch_id = ?", (live.launch_id,)).fetchone()
    os.kill(pid, signal.SIGKILL)
    assert retry_until(lambda: reconcile(live.engine) is not None
                       and session_state(live)[1] == "stopped", 20), dump(live)
    assert session_state(live)[0] == "working"  # what the provider said stays, stopped
    live.engine.frame_start(new_request_id(), frame_id)  # n: resume the session
    assert retry_until(lambda: session_state(live) == ("unknown", "live"), 20), dump(live)
