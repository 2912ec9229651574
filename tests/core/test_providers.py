"""Provider adapters: every recorded hook line, version probing, launch argv."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from core.model.enums import Activity, ActivityReason, LaunchAction, Provider, RuntimePresence
from core.model.errors import ProviderError
from core.providers.adapters import get_adapter
from core.providers.base import LaunchPlan
from core.providers.hooks import CONTROL_TEMPLATE, HookEvent, HookKind, parse_hook
from core.providers.version import parse_version, probe_version
from core.providers.window import WindowPlace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
FIXTURE_FILES = {Provider.CLAUDE: "claude-2.1.197.tsv", Provider.CODEX: "codex-0.171.0.tsv"}
"""The first recordings (by hand); every release of the window has one now too."""
RECORDINGS = sorted(FIXTURES.glob("*-*.tsv"))
"""Every recorded release (``python -m tests.realcli.record_hooks CLI VERSION``)."""


def fixture_lines(names: list[str] | None = None) -> list[tuple[Provider, int, str, str]]:
    rows = []
    for name in names or list(FIXTURE_FILES.values()):
        provider = Provider(name.split("-", 1)[0])
        text = (FIXTURES / name).read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            event, payload = line.split("\t", 1)
            rows.append((provider, number, event, payload))
    return rows


FIXTURE_LINES = fixture_lines()
RECORDED_LINES = [(name.name, *row) for name in RECORDINGS
                  for row in fixture_lines([name.name])]

# (kind, activity, reason, runtime) per event name, before payload refinements.
Outcome = tuple[HookKind, Activity | None, ActivityReason | None, RuntimePresence | None]
NEEDS_PERMISSION = (Activity.NEEDS_INPUT, ActivityReason.PERMISSION)
TURN_DONE: Outcome = (HookKind.TURN_STOPPED, Activity.READY, ActivityReason.TURN_COMPLETE, None)
BY_EVENT: dict[str, Outcome] = {
    "UserPromptSubmit": (HookKind.PROMPT_SUBMITTED, Activity.WORKING, None, None),
    "PreToolUse": (HookKind.TOOL_STARTED, Activity.WORKING, None, None),
    "PostToolUse": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    "PermissionRequest": (
        HookKind.PERMISSION_REQUESTED, Activity.NEEDS_INPUT, ActivityReason.PERMISSION, None,
    ),
    "PermissionDenied": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    "Stop": TURN_DONE,
    "SessionStart": (HookKind.SESSION_STARTED, None, None, RuntimePresence.LIVE),
    "SessionEnd": (HookKind.SESSION_ENDED, None, None, RuntimePresence.STOPPED),
}
BY_NOTIFICATION_TYPE = {
    "permission_prompt": (HookKind.NOTIFICATION, *NEEDS_PERMISSION, None),
    "idle_prompt": (HookKind.NOTIFICATION, None, None, None),
    # 2.1.332's notice mid-turn (every type: tests/core/test_notification_types.py)
    "agent_needs_input": (HookKind.NOTIFICATION, Activity.NEEDS_INPUT, ActivityReason.QUESTION,
                          None),
}
BY_NOTIFY_TYPE = {
    "agent-turn-complete": TURN_DONE,
}


GEMINI_BY_EVENT: dict[str, Outcome] = {
    "BeforeAgent": (HookKind.PROMPT_SUBMITTED, Activity.WORKING, None, None),
    "BeforeTool": (HookKind.TOOL_STARTED, Activity.WORKING, None, None),
    "AfterTool": (HookKind.TOOL_FINISHED, Activity.WORKING, None, None),
    "AfterAgent": TURN_DONE,
    "SessionStart": (HookKind.SESSION_STARTED, None, None, RuntimePresence.LIVE),
    "SessionEnd": (HookKind.SESSION_ENDED, None, None, RuntimePresence.STOPPED),
}
"""Gemini CLI 0.61.0's own event names (its permission dialog is a Notification)."""


