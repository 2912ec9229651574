"""Gemini CLI's adapter pieces (issue 41): argv, the per-launch home, hooks as data.

The recorded payloads of Gemini CLI 0.61.0 are replayed through the outcome table; the
per-launch home is built in a real folder from a person's own ``~/.gemini``.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from core.model.enums import LaunchAction, Provider
from core.model.errors import ConfigError, ProviderError
from core.model.session_enums import Activity, ActivityReason, RuntimePresence
from core.providers.agent_http import ENV_TOKEN, HttpEndpoint
from core.providers.base import HookPlace, LaunchInputs, McpServer
from core.providers.gemini import (
    GEMINI_HOME_ENV,
    GEMINI_HOOK_EVENTS,
    MCP_SERVER_NAME,
    POLICY_FILE,
    TRUST_FILE_ENV,
    GeminiAdapter,
    launch_argv,
    person_gemini_dir,
    person_trust_file,
    plan,
    render_policy,
    write_overlay,
)
from core.providers.gemini_hooks import GEMINI_OUTCOMES
from core.providers.gemini_usage import read_gemini
from core.providers.hooks import HookKind, parse_hook

RECORDING = (Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
             / "gemini-0.61.0.tsv")
SID = "3f0c8a52-1111-4222-8333-944455556677"
HOOK = ("/opt/sb/switchboard", "hook")
TOOLS = McpServer(argv=("/opt/sb/mcp", "--serve"), env_vars=("SWITCHBOARD_CAP",),
                  approved_tools=("transition_claim", "task_push"))


def _recorded() -> list[tuple[str, dict[str, object]]]:
    rows = []
    for line in RECORDING.read_text(encoding="utf-8").splitlines():
        event, payload = line.split("\t", 1)
        rows.append((event, json.loads(payload)))
    return rows


def test_the_recording_replays_working_needs_input_and_ready_in_order() -> None:
    rows = _recorded()
    assert {event for event, _ in rows} <= set(GEMINI_HOOK_EVENTS)
    seen = []
    for event, document in rows:
        assert document["hook_event_name"] == event
        parsed = parse_hook("gemini", event, json.dumps(document))
        assert parsed.kind is HookKind(GEMINI_OUTCOMES[event][0])
        seen.append((event, parsed.activity, parsed.activity_reason, parsed.runtime))
    # the TOOLTEST turn: prompt, tool, the permission dialog, the tool ran, turn end
    turn = [row for row in seen[3:8]]
    assert turn == [
        ("BeforeAgent", Activity.WORKING, None, None),
        ("BeforeTool", Activity.WORKING, None, None),
        ("Notification", Activity.NEEDS_INPUT, ActivityReason.PERMISSION, None),
        ("AfterTool", Activity.WORKING, None, None),
        ("AfterAgent", Activity.READY, ActivityReason.TURN_COMPLETE, None),
    ]
    assert seen[0][3] is RuntimePresence.LIVE and seen[8][3] is RuntimePresence.STOPPED
    resumed = [doc for event, doc in rows if event == "SessionStart"
               and doc.get("source") == "resume"]
    assert resumed and resumed[0]["session_id"] == rows[0][1]["session_id"]


def test_an_other_notification_changes_nothing() -> None:
    for event, extra in (("Notification", {"notification_type": "Other"}), ("BeforeModel", {})):
        parsed = parse_hook("gemini", event, json.dumps(
            {"session_id": SID, "hook_event_name": event, **extra}))
        assert (parsed.activity, parsed.activity_reason, parsed.runtime) == (None, None, None)


def test_new_and_resume_name_the_exact_session() -> None:
    assert launch_argv(("gemini",), LaunchAction.NEW, SID, None) == (
        "gemini", "--session-id", SID)
    assert launch_argv(("gemini",), LaunchAction.RESUME, SID, "go on") == (
        "gemini", "--resume", SID, "--prompt-interactive", "go on")


@pytest.mark.parametrize("bad", ["notauuid", "latest", "5", "{" + SID + "}", ""])
def test_a_session_id_gemini_would_take_but_is_not_a_uuid_is_refused(bad: str) -> None:
    # Gemini CLI itself starts a session named "notauuid" (seen with 0.61.0); --resume
    # also takes "latest" and an index, which would pick some other session.
    for action in (LaunchAction.NEW, LaunchAction.RESUME):
        with pytest.raises(ProviderError) as raised:
            launch_argv(("gemini",), action, bad, None)
        assert raised.value.code == "launch_invalid"


def test_a_prompt_that_reads_as_an_option_is_refused() -> None:
    with pytest.raises(ProviderError, match="option"):
        launch_argv(("gemini",), LaunchAction.NEW, SID, "--yolo")


def _person(tmp_path: Path) -> Path:
    gemini = tmp_path / "person" / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "settings.json").write_text(
        '{\n  // mine\n  "security": {"auth": {"selectedType": "gemini-api-key"}},\n'
        '  "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify-me"}]}]},'
        '\n  "mcpServers": {"theirs": {"command": "their-server"}}\n}\n', encoding="utf-8")
    (gemini / "oauth_creds.json").write_text("{}", encoding="utf-8")
    (gemini / "trustedFolders.json").write_text("{}", encoding="utf-8")
    return gemini


def test_the_launch_home_adds_ours_and_links_the_rest_of_theirs(tmp_path: Path) -> None:
    person = _person(tmp_path)
    before = (person / "settings.json").read_bytes()
    home = write_overlay(tmp_path / "run", person, HOOK, TOOLS)
    ours = home / ".gemini" / "settings.json"
    settings = json.loads(ours.read_text(encoding="utf-8"))
    assert stat.S_IMODE(ours.stat().st_mode) == 0o600
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    after_agent = settings["hooks"]["AfterAgent"]
    assert after_agent[0]["hooks"][0]["command"] == "notify-me"  # theirs first, kept
    assert after_agent[1]["hooks"][0]["command"] == (
        "/opt/sb/switchboard hook --provider gemini AfterAgent")
    assert set(settings["hooks"]) == set(GEMINI_HOOK_EVENTS)
    assert settings["mcpServers"]["theirs"] == {"command": "their-server"}
    assert settings["mcpServers"][MCP_SERVER_NAME] == {
        "command": "/opt/sb/mcp", "args": ["--serve"],
        "env": {"SWITCHBOARD_CAP": "$SWITCHBOARD_CAP"}}
    for name in ("oauth_creds.json", "tmp"):
        link = home / ".gemini" / name
        assert link.is_symlink() and link.resolve() == (person / name).resolve()
    # trust is read and saved in their own file, named by the launch's environment: a
    # link here would be replaced by the CLI's rename and the answer kept per launch
    assert not (home / ".gemini" / "trustedFolders.json").exists()
    assert (person / "settings.json").read_bytes() == before  # theirs untouched
    assert sorted(p.name for p in person.iterdir()) == [
        "oauth_creds.json", "settings.json", "tmp", "trustedFolders.json"]


def test_an_http_token_stays_in_the_environment_never_in_a_file(tmp_path: Path) -> None:
    _person(tmp_path)
    secret = "tok-" + "9" * 40
    tools = McpServer(argv=("/opt/sb/mcp",), env_vars=(),
                      approved_tools=("transition_claim",),
                      http=HttpEndpoint("http://127.0.0.1:7/mcp", secret))
    launch = plan(("gemini",), LaunchAction.NEW, SID, None, tmp_path / "run", HOOK, tools,
                  {"HOME": str(tmp_path / "person")})
    env = dict(launch.env)
    assert env[ENV_TOKEN] == secret
    assert env[GEMINI_HOME_ENV] == str(tmp_path / "run" / "gemini-home")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert secret not in path.read_text(encoding="utf-8"), path
    settings = json.loads((tmp_path / "run" / "gemini-home" / ".gemini" / "settings.json")
                          .read_text(encoding="utf-8"))
    assert settings["mcpServers"][MCP_SERVER_NAME] == {
        "httpUrl": "http://127.0.0.1:7/mcp",
        "headers": {"Authorization": f"Bearer ${ENV_TOKEN}"}}
    policy = launch.argv[launch.argv.index("--policy") + 1]
    assert Path(policy).read_text(encoding="utf-8") == render_policy(tools)


def test_the_policy_allows_exactly_the_approved_tools_of_our_server() -> None:
    text = render_policy(TOOLS)
    assert text.count("[[rule]]") == 2
    assert 'toolName = "transition_claim"\nmcpName = "switchboard"\ndecision = "allow"' in text


def test_broken_settings_of_theirs_are_refused_by_name_and_nothing_is_written(
        tmp_path: Path) -> None:
    person = _person(tmp_path)
    (person / "settings.json").write_text("{ not json", encoding="utf-8")
    with pytest.raises(ProviderError, match="settings.json is not valid JSON"):
        write_overlay(tmp_path / "run", person, HOOK, TOOLS)
    assert not (tmp_path / "run").exists()


def test_the_person_gemini_home_follows_their_own_variable(tmp_path: Path) -> None:
    assert person_gemini_dir({"HOME": "/h"}) == Path("/h/.gemini")
    assert person_gemini_dir({"HOME": "/h", GEMINI_HOME_ENV: "/g"}) == Path("/g/.gemini")


def test_a_launch_names_the_person_trust_file(tmp_path: Path) -> None:
    """An answer to the trust question lands in the person's own file (issue 41): the
    launch names it; their own variable wins; an overlay's old link to it is dropped."""
    person = _person(tmp_path)
    (tmp_path / "run" / "gemini-home" / ".gemini").mkdir(parents=True)
    (tmp_path / "run" / "gemini-home" / ".gemini" / "trustedFolders.json").symlink_to(
        person / "trustedFolders.json")
    launch = plan(("gemini",), LaunchAction.NEW, SID, None, tmp_path / "run", HOOK, TOOLS,
                  {"HOME": str(tmp_path / "person")})
    assert dict(launch.env)[TRUST_FILE_ENV] == str(person / "trustedFolders.json")
    assert not (tmp_path / "run" / "gemini-home" / ".gemini" / "trustedFolders.json").exists()
    assert (person / "trustedFolders.json").read_text(encoding="utf-8") == "{}"
    assert person_trust_file({"HOME": "/h", GEMINI_HOME_ENV: "/g"}) == Path(
        "/g/.gemini/trustedFolders.json")
    assert person_trust_file({"HOME": "/h", TRUST_FILE_ENV: "/t/trust.json"}) == Path(
        "/t/trust.json")


