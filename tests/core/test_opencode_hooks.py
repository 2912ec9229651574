"""OpenCode's recorded plugin events (1.18.33) through the hook path's own parser, and
the adapter as the engine asks for it (issue 41)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.model.control_line import CONTROL_TEMPLATE
from core.model.errors import ConfigError, ProviderError
from core.model.files import private_dir
from core.model.session_enums import (
    PENDING_SESSION_PREFIX,
    Activity,
    ActivityReason,
    LaunchAction,
    Provider,
    RuntimePresence,
)
from core.providers.adapters import get_adapter
from core.providers.agent_http import HttpEndpoint
from core.providers.base import HookPlace, LaunchInputs, McpServer
from core.providers.hooks import HookKind, parse_hook, parse_hook_document
from core.providers.opencode import CONFIG_ENV, PLUGIN_FILE, OpencodeAdapter
from core.providers.opencode_events import OPENCODE_EVENTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
ID = "ses_db365e5feffeBO9AxkLfd4Swa8"


def _events(launch: str) -> list[tuple[str, dict]]:
    text = (FIXTURES / f"opencode-1.18.33-{launch}.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [(line["name"], line["payload"]) for line in lines
            if line["name"] in OPENCODE_EVENTS]


def test_the_recorded_first_launch_parses_to_its_kinds_and_one_session() -> None:
    parsed = [parse_hook(Provider.OPENCODE, name, json.dumps(payload))
              for name, payload in _events("first")]
    assert {event.provider_session_id for event in parsed} == {ID}
    kinds = [event.kind for event in parsed if event.kind is not HookKind.OTHER]
    assert kinds[:3] == [HookKind.SESSION_STARTED, HookKind.PROMPT_SUBMITTED,
                         HookKind.TURN_STOPPED]
    asked = next(event for event in parsed if event.kind is HookKind.PERMISSION_REQUESTED)
    assert (asked.activity, asked.activity_reason, asked.tool_name) == \
        (Activity.NEEDS_INPUT, ActivityReason.PERMISSION, "bash")
    assert asked.tool_use_id == "toolu_0d0735e075b64d658071ef53"
    tool = next(event for event in parsed if event.kind is HookKind.TOOL_STARTED)
    assert (tool.tool_name, tool.tool_use_id) == ("bash", asked.tool_use_id)
    prompt = next(event for event in parsed if event.kind is HookKind.PROMPT_SUBMITTED)
    assert prompt.model == "claude-sonnet-4-5" and not prompt.is_control_prompt
    assert parsed[0].runtime is RuntimePresence.LIVE
    assert all(event.turn_id is None for event in parsed)  # OpenCode states no turn id
    # Nothing of the prompt or the tool's input survives parsing.
    assert all("hello" not in repr(event) and "touch" not in repr(event) for event in parsed)


def test_the_fixed_control_line_is_known_and_a_plain_prompt_is_not() -> None:
    name, payload = next(item for item in _events("first") if item[0] == "chat.message")
    control = json.loads(json.dumps(payload))
    control["output"]["parts"][0]["text"] = CONTROL_TEMPLATE + "\n"
    assert parse_hook(Provider.OPENCODE, name, json.dumps(control)).is_control_prompt
    control["output"]["parts"][0]["synthetic"] = True  # OpenCode's own text, not typed
    assert not parse_hook(Provider.OPENCODE, name, json.dumps(control)).is_control_prompt


@pytest.mark.parametrize(("payload", "code"), [
    ({"properties": {}}, "hook_session_missing"),
    ({"properties": {"sessionID": "ses_short"}}, "hook_session_invalid"),
    ({"properties": {"sessionID": 7}}, "hook_session_invalid"),
    ({"properties": {"sessionID": "ses_db365e5feffeBO9AxkLfd4Sw;8"}}, "hook_session_invalid"),
])
def test_an_event_without_its_session_is_refused_by_name(payload: dict, code: str) -> None:
    with pytest.raises(ProviderError) as caught:
        parse_hook(Provider.OPENCODE, "session.idle", json.dumps(payload))
    assert caught.value.code == code


def test_the_document_comes_back_for_the_usage_handoff() -> None:
    payload = {"type": "session.idle", "properties": {"sessionID": ID},
               "transcript_path": "/run/opencode-usage.jsonl"}
    event, document = parse_hook_document(Provider.OPENCODE, "session.idle",
                                          json.dumps(payload))
    assert event.kind is HookKind.TURN_STOPPED and event.activity is Activity.READY
    assert document["transcript_path"] == "/run/opencode-usage.jsonl"


def test_the_adapter_plans_a_new_launch_with_a_pending_id_and_resumes_by_the_exact_one(
        tmp_path: Path) -> None:
    adapter = get_adapter(Provider.OPENCODE, "/opt/opencode")
    assert isinstance(adapter, OpencodeAdapter)
    pending = adapter.new_session_id("abc")
    assert pending == PENDING_SESSION_PREFIX + "abc"
    run_dir = private_dir(tmp_path / "run")
    tools = McpServer(("switchboard", "mcp"), ("SWITCHBOARD_CAP",),
                      http=HttpEndpoint("http://127.0.0.1:9/mcp", "tok"))
    new = adapter.plan(LaunchInputs(LaunchAction.NEW, pending, "fix it", run_dir, "l1",
                                    ("/bin/sb", "hook"), tools))
    assert new.provider is Provider.OPENCODE and new.session_id is None
    assert new.session_id_from_hook and new.argv == ("/opt/opencode", "--prompt=fix it")
    assert (run_dir / PLUGIN_FILE).exists() and CONFIG_ENV in new.env_dict
    again = adapter.plan(LaunchInputs(LaunchAction.RESUME, ID, None, run_dir, "l2",
                                      ("/bin/sb", "hook"), tools))
    assert again.argv == ("/opt/opencode", "--session", ID) and again.session_id == ID
    with pytest.raises(ProviderError):
        adapter.plan(LaunchInputs(LaunchAction.RESUME, pending, None, run_dir, "l3",
                                  ("/bin/sb", "hook"), tools))


def test_hooks_install_writes_a_project_plugin_with_the_hook_command_in_it(
        tmp_path: Path) -> None:
    adapter = get_adapter(Provider.OPENCODE)
    location = adapter.hook_location(HookPlace(project=tmp_path))
    assert location == tmp_path / ".opencode"
    (plugin,) = adapter.hook_files(location)
    assert plugin == tmp_path / ".opencode" / "plugin" / PLUGIN_FILE
    assert adapter.hook_dir(location) == plugin.parent
    (text,) = adapter.render_hook_files(("/bin/sb", "hook"), (None,))
    assert b'const HOOK = ["/bin/sb", "hook"];' in text
    with pytest.raises(ConfigError):
        adapter.hook_location(HookPlace(settings=tmp_path / "s.json"))


def test_the_recorded_bash_run_is_evidence_with_its_exit_code_and_the_prompt_its_text(
        ) -> None:
    from core.evidence.capture import Outcome, command_facts, prompt_text

    events = _events("first")
    before = next(p for n, p in events if n == "tool.execute.before")
    after = next(p for n, p in events if n == "tool.execute.after")
    started = command_facts("opencode", "tool.execute.before", before)
    assert started is not None and not started.finished
    assert started.command == "touch opencode-tooltest.txt"
    done = command_facts("opencode", "tool.execute.after", after)
    assert done is not None and done.finished and done.command == started.command
    assert (done.exit_code, done.exit_source, done.outcome) == \
        (0, "opencode_metadata", Outcome.PASSED)
    failed = json.loads(json.dumps(after))
    failed["output"]["metadata"]["exit"] = 2
    assert command_facts("opencode", "tool.execute.after", failed).outcome is Outcome.FAILED
    not_shell = {"input": {"tool": "read", "args": {"filePath": "/x"}}, "output": {}}
    assert command_facts("opencode", "tool.execute.after", not_shell) is None
    prompt = next(p for n, p in events if n == "chat.message")
    assert prompt_text(prompt) == "hello OpenCode"