def expected_outcome(event: str, payload: dict, provider: Provider = Provider.CLAUDE) -> tuple:
    if provider is Provider.GEMINI:
        if event == "Notification":
            assert payload["notification_type"] == "ToolPermission"
            return (HookKind.NOTIFICATION, *NEEDS_PERMISSION, None)
        return GEMINI_BY_EVENT[event]
    if event == "StopFailure" and payload.get("error") == "rate_limit":
        return (HookKind.OTHER, Activity.NEEDS_INPUT, ActivityReason.USAGE_LIMIT, None)
    if event == "Notification":
        return BY_NOTIFICATION_TYPE[payload["notification_type"]]
    if event == "notify":
        return BY_NOTIFY_TYPE[payload["type"]]
    return BY_EVENT[event]


def outcome(parsed: HookEvent) -> tuple:
    return (parsed.kind, parsed.activity, parsed.activity_reason, parsed.runtime)


@pytest.mark.parametrize(
    ("recording", "provider", "number", "event", "payload"),
    RECORDED_LINES,
    ids=[f"{r[:-4]}-{n:02d}-{e}" for r, _, n, e, _ in RECORDED_LINES],
)
def test_every_recorded_line_normalizes(recording, provider, number, event, payload):
    document = json.loads(payload)
    parsed = parse_hook(provider, event, payload.encode("utf-8"))

    assert parsed.provider is provider
    assert parsed.event == event
    assert outcome(parsed) == expected_outcome(event, document, provider)
    if event == "notify":
        assert parsed.provider_session_id == document["thread-id"]
        assert parsed.turn_id == document["turn-id"]
    else:
        assert parsed.provider_session_id == document["session_id"]
        turn_key = {Provider.CLAUDE: "prompt_id", Provider.CODEX: "turn_id"}.get(provider)
        assert parsed.turn_id == (document.get(turn_key) if turn_key else None)
    if event == "SessionStart":
        assert parsed.source == document["source"]
    if event == "SessionEnd":
        assert parsed.end_reason == document["reason"]
    if event in ("PreToolUse", "PostToolUse", "PermissionRequest", "PermissionDenied"):
        assert parsed.tool_name == document["tool_name"]
        # The recordings carry it on Pre/PostToolUse and PermissionDenied, not on
        # PermissionRequest.
        assert parsed.tool_use_id == document.get("tool_use_id")
        assert (parsed.tool_use_id is not None) == (event != "PermissionRequest")
    elif event in ("BeforeTool", "AfterTool"):  # Gemini CLI: no tool-use id
        assert parsed.tool_name == document["tool_name"]
        assert parsed.tool_use_id is None
    else:
        assert parsed.tool_use_id is None
    assert parsed.model == document.get("model")  # Codex names its model; Claude 2.1.197 not
    assert parsed.is_control_prompt == (document.get("prompt") == CONTROL_TEMPLATE)

    # Nothing of the prompt, reply, tool input or transcript survives.
    kept = repr(parsed)
    for secret_key in ("prompt", "last_assistant_message", "last-assistant-message", "message"):
        if isinstance(document.get(secret_key), str):
            assert document[secret_key] not in kept
    for message in document.get("input-messages", []):
        assert message not in kept
    assert "transcript" not in kept and "/home/dev" not in kept and "touch " not in kept


def test_every_release_of_the_window_has_a_recording():
    from core.providers.window import TESTED, dotted

    recorded = {path.name for path in FIXTURES.iterdir()}
    for provider, window in TESTED.items():
        for version in window.tested:
            # OpenCode's plugin events are recorded as JSON lines, one file per launch
            assert any(name.startswith(f"{provider.value}-{dotted(version)}")
                       and name.endswith((".tsv", ".jsonl")) for name in recorded), provider


def test_fixtures_cover_every_activity_outcome():
    seen = {outcome(parse_hook(p, e, body)) for p, _, e, body in FIXTURE_LINES}
    assert {o[1] for o in seen} == {Activity.WORKING, Activity.NEEDS_INPUT, Activity.READY, None}
    assert len(FIXTURE_LINES) == 20


def test_idle_prompt_is_evidence_not_a_stop():
    line = next(body for p, _, e, body in FIXTURE_LINES if e == "Notification" and "idle" in body)
    parsed = parse_hook("claude", "Notification", line)
    assert parsed.idle_prompt and not parsed.changes_activity


