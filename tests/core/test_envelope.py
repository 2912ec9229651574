"""Canonical JSON envelopes: ceilings, rejection rules, references and round trips."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import uuid
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.model.enums import (
    Actionability,
    ActivationState,
    Activity,
    BackgroundState,
    ClaimState,
    CloseReason,
    ControlKind,
    ControlState,
    ControlTransport,
    CreatedBy,
    DirectiveKind,
    FrameLifecycle,
    FrameRole,
    MembershipReason,
    PlacementState,
    Provider,
    Reachability,
    RecoveryState,
    Resumability,
    RuntimePresence,
    SurfaceState,
    TransitionKind,
    TransitionState,
    TransportPhase,
    ViewMode,
    ViewState,
)
from core.model.errors import EnvelopeError
from core.model.text import UNSAFE_CHARS
from core.state.envelope import (
    MAX_ARRAY_ITEMS,
    MAX_DEPTH,
    MAX_ENCODED_BYTES,
    MAX_OBJECT_KEYS,
    MAX_SAFE_INT,
    MAX_STRING_BYTES,
    decode_checked,
    encode_canonical,
    sensitive_reason,
)
from core.state.state_types import (
    BreadcrumbItem,
    DirectiveError,
    FrameSummary,
    HostCheckout,
    HostControlTurn,
    HostFrame,
    HostFrameSession,
    HostInfo,
    HostPlacement,
    HostProject,
    HostProjectRepository,
    HostRecovery,
    HostRepository,
    HostRow,
    HostSession,
    HostState,
    HostSurface,
    HostTransition,
    HostView,
    HostWorkContext,
    NavigatorState,
    PresentationDirective,
    ProjectRow,
    RecoveryRow,
    SessionSummary,
    StateWarning,
    TruncatedArray,
    Truncation,
    ViewRow,
)


def _id(n: int) -> str:
    return str(uuid.UUID(int=(0x5B << 120) | n, version=4))


HOST, REMOTE, GEN, REMOTE_GEN = _id(1), _id(2), _id(3), _id(4)
PROJECT, CHECKOUT, REPO, CONTEXT = _id(10), _id(11), _id(12), _id(13)
WORKSPACE, TASK, CLOSED_TASK = _id(20), _id(21), _id(22)
VIEW, PLACEMENT, SURFACE, TRANSITION, TURN, RECOVERY = (_id(n) for n in range(30, 36))
SESSION = f"{HOST}:claude:{_id(40)}"
CHILD_SESSION = f"{HOST}:codex:{_id(41)}"
REMOTE_PROJECT, REMOTE_FRAME, REMOTE_VIEW = _id(50), _id(51), _id(52)
TOKEN = "dK3v9Q_x-2aBcDeFgHiJkLmN"


def host_state() -> HostState:
    return HostState(
        generation_id=GEN,
        activation_state=ActivationState.COMMITTED,
        generated_at=1_780_000_000_000,
        host=HostInfo(host_id=HOST, display_name="workstation"),
        projects=(HostProject(project_id=PROJECT, name="Switchboard", checkout_id=CHECKOUT,
                              preferred_provider=Provider.CLAUDE),),
        repositories=(HostRepository(repository_id=REPO, name="switchboard"),),
        project_repositories=(HostProjectRepository(project_id=PROJECT, repository_id=REPO),),
        checkouts=(HostCheckout(checkout_id=CHECKOUT, repository_id=REPO),),
        work_contexts=(HostWorkContext(
            work_context_id=CONTEXT, project_id=PROJECT, checkout_id=CHECKOUT,
            claim_state=ClaimState.HELD, claim_generation=4, foreground_frame_id=TASK,
            background_state=BackgroundState.SAFE, updated_at=5),),
        frames=(
            HostFrame(frame_id=WORKSPACE, project_id=PROJECT, role=FrameRole.WORKSPACE,
                      work_context_id=CONTEXT, title="Switchboard", current_session_key=SESSION,
                      lifecycle_state=FrameLifecycle.OPEN, created_by=CreatedBy.USER,
                      created_at=1, updated_at=2),
            HostFrame(frame_id=TASK, project_id=PROJECT, role=FrameRole.TASK,
                      parent_frame_id=WORKSPACE, work_context_id=CONTEXT, title="Fix the parser",
                      current_session_key=CHILD_SESSION, lifecycle_state=FrameLifecycle.OPEN,
                      created_by=CreatedBy.AGENT, created_at=3, updated_at=4),
            HostFrame(frame_id=CLOSED_TASK, project_id=PROJECT, role=FrameRole.TASK,
                      parent_frame_id=WORKSPACE, work_context_id=CONTEXT, title="Old",
                      lifecycle_state=FrameLifecycle.CLOSED, close_reason=CloseReason.DISMISSED,
                      created_by=CreatedBy.USER, created_at=3, updated_at=4),
        ),
        frame_sessions=(
            HostFrameSession(frame_session_id=_id(60), frame_id=WORKSPACE, session_key=SESSION,
                             ordinal=1, membership_reason=MembershipReason.STARTED, joined_at=1),
            HostFrameSession(frame_session_id=_id(61), frame_id=TASK, session_key=CHILD_SESSION,
                             ordinal=1, membership_reason=MembershipReason.STARTED, joined_at=3),
        ),
        sessions=(
            HostSession(session_key=SESSION, provider=Provider.CLAUDE,
                        provider_session_id=_id(40), project_id=PROJECT,
                        runtime_presence=RuntimePresence.LIVE,
                        resumability=Resumability.RESUMABLE, activity=Activity.READY,
                        last_observed_at=9, updated_at=9),
            HostSession(session_key=CHILD_SESSION, provider=Provider.CODEX,
                        provider_session_id=_id(41), runtime_presence=RuntimePresence.LIVE,
                        resumability=Resumability.UNKNOWN, activity=Activity.WORKING,
                        last_observed_at=9, updated_at=9),
        ),
        surfaces=(HostSurface(surface_id=SURFACE, provider=Provider.CODEX,
                              session_key=CHILD_SESSION, lifecycle_state=SurfaceState.LIVE,
                              updated_at=7),),
        views=(HostView(view_id=VIEW, mode=ViewMode.NAVIGATOR, state=ViewState.READY,
                        revision=12, active_frame_id=TASK, created_at=1, updated_at=8),),
        placements=(HostPlacement(placement_id=PLACEMENT, view_id=VIEW, frame_id=TASK,
                                  surface_id=SURFACE, state=PlacementState.ACTIVE,
                                  generation=2, updated_at=8),),
        transitions=(HostTransition(transition_id=TRANSITION, view_id=VIEW,
                                    kind=TransitionKind.PUSH, source_frame_id=WORKSPACE,
                                    target_frame_id=TASK, work_context_id=CONTEXT,
                                    state=TransitionState.AWAITING_CLAIM,
                                    transport_phase=TransportPhase.COMMITTED,
                                    created_at=6, updated_at=7),),
        control_turns=(HostControlTurn(control_turn_id=TURN, transition_id=TRANSITION,
                                       target_frame_id=TASK, target_session_key=CHILD_SESSION,
                                       kind=ControlKind.CLAIM_BRIEF,
                                       transport=ControlTransport.LIVE_INPUT,
                                       state=ControlState.SUBMITTED, submission_count=1,
                                       submitted_at=7),),
        recoveries=(HostRecovery(recovery_id=RECOVERY, kind="pane_vanished",
                                 subject_type="surface", subject_id=SURFACE,
                                 actionability=Actionability.OPEN_VIEW,
                                 state=RecoveryState.OPEN,
                                 explanation="The agent's pane disappeared.",
                                 created_at=8, updated_at=8),),
        warnings=(StateWarning(code="clock_skew", message="Clock differs by 3 s", host_id=HOST),),
    )


def navigator_state() -> NavigatorState:
    session = SessionSummary(provider=Provider.CODEX, runtime_presence=RuntimePresence.LIVE,
                             resumability=Resumability.RESUMABLE, activity=Activity.WORKING,
                             updated_at=9)
    return NavigatorState(
        generation_id=GEN,
        generated_at=1_780_000_000_000,
        local_host_id=HOST,
        hosts=(
            HostRow(host_id=HOST, display_name="workstation", generation_id=GEN, stale=False,
                    reachability=Reachability.ONLINE),
            HostRow(host_id=REMOTE, display_name="build box", generation_id=REMOTE_GEN,
                    stale=True, reachability=Reachability.OFFLINE, observed_at=5),
        ),
        views=(
            ViewRow(view_id=VIEW, host_id=HOST, mode=ViewMode.NAVIGATOR, state=ViewState.READY,
                    revision=12, active_frame_id=TASK, active_project_id=PROJECT,
                    title="Fix the parser",
                    breadcrumb=(BreadcrumbItem(frame_id=WORKSPACE, title="Switchboard"),
                                BreadcrumbItem(frame_id=TASK, title="Fix the parser")),
                    activity=Activity.WORKING, attention=True,
                    transition_state=TransitionState.AWAITING_CLAIM,
                    control_state=ControlState.SUBMITTED, last_activity_at=9),
            ViewRow(view_id=REMOTE_VIEW, host_id=REMOTE, mode=ViewMode.DIRECT,
                    state=ViewState.DEGRADED, revision=0, title="", activity=Activity.UNKNOWN),
        ),
        projects=(
            ProjectRow(project_id=PROJECT, host_id=HOST, name="Switchboard", frames=(
                FrameSummary(frame_id=WORKSPACE, title="Switchboard", role=FrameRole.WORKSPACE,
                             lifecycle_state=FrameLifecycle.OPEN, activity=Activity.READY,
                             session_count=1),
                FrameSummary(frame_id=TASK, title="Fix the parser", role=FrameRole.TASK,
                             parent_frame_id=WORKSPACE, lifecycle_state=FrameLifecycle.OPEN,
                             activity=Activity.WORKING, current_session=session,
                             session_count=1),
                FrameSummary(frame_id=CLOSED_TASK, title="Old", role=FrameRole.TASK,
                             parent_frame_id=WORKSPACE, lifecycle_state=FrameLifecycle.CLOSED,
                             close_reason=CloseReason.COMPLETED, activity=Activity.COMPLETED,
                             session_count=0),
            )),
            ProjectRow(project_id=REMOTE_PROJECT, host_id=REMOTE, name="Remote", frames=(
                FrameSummary(frame_id=REMOTE_FRAME, title="ws", role=FrameRole.WORKSPACE,
                             lifecycle_state=FrameLifecycle.OPEN, activity=Activity.UNKNOWN,
                             session_count=0),
            )),
        ),
        recoveries=(RecoveryRow(recovery_id=RECOVERY, host_id=HOST, kind="pane_vanished",
                                subject_type="surface", subject_id=SURFACE,
                                actionability=Actionability.SAFE_AUTO, state=RecoveryState.OPEN,
                                explanation="Pane vanished; reopen the view.", created_at=8),),
        warnings=(StateWarning(code="host_stale", message="build box is offline",
                               host_id=REMOTE),),
        truncation=Truncation(truncated=True, omitted=(
            TruncatedArray(field_name="projects[*].frames", omitted_count=3),)),
    )


def directive(kind: DirectiveKind = DirectiveKind.ATTACH) -> PresentationDirective:
    if kind is DirectiveKind.BLOCKED:
        return PresentationDirective(
            request_id=_id(70), host_id=HOST, kind=kind,
            error=DirectiveError(code="desktop_launch_in_progress",
                                 message="Another request is opening this view."))
    return PresentationDirective(
        request_id=_id(70), host_id=HOST, kind=kind, view_id=VIEW, view_revision=12,
        desktop_token=TOKEN,
        lease_expires_at=1_780_000_030_000 if kind is DirectiveKind.ATTACH else None)


SAMPLES = {
    "host": (host_state, HostState),
    "navigator": (navigator_state, NavigatorState),
    "directive": (directive, PresentationDirective),
}


def _obj(name: str) -> dict[str, Any]:
    build, _ = SAMPLES[name]
    return json.loads(encode_canonical(build()))


def _reject(data: Any, schema: Any = None) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data, allow_nan=True).encode()
    with pytest.raises(EnvelopeError) as caught:
        decode_checked(raw, schema=schema)
    return caught.value.message


# --------------------------------------------------------------------------- canonical form


@pytest.mark.parametrize("name", SAMPLES)
def test_typed_round_trip_is_canonical(name: str) -> None:
    build, schema = SAMPLES[name]
    envelope = build()
    data = encode_canonical(envelope)
    assert data == json.dumps(json.loads(data), sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False).encode()
    decoded = decode_checked(data, schema=schema)
    assert encode_canonical(decoded) == data
    assert decoded == envelope


def test_structural_arrays_are_ordered_by_host_then_id() -> None:
    state = navigator_state()
    shuffled = NavigatorState(**{**state.__dict__, "views": tuple(reversed(state.views)),
                                 "hosts": tuple(reversed(state.hosts)),
                                 "projects": tuple(reversed(state.projects))})
    assert encode_canonical(shuffled) == encode_canonical(state)
    obj = json.loads(encode_canonical(state))
    keys = [(view["hostId"], view["viewId"]) for view in obj["views"]]
    assert keys == sorted(keys)
    # The breadcrumb is a path, not a set: its order is kept.
    assert [c["title"] for c in obj["views"][0]["breadcrumb"]] == ["Switchboard",
                                                                   "Fix the parser"]


def test_contract_top_level_fields_are_exactly_present() -> None:
    assert set(_obj("host")) == {
        "schemaVersion", "protocolVersion", "hostStateVersion", "generationId",
        "activationState", "generatedAt", "host", "projects", "repositories",
        "projectRepositories", "checkouts", "workContexts", "frames", "frameSessions",
        "sessions", "surfaces", "views", "placements", "transitions", "controlTurns",
        "recoveries", "warnings", "truncation",
    }
    assert set(_obj("navigator")) == {
        "schemaVersion", "protocolVersion", "navigatorVersion", "generationId", "generatedAt",
        "localHostId", "hosts", "views", "projects", "recoveries", "warnings", "truncation",
    }


def test_desktop_token_is_not_in_repr() -> None:
    assert TOKEN not in repr(directive())
    assert TOKEN.encode() in encode_canonical(directive())


# --------------------------------------------------------------------------- generic JSON


_keys = st.from_regex(r"\A[a-z][a-zA-Z]{0,10}\Z").filter(
    lambda key: sensitive_reason(key, True) is None)
_safe_text = st.text(max_size=30).filter(lambda s: UNSAFE_CHARS.search(s) is None)
_scalars = (st.none() | st.booleans() | st.integers(-MAX_SAFE_INT, MAX_SAFE_INT)
            | st.floats(allow_nan=False, allow_infinity=False) | _safe_text)
# Prefixed so they can never collide with a field the schema knows.
_future_keys = _keys.map(lambda key: "zz" + key).filter(
    lambda key: sensitive_reason(key, True) is None)
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_keys, children,
                                                                      max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_generic_canonical_round_trip(value: Any) -> None:
    data = encode_canonical(value)
    decoded = decode_checked(data, schema=None)
    assert encode_canonical(decoded) == data
    assert data == json.dumps(value, sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False).encode()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, MAX_DEPTH + 20))
def test_depth_ceiling(depth: int) -> None:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    if depth <= MAX_DEPTH:
        assert decode_checked(encode_canonical(value), schema=None) == value
    else:
        message = _reject(value)
        assert "deeper than 32" in message
        assert message.startswith("$" + "[0]" * MAX_DEPTH + ":")
        with pytest.raises(EnvelopeError, match="deeper"):
            encode_canonical(value)


def test_pathological_nesting_is_refused_not_crashed() -> None:
    assert "deeper than 32" in _reject(b"[" * 100_000 + b"]" * 100_000)


@settings(max_examples=40, deadline=None)
@given(st.integers(MAX_STRING_BYTES // 3 - 5, MAX_STRING_BYTES // 3 + 5),
       st.sampled_from(["a", "é", "€"]))
def test_string_ceiling_counts_utf8_bytes(count: int, ch: str) -> None:
    text = ch * (count * 3 // len(ch.encode()))
    size = len(text.encode())
    value = {"note": text}
    if size <= MAX_STRING_BYTES:
        assert decode_checked(encode_canonical(value), schema=None) == value
    else:
        assert _reject(value).startswith("$.note: string is")
        with pytest.raises(EnvelopeError, match=r"\$\.note"):
            encode_canonical(value)


def test_long_keys_count_too() -> None:
    message = _reject({"k" * (MAX_STRING_BYTES + 1): 1})
    assert "key is" in message


@settings(max_examples=30, deadline=None)
@given(st.integers(MAX_OBJECT_KEYS - 3, MAX_OBJECT_KEYS + 3))
def test_object_key_ceiling(count: int) -> None:
    value = {"outer": {f"k{i}": i for i in range(count)}}
    if count <= MAX_OBJECT_KEYS:
        decode_checked(encode_canonical(value), schema=None)
    else:
        assert _reject(value).startswith("$.outer: object has")


@pytest.mark.parametrize("count", [MAX_ARRAY_ITEMS, MAX_ARRAY_ITEMS + 1])
def test_array_item_ceiling(count: int) -> None:
    value = {"items": [0] * count}
    if count <= MAX_ARRAY_ITEMS:
        decode_checked(encode_canonical(value), schema=None)
    else:
        assert _reject(value).startswith("$.items: array has")


def test_encoded_size_ceiling() -> None:
    chunk = "x" * (MAX_STRING_BYTES - 16)
    value = [chunk] * (MAX_ENCODED_BYTES // len(chunk) + 1)
    with pytest.raises(EnvelopeError, match=r"^\$: encoded envelope is \d+ bytes"):
        encode_canonical(value)
    data = json.dumps(value).encode()
    assert _reject(data).startswith("$: encoded envelope is")


@settings(max_examples=100, deadline=None)
@given(json_values, st.sampled_from([float("nan"), float("inf"), float("-inf")]),
       st.lists(_keys, min_size=1, max_size=4))
def test_non_finite_numbers_are_rejected_with_their_path(
    value: Any, bad: float, path: list[str]
) -> None:
    nested: Any = bad
    for key in reversed(path):
        nested = {key: nested}
    envelope = {"base": value, "bad": nested}
    expected = "$.bad." + ".".join(path) + ":"
    with pytest.raises(EnvelopeError) as caught:
        encode_canonical(envelope)
    assert caught.value.message.startswith(expected)
    assert _reject(envelope).startswith(expected)


@pytest.mark.parametrize("text", [b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}',
                                  b'{"a":1e400}', b'{"a":9007199254740992}',
                                  b'{"a":-99999999999999999999999}'])
def test_non_finite_and_unsafe_numbers_in_text(text: bytes) -> None:
    assert _reject(text).startswith("$.a: number")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\x9b", "\u202e",
                                                     "\u2066", "\u2028"]),
    _safe_text, _safe_text, st.booleans(), _keys,
)
@example(control="\n", before="A", after="", in_key=True, key="a")
def test_terminal_controls_are_rejected_in_values_and_keys(
    control: str, before: str, after: str, in_key: bool, key: str
) -> None:
    text = before + control + after
    value = {"rows": [{text: 1}]} if in_key else {"rows": [{key: text}]}
    message = _reject(value)
    expected = f"$.rows[0][{json.dumps(text[:64])}]" if in_key else f"$.rows[0].{key}"
    assert message.startswith(expected + ":"), message
    assert "terminal control" in message
    with pytest.raises(EnvelopeError, match="terminal control"):
        encode_canonical(value)


def test_lone_surrogates_are_rejected() -> None:
    assert "terminal control" in _reject(b'{"a":"\\ud800"}')


def test_duplicate_keys_are_rejected_with_path() -> None:
    assert _reject(b'{"a":{"b":1,"b":2}}') == '$.a: duplicate key "b"'


def test_invalid_json_and_utf8() -> None:
    assert "invalid JSON" in _reject(b'{"a":')
    assert "line 1 column" in _reject(b'{"a":')
    assert "not UTF-8" in _reject(b'{"a":"\xff"}')


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["token", "prompt", "transcript", "argv", "secret", "password",
                     "credential", "capability", "apiKey", "PrivateKey"]),
    st.sampled_from(["", "x", "desktop", "session_", "my-"]),
    st.sampled_from(["", "Id", "_text", "s", "Value"]),
    st.sampled_from([str.lower, str.upper, str.title, str.strip]),
    st.booleans(),
)
def test_sensitive_keys_are_rejected_anywhere(
    stem: str, prefix: str, suffix: str, case: Any, nested: bool
) -> None:
    key = prefix + case(stem) + suffix
    row: dict[str, Any] = {"title": "t", key: "v"}
    value = {"views": [{"inner": row} if nested else row]}
    message = _reject(value)
    assert "sensitive" in message, key
    assert message.startswith("$.views[0]"), message
    with pytest.raises(EnvelopeError, match="sensitive"):
        encode_canonical(value)


@pytest.mark.parametrize("key", ["raw", "RAW", "rawOutput", "raw_text", "paneRaw", "output-raw",
                                 "RawEvent"])
def test_raw_as_a_word_is_sensitive(key: str) -> None:
    assert "sensitive" in _reject({key: 1})


def test_words_containing_raw_are_not_sensitive() -> None:
    assert sensitive_reason("drawerState", True) is None
    assert sensitive_reason("withdrawn", False) is None
    assert sensitive_reason("rawOutput", False) is not None
    assert sensitive_reason("observedPromptId", False) is not None


# --------------------------------------------------------------------------- typed envelopes


def test_navigator_state_never_carries_a_desktop_token() -> None:
    obj = _obj("navigator")
    obj["views"][0]["desktopToken"] = TOKEN
    assert _reject(obj, NavigatorState).startswith("$.views[0].desktopToken:")
    obj = _obj("navigator")
    obj["desktopToken"] = TOKEN
    assert _reject(obj, NavigatorState).startswith("$.desktopToken:")


def test_directive_allows_desktop_token_only_at_the_top() -> None:
    obj = _obj("directive")
    obj["error"] = {"code": "x", "message": "m", "desktopToken": TOKEN}
    assert _reject(obj, PresentationDirective).startswith("$.error.desktopToken:")


@pytest.mark.parametrize("key", ["paneId", "socketPath", "pid", "processId", "cwd", "briefBody",
                                 "env", "worktreePath"])
def test_state_envelopes_refuse_locator_keys(key: str) -> None:
    obj = _obj("host")
    obj["frames"][1][key] = "x"
    message = _reject(obj, HostState)
    assert message.startswith(f"$.frames[1].{key}:"), message


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(list(SAMPLES)), _future_keys, json_values, st.data())
def test_unknown_bounded_fields_are_accepted_and_dropped(
    name: str, key: str, extra: Any, data: st.DataObject
) -> None:
    build, schema = SAMPLES[name]
    canonical = encode_canonical(build())
    obj = json.loads(canonical)
    # Pick any object inside the envelope to carry the unknown field.
    objects: list[dict[str, Any]] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            objects.append(node)
            for child in node.values():
                collect(child)
        elif isinstance(node, list):
            for child in node:
                collect(child)

    collect(obj)
    target = data.draw(st.sampled_from(objects))
    if key in target:
        return
    target[key] = extra
    decoded = decode_checked(json.dumps(obj).encode(), schema=schema)
    assert encode_canonical(decoded) == canonical


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node: Any = obj
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()
MISSING_ID = _id(999)

HOST_REFERENCES = [
    "projectRepositories.0.projectId", "projectRepositories.0.repositoryId",
    "projects.0.checkoutId", "checkouts.0.repositoryId", "workContexts.0.projectId",
    "workContexts.0.checkoutId", "workContexts.0.foregroundFrameId", "frames.0.projectId",
    "frames.0.workContextId", "frames.1.parentFrameId", "frameSessions.0.frameId",
    "sessions.0.projectId", "views.0.activeFrameId", "placements.0.viewId",
    "placements.0.frameId", "placements.0.surfaceId", "transitions.0.viewId",
    "transitions.0.sourceFrameId", "transitions.0.targetFrameId",
    "transitions.0.workContextId", "controlTurns.0.transitionId",
    "controlTurns.0.targetFrameId",
]


def _json_path(dotted: str) -> str:
    out = "$"
    for part in dotted.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


@pytest.mark.parametrize("dotted", HOST_REFERENCES)
def test_host_state_dangling_references_name_their_path(dotted: str) -> None:
    obj = _obj("host")
    _set(obj, dotted, MISSING_ID)
    message = _reject(obj, HostState)
    assert message.startswith(_json_path(dotted) + ":"), message
    assert "not in this envelope" in message


@pytest.mark.parametrize("dotted", ["frames.0.currentSessionKey", "frameSessions.0.sessionKey",
                                    "surfaces.0.sessionKey", "controlTurns.0.targetSessionKey"])
def test_host_state_dangling_session_keys(dotted: str) -> None:
    obj = _obj("host")
    _set(obj, dotted, f"{HOST}:claude:{_id(998)}")
    assert _reject(obj, HostState).startswith(_json_path(dotted) + ":")


NAVIGATOR_REFERENCES = [
    ("localHostId", MISSING_ID), ("views.0.hostId", MISSING_ID),
    ("views.0.activeProjectId", MISSING_ID), ("views.0.activeFrameId", MISSING_ID),
    ("views.0.breadcrumb.1.frameId", MISSING_ID), ("projects.0.hostId", MISSING_ID),
    ("projects.0.frames.1.parentFrameId", REMOTE_FRAME), ("recoveries.0.hostId", MISSING_ID),
    ("warnings.0.hostId", MISSING_ID), ("views.0.activeFrameId", REMOTE_FRAME),
    ("hosts.0.generationId", REMOTE_GEN), ("hosts.1.hostId", HOST),
    ("projects.0.frames.1.frameId", WORKSPACE),  # one host repeating a frame id
]


@pytest.mark.parametrize(("dotted", "value"), NAVIGATOR_REFERENCES)
def test_navigator_state_invalid_references_name_their_path(dotted: str, value: str) -> None:
    obj = _obj("navigator")
    _set(obj, dotted, value)
    message = _reject(obj, NavigatorState)
    assert message.startswith(_json_path(dotted) + ":"), message


@pytest.mark.parametrize("dotted", ["projects.1.frames.0.frameId", "projects.1.projectId",
                                    "views.1.viewId"])
def test_another_host_may_reuse_this_hosts_ids(dotted: str) -> None:
    """Ids are unique per host (issue 37 item 5): a remote's rows reusing local ids are
    still a valid envelope, each known by (host id, entity id)."""
    obj = _obj("navigator")
    local = {"projects.1.frames.0.frameId": TASK, "projects.1.projectId": PROJECT,
             "views.1.viewId": VIEW}[dotted]
    _set(obj, dotted, local)
    decoded = decode_checked(json.dumps(obj).encode(), schema=NavigatorState)
    assert decoded.local_host_id == HOST


@pytest.mark.parametrize(
    ("name", "dotted", "value", "fragment"),
    [
        ("host", "schemaVersion", 2, "must be 1"),
        ("host", "schemaVersion", _DELETE, "is required"),
        ("navigator", "navigatorVersion", 1.0, "must be 1"),
        ("directive", "directiveVersion", True, "must be 1"),
        ("host", "views.0.revision", 12.0, "must be an integer"),
        ("host", "views.0.revision", True, "must be an integer"),
        ("host", "views.0.revision", -1, "must be an integer from 0"),
        ("host", "generatedAt", "soon", "must be an integer"),
        ("host", "generationId", "00000000-0000-0000-0000-000000000000", "non-nil"),
        ("host", "generationId", GEN.upper(), "lowercase UUID"),
        ("host", "frames.0.role", "root", "must be one of workspace, task"),
        ("host", "frames.0.title", 7, "must be a string"),
        ("host", "frames.0.title", "x" * 300, "at most 256"),
        ("host", "frames.0.parentFrameId", TASK, "must be absent for a workspace"),
        ("host", "frames.1.parentFrameId", _DELETE, "is required for a task"),
        ("host", "frames.0.closeReason", "completed", "absent while the frame is open"),
        ("host", "sessions.0.sessionKey", f"{REMOTE}:claude:{_id(40)}", "this host's id"),
        ("host", "sessions.0.providerSessionId", "other", "host_id:provider"),
        ("host", "controlTurns.0.submissionCount", 2, "from 0 to 1"),
        ("host", "recoveries.0.kind", "Pane Vanished", "lowercase identifier"),
        ("host", "frames", {}, "must be an array"),
        ("host", "host", [], "must be an object"),
        ("host", "truncation.truncated", True, "exactly when omitted"),
        ("navigator", "hosts.0.stale", "no", "true or false"),
        ("navigator", "views.0.breadcrumb", [{"frameId": TASK, "title": "t"}] * 65,
         "at most 64"),
        ("navigator", "hosts.0.reachability", "maybe", "online, offline, unknown"),
        ("navigator", "projects.0.frames.1.currentSession.provider", "aider",
         "codex, claude, gemini, opencode"),
    ],
)
def test_typed_field_errors_name_their_path(
    name: str, dotted: str, value: Any, fragment: str
) -> None:
    obj = _obj(name)
    _set(obj, dotted, value)
    message = _reject(obj, SAMPLES[name][1])
    assert message.startswith(_json_path(dotted) + ":"), message
    assert fragment in message, message


def test_duplicate_ids_are_rejected() -> None:
    obj = _obj("host")
    obj["frames"][2]["frameId"] = obj["frames"][0]["frameId"]
    assert _reject(obj, HostState).startswith("$.frames[")


# --------------------------------------------------------------------------- directive rules


@pytest.mark.parametrize("kind", list(DirectiveKind))
def test_each_directive_kind_round_trips(kind: DirectiveKind) -> None:
    envelope = directive(kind)
    assert decode_checked(encode_canonical(envelope), schema=PresentationDirective) == envelope


@pytest.mark.parametrize(
    ("kind", "key", "value", "path"),
    [
        ("focus", "viewId", _DELETE, "$.viewId"),
        ("attach", "viewRevision", _DELETE, "$.viewRevision"),
        ("focus", "desktopToken", _DELETE, "$.desktopToken"),
        ("attach", "leaseExpiresAt", _DELETE, "$.leaseExpiresAt"),
        ("focus", "leaseExpiresAt", 5, "$.leaseExpiresAt"),
        ("focus", "error", {"code": "x", "message": "m"}, "$.error"),
        ("blocked", "error", _DELETE, "$.error"),
        ("blocked", "desktopToken", TOKEN, "$.desktopToken"),
        ("blocked", "leaseExpiresAt", 5, "$.leaseExpiresAt"),
        ("attach", "desktopToken", "short", "$.desktopToken"),
        ("attach", "kind", "switch", "$.kind"),
    ],
)
def test_directive_requirements(kind: str, key: str, value: Any, path: str) -> None:
    obj = json.loads(encode_canonical(directive(DirectiveKind(kind))))
    _set(obj, key, value)
    assert _reject(obj, PresentationDirective).startswith(path + ":")


def test_encoding_an_invalid_directive_is_refused() -> None:
    bad = PresentationDirective(request_id=_id(70), host_id=HOST, kind=DirectiveKind.FOCUS)
    with pytest.raises(EnvelopeError, match=r"^\$\.viewId: is required for kind focus"):
        encode_canonical(bad)


def test_encoding_a_state_with_a_dangling_reference_is_refused() -> None:
    state = host_state()
    broken = HostState(**{**state.__dict__, "views": ()})
    with pytest.raises(EnvelopeError, match=r"^\$\.placements\[0\]\.viewId"):
        encode_canonical(broken)


# --------------------------------------------------------------------------- property: typed


@st.composite
def navigator_states(draw: st.DrawFn) -> NavigatorState:
    seed = draw(st.integers(0, 2**32))
    # Hash-derived ids: unique and unordered, without drawing 80 UUIDs one by one.
    ids = (str(uuid.UUID(bytes=hashlib.md5(f"{seed}:{n}".encode()).digest(), version=4))
           for n in itertools.count())
    titles = st.text(max_size=20).filter(lambda s: UNSAFE_CHARS.search(s) is None)
    hosts = [HostRow(host_id=next(ids), display_name="h", generation_id=next(ids),
                     stale=draw(st.booleans()), reachability=draw(st.sampled_from(Reachability)))
             for _ in range(draw(st.integers(1, 3)))]
    projects, frames_by_project = [], {}
    for _ in range(draw(st.integers(0, 4))):
        project_id, host = next(ids), draw(st.sampled_from(hosts))
        frames = [FrameSummary(frame_id=next(ids), title=draw(titles), role=FrameRole.WORKSPACE,
                               lifecycle_state=FrameLifecycle.OPEN, activity=Activity.READY,
                               session_count=draw(st.integers(0, 5)))]
        for _ in range(draw(st.integers(0, 5))):
            parent = draw(st.sampled_from(frames)).frame_id
            closed = draw(st.booleans())
            frames.append(FrameSummary(
                frame_id=next(ids), title=draw(titles), role=FrameRole.TASK,
                parent_frame_id=parent,
                lifecycle_state=FrameLifecycle.CLOSED if closed else FrameLifecycle.OPEN,
                close_reason=draw(st.sampled_from(CloseReason)) if closed else None,
                activity=draw(st.sampled_from(Activity)),
                current_session=draw(st.none() | st.builds(
                    SessionSummary, provider=st.sampled_from(Provider),
                    runtime_presence=st.sampled_from(RuntimePresence),
                    resumability=st.sampled_from(Resumability),
                    activity=st.sampled_from(Activity), updated_at=st.integers(0, 10**13))),
                session_count=draw(st.integers(0, 5))))
        projects.append(ProjectRow(project_id=project_id, host_id=host.host_id,
                                   name=draw(titles.filter(bool)),
                                   frames=tuple(draw(st.permutations(frames)))))
        frames_by_project[project_id] = (host.host_id, frames)
    views = []
    for _ in range(draw(st.integers(0, 4))):
        host = draw(st.sampled_from(hosts))
        own = [p for p, (h, _) in frames_by_project.items() if h == host.host_id]
        project_id = draw(st.sampled_from([None, *own]))
        frame_id = None
        crumbs: tuple[BreadcrumbItem, ...] = ()
        if project_id is not None:
            frame = draw(st.sampled_from(frames_by_project[project_id][1]))
            frame_id = frame.frame_id
            crumbs = (BreadcrumbItem(frame_id=frame_id, title=frame.title),)
        views.append(ViewRow(
            view_id=next(ids), host_id=host.host_id, mode=draw(st.sampled_from(ViewMode)),
            state=draw(st.sampled_from(ViewState)), revision=draw(st.integers(0, 10**6)),
            active_frame_id=frame_id, active_project_id=project_id, title=draw(titles),
            breadcrumb=crumbs, activity=draw(st.sampled_from(Activity)),
            attention=draw(st.booleans()),
            transition_state=draw(st.none() | st.sampled_from(TransitionState)),
            control_state=draw(st.none() | st.sampled_from(ControlState)),
            last_activity_at=draw(st.none() | st.integers(0, 10**13))))
    recoveries = [RecoveryRow(recovery_id=next(ids), host_id=draw(st.sampled_from(hosts)).host_id,
                              kind="bind_timeout", subject_type="launch", subject_id=next(ids),
                              actionability=draw(st.sampled_from(Actionability)),
                              state=draw(st.sampled_from(RecoveryState)),
                              explanation="x", created_at=1)
                  for _ in range(draw(st.integers(0, 3)))]
    local = draw(st.sampled_from(hosts))
    return NavigatorState(
        generation_id=local.generation_id, generated_at=draw(st.integers(0, 10**13)),
        local_host_id=local.host_id, hosts=tuple(draw(st.permutations(hosts))),
        views=tuple(views), projects=tuple(projects), recoveries=tuple(recoveries),
    )


@settings(max_examples=60, deadline=None)
@given(navigator_states())
def test_navigator_state_property_round_trip(state: NavigatorState) -> None:
    data = encode_canonical(state)
    decoded = decode_checked(data, schema=NavigatorState)
    assert encode_canonical(decoded) == data
    obj = json.loads(data)
    for array in ("hosts", "views", "projects", "recoveries"):
        keys = [(row.get("hostId", ""), json.dumps(row, sort_keys=True)) for row in obj[array]]
        assert [k[0] for k in keys] == sorted(k[0] for k in keys)


@settings(max_examples=60, deadline=None)
@given(navigator_states(), st.data())
def test_any_dangling_frame_reference_is_rejected(state: NavigatorState,
                                                  data: st.DataObject) -> None:
    obj = json.loads(encode_canonical(state))
    slots = [f"views.{i}.activeFrameId" for i, v in enumerate(obj["views"])
             if "activeFrameId" in v]
    slots += [f"projects.{i}.frames.{j}.parentFrameId" for i, p in enumerate(obj["projects"])
              for j, f in enumerate(p["frames"]) if "parentFrameId" in f]
    if not slots:
        return
    dotted = data.draw(st.sampled_from(slots))
    _set(obj, dotted, MISSING_ID)
    assert _reject(copy.deepcopy(obj), NavigatorState).startswith(_json_path(dotted) + ":")


def test_encoding_refuses_what_a_reader_would_refuse() -> None:
    state = host_state()
    view = state.views[0]
    bad_view = HostView(**{**view.__dict__, "revision": True})
    with pytest.raises(EnvelopeError, match=r"^\$\.views\[0\]\.revision: must be an integer"):
        encode_canonical(HostState(**{**state.__dict__, "views": (bad_view,)}))
    titled = HostFrame(**{**state.frames[0].__dict__, "title": "a\x1b]0;pwned\x07"})
    with pytest.raises(EnvelopeError, match="terminal control"):
        encode_canonical(HostState(**{**state.__dict__,
                                      "frames": (titled, *state.frames[1:])}))


def test_builders_may_pass_stored_strings_for_enums() -> None:
    state = host_state()
    view = HostView(**{**state.views[0].__dict__, "mode": "direct"})
    data = encode_canonical(HostState(**{**state.__dict__, "views": (view,)}))
    assert decode_checked(data, schema=HostState).views[0].mode is ViewMode.DIRECT