# --------------------------------------------------------------------------- the adapter


def _inputs(tmp_path: Path, **changes: object) -> LaunchInputs:
    run = tmp_path / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    fields: dict[str, object] = dict(
        action=LaunchAction.NEW, session_id=SID, initial_prompt=None, run_dir=run,
        launch_id="l-1", hook_command=HOOK, agent_tools=TOOLS)
    fields.update(changes)
    return LaunchInputs(**fields)  # type: ignore[arg-type]


def test_the_adapter_plans_a_launch_without_ci_variables(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "person"))
    monkeypatch.delenv(GEMINI_HOME_ENV, raising=False)
    monkeypatch.setenv("CI_JOB_TOKEN", "x")
    adapter = GeminiAdapter(command=("/opt/gemini",))
    launched = adapter.plan(_inputs(tmp_path, initial_prompt="go on"))
    assert launched.provider is Provider.GEMINI and launched.session_id == SID
    argv = launched.argv
    start = argv.index("/opt/gemini")
    unset = argv[1:start]
    assert argv[0] == "env" and unset[::2] == ("-u",) * (len(unset) // 2)
    assert {"CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "CI_JOB_TOKEN"} == set(unset[1::2])
    assert argv[start:] == ("/opt/gemini", "--policy", str(tmp_path / "run" / POLICY_FILE),
                            "--session-id", SID, "--prompt-interactive", "go on")
    assert launched.env_dict[GEMINI_HOME_ENV] == str(tmp_path / "run" / "gemini-home")
    assert adapter.new_session_id(SID) == SID


def test_the_adapter_resumes_by_id_and_refuses_a_fork_and_a_bad_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "person"))
    adapter = GeminiAdapter()
    resumed = adapter.plan(_inputs(tmp_path, action=LaunchAction.RESUME))
    assert resumed.argv[-2:] == ("--resume", SID)
    with pytest.raises(ProviderError, match="cannot fork"):
        adapter.plan(_inputs(tmp_path, fork_from=SID))
    with pytest.raises(ProviderError, match="UUID"):
        adapter.plan(_inputs(tmp_path, session_id="pending-123"))
    with pytest.raises(ProviderError, match="settings file"):
        adapter.launch_plan(LaunchAction.NEW, SID, None, tmp_path / "s.json")