CLAUDE_SID = "5e99a90b-28b7-4b4f-a775-ed6f2fda6f44"
CODEX_TID = "01a23608-d138-7bd0-b5fc-4cf37eeeb23a"


def claude_payload(event: str, **fields) -> str:
    base = {"session_id": CLAUDE_SID, "cwd": "/x", "hook_event_name": event, "prompt_id": "p-1"}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


@pytest.mark.parametrize(
    ("event", "fields", "expected"),
    [
        ("Notification", {"notification_type": "elicitation_dialog"},
         (HookKind.NOTIFICATION, Activity.NEEDS_INPUT, ActivityReason.ELICITATION, None)),
        ("Notification", {"notification_type": "auth_success"},
         (HookKind.NOTIFICATION, None, None, None)),
        ("Notification", {}, (HookKind.NOTIFICATION, None, None, None)),
        ("PreToolUse", {"tool_name": "AskUserQuestion"},
         (HookKind.TOOL_STARTED, Activity.NEEDS_INPUT, ActivityReason.QUESTION, None)),
        ("StopFailure", {}, (HookKind.OTHER, Activity.UNKNOWN, ActivityReason.ERROR, None)),
        ("SubagentStop", {}, (HookKind.SUBAGENT_STOPPED, None, None, None)),
        ("PreCompact", {}, (HookKind.OTHER, None, None, None)),
    ],
)
def test_claude_refinements_beyond_the_recording(event, fields, expected):
    assert outcome(parse_hook("claude", event, claude_payload(event, **fields))) == expected


def test_codex_has_no_notification_event_and_ignores_other_notify_types():
    body = json.dumps({"session_id": CODEX_TID, "hook_event_name": "Notification"})
    assert outcome(parse_hook("codex", "Notification", body)) == (HookKind.OTHER, None, None, None)
    notify = json.dumps({"type": "approval-requested", "thread-id": CODEX_TID})
    parsed = parse_hook("codex", "notify", notify)
    assert outcome(parsed) == (HookKind.OTHER, None, None, None)
    assert parsed.notification_type == "approval-requested"


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse", "PostToolUseFailure",
                                   "PermissionRequest"])
def test_tool_use_id_is_kept_on_tool_events(event):
    body = claude_payload(event, tool_name="Bash", tool_use_id="toolu_01AbC-9.z:x")
    assert parse_hook("claude", event, body).tool_use_id == "toolu_01AbC-9.z:x"
    # ...and only there: an id on another event is not a tool-use id.
    stop = claude_payload("Stop", tool_use_id="toolu_01")
    assert parse_hook("claude", "Stop", stop).tool_use_id is None


@pytest.mark.parametrize("bad", [
    "", "x" * 129, "toolu 01", "toolu_01\n", "toolu\x0001", "tööl_01", 42, None, ["toolu_01"],
    {"id": "toolu_01"}, True,
])
def test_an_unusable_tool_use_id_or_model_is_absent_not_an_error(bad):
    body = claude_payload("PostToolUse", tool_name="Bash", tool_use_id=bad, model=bad)
    parsed = parse_hook("claude", "PostToolUse", body)
    assert (parsed.tool_use_id, parsed.model) == (None, None)
    assert outcome(parsed) == (HookKind.TOOL_FINISHED, Activity.WORKING, None, None)
    assert parse_hook("claude", "PostToolUse", claude_payload(
        "PostToolUse", tool_name="Bash", tool_use_id="x" * 128)).tool_use_id == "x" * 128


def test_model_is_kept_from_any_event_that_names_one():
    started = parse_hook("claude", "SessionStart", claude_payload(
        "SessionStart", source="startup", model="claude-opus-4-1-20250805"))
    assert started.model == "claude-opus-4-1-20250805"
    assert parse_hook("claude", "Stop", claude_payload("Stop")).model is None


def test_control_prompt_is_recognised_without_keeping_the_text():
    parsed = parse_hook("claude", "UserPromptSubmit", claude_payload("UserPromptSubmit",
                                                                     prompt=CONTROL_TEMPLATE))
    assert parsed.is_control_prompt
    assert "transition_claim" not in repr(parsed)


@pytest.mark.parametrize(
    ("provider", "event", "payload", "code"),
    [
        ("claude", "Stop", b"{not json", "hook_payload_invalid"),
        ("claude", "Stop", b"", "hook_payload_invalid"),
        ("claude", "Stop", b"   \n", "hook_payload_invalid"),
        ("claude", "Stop", b"\xff\xfe{}", "hook_payload_invalid"),
        ("claude", "Stop", b"[1, 2]", "hook_payload_invalid"),
        ("claude", "Stop", b'"text"', "hook_payload_invalid"),
        ("claude", "Stop", b"[" * 200_000, "hook_payload_invalid"),
        ("claude", "Stop", b'{"hook_event_name": "Stop"}', "hook_session_missing"),
        ("claude", "Stop", b'{"session_id": 42}', "hook_session_invalid"),
        ("claude", "Stop", b'{"session_id": null}', "hook_session_invalid"),
        ("claude", "Stop", b'{"session_id": "not-a-uuid"}', "hook_session_invalid"),
        ("claude", "Stop", b'{"session_id": "../../etc/passwd"}', "hook_session_invalid"),
        ("claude", "Stop", claude_payload("Stop", prompt_id=7).encode(), "hook_payload_invalid"),
        ("claude", "Stop", claude_payload("Stop", prompt_id="a b").encode(),
         "hook_payload_invalid"),
        ("claude", "Stop", claude_payload("Stop", stop_hook_active="no").encode(),
         "hook_payload_invalid"),
        ("claude", "Stop", claude_payload("PreToolUse").encode(), "hook_event_mismatch"),
        ("claude", "UserPromptSubmit", claude_payload("UserPromptSubmit", prompt=["x"]).encode(),
         "hook_payload_invalid"),
        ("claude", "Notification", claude_payload("Notification", notification_type=1).encode(),
         "hook_payload_invalid"),
        ("claude", "PreToolUse", claude_payload("PreToolUse", tool_name={"a": 1}).encode(),
         "hook_payload_invalid"),
        ("claude", "Stop; rm -rf /", claude_payload("Stop").encode(), "hook_event_invalid"),
        ("claude", "", claude_payload("Stop").encode(), "hook_event_invalid"),
        ("mistral", "Stop", claude_payload("Stop").encode(), "hook_provider_invalid"),
        ("codex", "notify", b'{"thread-id": "01a23608-d138-7bd0-b5fc-4cf37eeeb23a"}',
         "hook_payload_invalid"),
        ("codex", "notify", b'{"type": "agent-turn-complete"}', "hook_session_missing"),
        ("codex", "notify", b'{"type": "agent-turn-complete", "thread-id": 5}',
         "hook_session_invalid"),
        ("codex", "notify", b'{"type": "agent-turn-complete", "thread-id": "x", "turn-id": "t"}',
         "hook_session_invalid"),
        ("codex", "Stop", b'{"session_id": "01a23608-d138-7bd0-b5fc-4cf37eeeb23a", "turn_id": []}',
         "hook_payload_invalid"),
    ],
)
def test_bad_input_fails_closed_with_a_specific_error(provider, event, payload, code):
    with pytest.raises(ProviderError) as caught:
        parse_hook(provider, event, payload)
    assert caught.value.code == code
    assert caught.value.message


def test_str_and_bytes_payloads_are_equivalent():
    body = claude_payload("Stop")
    assert parse_hook("claude", "Stop", body) == parse_hook("claude", "Stop", body.encode())


def test_adapter_parse_hook_delegates():
    body = claude_payload("Stop")
    assert get_adapter("claude").parse_hook("Stop", body).kind is HookKind.TURN_STOPPED