def test_hooks_install_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="gemini"):
        GeminiAdapter().hook_location(HookPlace(project=Path("/p")))


# --------------------------------------------------------------------------- usage


def _line(**fields: object) -> bytes:
    return (json.dumps(fields) + "\n").encode()


def test_usage_counts_each_reply_once_and_never_a_replayed_history() -> None:
    reply = dict(id="a1", type="gemini", model="gemini-3.1-pro-preview",
                 tokens={"input": 1234, "output": 56, "cached": 789, "thoughts": 7,
                         "tool": 3, "total": 1297})
    data = (_line(sessionId=SID, kind="main") + _line(id="u1", type="user", content=[])
            + _line(**reply) + _line(**{"$set": {"lastUpdated": "x"}}) + b'{"id": "half')
    batch = read_gemini(data, {})
    usage = batch.per_model["gemini-3.1-pro-preview"]
    assert usage.requests == 1
    assert usage.tokens.as_list() == [1234 - 789 + 3, 56 + 7, 789, 0, 7]
    assert batch.offset == data.rfind(b"\n") + 1  # the unfinished line waits
    again = read_gemini(_line(**reply), batch.state)  # the same message: nothing more
    assert again.empty
    # a resumed session's new file starts with the whole history: never counted again
    history = _line(**{"$set": {"messages": [reply, dict(reply, id="a2")]}})
    assert read_gemini(history, {}).empty


def test_a_bad_count_skips_its_line_only() -> None:
    data = (_line(id="b", type="gemini", tokens={"input": -1})
            + _line(id="c", type="gemini", model="m", tokens={"input": 10, "output": 2}))
    batch = read_gemini(data, {})
    assert batch.bad_lines == 1 and batch.per_model["m"].tokens.total == 12
    assert GeminiAdapter().read_usage(data, {}).per_model["m"].requests == 1