# --- version probing -------------------------------------------------------


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize(
    ("provider", "stdout", "version"),
    [
        ("claude", "2.1.197 (Claude Code)", (2, 1, 197)),
        ("claude", "2.1.0 (Claude Code)", (2, 1, 0)),
        ("claude", "2.3.5 (Claude Code)", (2, 3, 5)),
        ("claude", "3.0.0 (Claude Code)", (3, 0, 0)),
        ("codex", "codex-cli 0.171.0", (0, 171, 0)),
        ("codex", "codex-cli 0.172.4", (0, 172, 4)),
        ("codex", "codex-cli 1.0.0", (1, 0, 0)),
        ("codex", "codex-cli 0.180.0-alpha.3", (0, 180, 0)),
    ],
)
def test_versions_at_or_above_the_tested_contract_are_accepted(tmp_path, provider, stdout, version):
    exe = script(tmp_path, provider, f"echo 'update available!' >&2\necho '{stdout}'\n"
                                      "echo 'more noise' >&2")
    found = probe_version(provider, str(exe))
    assert found.provider is Provider(provider)
    assert found.version == version
    assert found.raw == stdout


@pytest.mark.parametrize(
    ("provider", "stdout"),
    [("claude", "2.0.99 (Claude Code)"), ("claude", "1.9.0 (Claude Code)"),
     ("codex", "codex-cli 0.165.9"), ("codex", "codex-cli 0.99.0")],
)
def test_versions_below_the_floor_are_refused_with_a_message(tmp_path, provider, stdout):
    exe = script(tmp_path, provider, f"echo '{stdout}'")
    with pytest.raises(ProviderError) as caught:
        probe_version(provider, str(exe))
    assert caught.value.code == "provider_version_unsupported"
    assert "the oldest release whose hooks Switchboard can read" in caught.value.message
    assert caught.value.message.endswith(f"upgrade {provider}")


@pytest.mark.parametrize(
    ("provider", "stdout", "place"),
    [("claude", "2.1.332 (Claude Code)", WindowPlace.TESTED),
     ("claude", "2.1.250 (Claude Code)", WindowPlace.INSIDE),
     ("claude", "2.1.340 (Claude Code)", WindowPlace.NEWER),
     ("claude", "2.1.100 (Claude Code)", WindowPlace.OLDER),
     ("claude", "2.2.0 (Claude Code)", WindowPlace.NEWER),
     ("codex", "codex-cli 0.166.0", WindowPlace.TESTED),
     ("codex", "codex-cli 0.169.1", WindowPlace.INSIDE),
     ("codex", "codex-cli 0.180.0", WindowPlace.NEWER)],
)
def test_a_version_outside_the_window_starts_and_says_so(tmp_path, provider, stdout, place):
    """Only the floor refuses; newer and older releases start, called untested."""
    found = probe_version(provider, str(script(tmp_path, provider, f"echo '{stdout}'")))
    assert found.place is place
    assert ("untested" in found.verdict) is place.untested
    assert found.verdict.startswith(found.text)


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("claude", "echo 'hello world'"),
        ("claude", "echo 'codex-cli 0.171.0'"),
        ("codex", "echo '2.1.197 (Claude Code)'"),
        ("claude", "echo ''"),
        ("claude", "true"),
        ("claude", "echo '2.1.197 (Claude Code)'; echo 'Update available'"),
        ("claude", "echo ' 2.1.197 (Claude Code)'"),
        ("claude", "echo '2.1 (Claude Code)'"),
        ("codex", "echo 'codex-cli 0.171.0 extra'"),
        ("codex", "echo 'codex-cli 00.171.0'"),
        ("codex", "printf 'codex-cli \\377\\n'"),
        ("codex", "head -c 10000 /dev/zero | tr '\\0' 'x'"),
    ],
)
def test_malformed_output_fails_closed(tmp_path, provider, body):
    exe = script(tmp_path, provider, body)
    with pytest.raises(ProviderError) as caught:
        probe_version(provider, str(exe))
    assert caught.value.code == "provider_version_malformed"


def test_trailing_crlf_is_tolerated(tmp_path):
    exe = script(tmp_path, "codex", "printf 'codex-cli 0.171.0\\r\\n'")
    assert probe_version("codex", str(exe)).version == (0, 171, 0)


def test_missing_binary(tmp_path):
    with pytest.raises(ProviderError) as caught:
        probe_version("claude", str(tmp_path / "nope" / "claude"))
    assert caught.value.code == "provider_missing"
    assert "not found" in caught.value.message


def test_missing_binary_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProviderError) as caught:
        probe_version("codex")
    assert caught.value.code == "provider_missing"


def test_not_executable_file(tmp_path):
    path = tmp_path / "claude"
    path.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    with pytest.raises(ProviderError) as caught:
        probe_version("claude", str(path))
    assert caught.value.code == "provider_missing"


def test_nonzero_exit(tmp_path):
    exe = script(tmp_path, "claude", "echo '2.1.197 (Claude Code)'; echo boom >&2; exit 3")
    with pytest.raises(ProviderError) as caught:
        probe_version("claude", str(exe))
    assert caught.value.code == "provider_version_failed"
    assert "status 3" in caught.value.message


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "survived"
    exe = script(tmp_path, "codex", f"(sleep 3; touch '{marker}') &\nsleep 30")
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        probe_version("codex", str(exe), timeout=0.5)
    assert caught.value.code == "provider_version_timeout"
    assert time.monotonic() - started < 2.5
    time.sleep(3.2)
    assert not marker.exists()


def test_version_on_path_and_via_adapter(monkeypatch, tmp_path):
    script(tmp_path, "claude", "echo '2.1.197 (Claude Code)'")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ["PATH"])
    assert get_adapter("claude").probe_version().version == (2, 1, 197)


def test_parse_version_keeps_prerelease_and_raw():
    found = parse_version("codex", "codex-cli 0.180.0-alpha.3\n")
    assert found.prerelease == "alpha.3" and found.text == "0.180.0-alpha.3"
    assert found.raw == "codex-cli 0.180.0-alpha.3"


# --- launch argv -----------------------------------------------------------

SID = "6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab"


def test_claude_new_and_resume_argv():
    claude = get_adapter("claude")
    settings = Path("/run/sb/launch-1.settings.json")
    teammates = ("--teammate-mode", "in-process")
    assert claude.launch_argv(LaunchAction.NEW, SID, None, None) == [
        "claude", "--session-id", SID, *teammates]
    assert claude.launch_argv(LaunchAction.NEW, SID, "hello there", settings) == [
        "claude", "--session-id", SID, *teammates, "--settings", str(settings), "--",
        "hello there",
    ]
    assert claude.launch_argv(LaunchAction.RESUME, SID, CONTROL_TEMPLATE, settings) == [
        "claude", "--resume", SID, *teammates, "--settings", str(settings), "--",
        CONTROL_TEMPLATE,
    ]
    # --mcp-config is variadic in Claude Code: one word, so the prompt stays the prompt
    mcp = Path("/run/sb/claude-mcp.json")
    assert claude.launch_plan(LaunchAction.RESUME, SID, "go on", settings, mcp).argv[5:] == (
        "--settings", str(settings), f"--mcp-config={mcp}", "--", "go on")
    plan = claude.launch_plan("new", SID, None, None)
    assert plan == LaunchPlan(Provider.CLAUDE, LaunchAction.NEW,
                              ("claude", "--session-id", SID, *teammates), (), SID)
    assert not plan.session_id_from_hook


def test_codex_new_and_resume_argv():
    codex = get_adapter("codex")
    new = codex.launch_plan(LaunchAction.NEW, None, None, None)
    assert new.argv == ("codex",) and new.env == () and new.session_id_from_hook
    assert codex.launch_argv(LaunchAction.NEW, None, "hi", None) == ["codex", "hi"]
    resume = codex.launch_plan(LaunchAction.RESUME, SID, CONTROL_TEMPLATE, Path("/sb/codex-home"))
    assert resume.argv == ("codex", "resume", SID, CONTROL_TEMPLATE)
    assert resume.env_dict == {"CODEX_HOME": "/sb/codex-home"}
    assert resume.session_id == SID


def test_codex_gets_the_agent_tools_as_mcp_overrides_before_resume():
    from core.config.capabilities import AGENT_TOOL_ENV, ENV_CAPABILITY
    from core.providers.agent_http import HttpEndpoint
    from core.providers.base import McpServer
    from core.providers.fake.mcp import parse_overrides

    endpoint = HttpEndpoint("http://127.0.0.1:4242/mcp", "sbtok_" + "x" * 37)
    server = McpServer((), AGENT_TOOL_ENV, (), endpoint)
    plan = get_adapter("codex").launch_plan(LaunchAction.RESUME, SID, CONTROL_TEMPLATE, None,
                                            mcp_server=server)
    flags, rest = plan.argv[1:5], plan.argv[5:]
    assert rest == ("resume", SID, CONTROL_TEMPLATE)
    assert flags[0::2] == ("-c", "-c")
    assert parse_overrides(list(flags[1::2])) == {"mcp_servers": {"switchboard": {
        "url": endpoint.url, "bearer_token_env_var": "SWITCHBOARD_MCP_TOKEN"}}}
    assert plan.env_dict == {"SWITCHBOARD_MCP_TOKEN": endpoint.token}
    assert not any(endpoint.token in part for part in plan.argv)  # never on a command line
    assert ENV_CAPABILITY in AGENT_TOOL_ENV and "TMUX_PANE" in AGENT_TOOL_ENV
    assert not any("sbcap1_" in part for part in plan.argv)  # names only, never values


@pytest.mark.parametrize(("pairs", "expected"), [
    (['a.b="x"', "a.c=[1, 2]"], {"a": {"b": "x", "c": [1, 2]}}),
    (["model=o3-mini"], {"model": "o3-mini"}),  # not TOML: taken literally, as Codex does
    (['k="quote \\" and \\u007f"'], {"k": 'quote " and \x7f'}),
])
def test_fake_codex_reads_config_overrides_like_codex(pairs, expected):
    from core.providers.fake.mcp import parse_overrides

    assert parse_overrides(pairs) == expected


@pytest.mark.parametrize(("pair", "message"), [
    ("novalue", "Invalid override (missing '='): novalue"),
    ("=1", "Empty key in override: =1"),
    (" =1", "Empty key in override:  =1"),
])
def test_fake_codex_refuses_an_override_as_codex_does(pair, message):
    """Codex 0.171.0 refuses only these two shapes (``.x=1``, ``a..b=1`` pass its parse)."""
    from core.providers.fake.mcp import OverrideError, parse_overrides

    with pytest.raises(OverrideError) as caught:
        parse_overrides([pair])
    assert str(caught.value) == message


def test_fake_codex_starts_mcp_servers_in_a_cleared_environment():
    from core.providers.fake.mcp import StdioServer

    server = StdioServer.from_config({"mcp_servers": {"switchboard": {
        "command": "x", "env_vars": ["SWITCHBOARD_CAPABILITY"]}}}, "switchboard")
    parent = {"PATH": "/bin", "HOME": "/root", "SWITCHBOARD_CAPABILITY": "c",
              "SWITCHBOARD_HOME": "/h", "SECRET_TOKEN": "t"}
    assert server.environment(parent) == {"PATH": "/bin", "HOME": "/root",
                                          "SWITCHBOARD_CAPABILITY": "c"}
    assert StdioServer.from_config({}, "switchboard") is None


def test_command_override_for_the_fake_agent():
    fake = ("python3", "-m", "core.providers.fake.agent", "--provider", "codex")
    plan = get_adapter("codex", fake).launch_plan("resume", SID, None, None)
    assert plan.argv == (*fake, "resume", SID)


@pytest.mark.parametrize(
    ("provider", "action", "session_id", "prompt", "settings"),
    [
        ("claude", "new", None, None, None),
        ("claude", "resume", None, None, None),
        ("claude", "new", "not-a-uuid", None, None),
        ("claude", "new", SID.replace("-", ""), None, None),
        ("claude", "new", "{" + SID + "}", None, None),
        ("claude", "new", SID, "--dangerously-skip-permissions", None),
        ("claude", "new", SID, "", None),
        ("claude", "new", SID, "a\x00b", None),
        ("claude", "new", SID, None, Path("relative.json")),
        ("codex", "new", SID, None, None),
        ("codex", "resume", None, None, None),
        ("codex", "resume", "thread-1", None, None),
        ("codex", "new", None, "-c model=x", None),
        ("codex", "new", None, None, Path("rel/home")),
    ],
)
def test_launch_shapes_that_fail_closed(provider, action, session_id, prompt, settings):
    with pytest.raises(ProviderError) as caught:
        get_adapter(provider).launch_argv(action, session_id, prompt, settings)
    assert caught.value.code == "launch_invalid"
