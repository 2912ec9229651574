"""The app's keys, and what each engine key asks for: a request, a dialog and then a
request, or a refusal.

One function per key, over the state, the person's ``Selection`` and the
client: it picks the target (``navigator.targeting``) and names the request
without running it, so the app only carries intents out and each key's
meaning is tested without a screen. Every request is one EngineClient call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from textual.binding import Binding, BindingType
from textual.screen import Screen

from core.apps.client import EngineClient
from core.state.state_types import NavigatorState
from navigator.targeting import (
    Refusal,
    RemoteFrame,
    Selection,
    closed_frame_for_key,
    frame_for_key,
    recovery_for_key,
    remote_frame_for_key,
    task_for_key,
    view_for_key,
)

# The dialog screens are imported by the key that opens one: a navigator pane that
# never opens a dialog never holds their modules (and TextArea's) in memory.

#: App keys that are off while a dialog, the help or the palette is open.
BLOCKED_UNDER_DIALOGS = frozenset({"start", "stop", "go_back", "complete", "close_frame",
                                   "reopen", "toggle_mode", "recover", "search", "help",
                                   "details", "acknowledge_anywhere", "dismiss_anywhere",
                                   "new_task", "diff", "find", "switch_provider",
                                   "toggle_usage", "answer", "fork"})

#: App keys that only act in one panel: pressed elsewhere they say where. The panel's
#: own binding is the one the footer and the palette list (once, where it applies).
PANEL_ONLY_ACTIONS = frozenset({"acknowledge_anywhere", "dismiss_anywhere"})

KEY_BINDINGS: list[BindingType] = [
        Binding("n", "start", "Start", tooltip="start (or resume) the frame's agent"),
    Binding("s", "stop", "Stop", tooltip="stop the frame's agent; n resumes its session"),
    Binding("b", "go_back", "Back", tooltip="show the parent; the task stays open"),
    Binding("c", "complete", "Complete", tooltip="complete the task and return"),
    Binding("x", "close_frame", "Close", tooltip="close the task without a handoff"),
    Binding("w", "cancel_transition", "Withdraw",
            tooltip="cancel the view's push while it waits for a Stop (a waiting return "
                    "is not withdrawn: s stops its agent and runs it sooner)"),
    Binding("r", "reopen", "Reopen", tooltip="reopen a closed frame from History"),
    Binding("m", "toggle_mode", "Mode", tooltip="toggle navigator/direct mode"),
    Binding("R", "recover", "Recover", key_display="R",
            tooltip="run the selected recovery (safe_auto ones only)"),
    Binding("i", "details", "Details", tooltip="the frame's session: tool runs and events"),
    Binding("p", "new_task", "Task",
            tooltip="push a new task under the selected frame (title and brief)"),
    Binding("t", "message", "Message", tooltip="message the frame's agent (replies: Inbox)"),
    Binding("l", "inbox_stream", "Stream",
            tooltip="open/close the read-only inbox stream pane in the view"),
    Binding("slash", "search", "Search", key_display="/"),
    Binding("v", "diff", "Diff",
            tooltip="review the frame's change: files, hunks, comments sent to its agent"),
    Binding("ctrl+f", "find", "Find", key_display="^f",
            tooltip="search every session: briefs, handoffs, prompts, commands, failures"),
    Binding("u", "toggle_usage", "Usage",
            tooltip="show or hide tokens and estimated cost per frame and in all"),
    Binding("P", "switch_provider", "Provider", key_display="P",
            tooltip="carry the task on with the other provider (its agent is stopped; "
                    "asks first)"),
    Binding("F", "fork", "Fork", key_display="F",
            tooltip="a sibling task whose agent continues a copy of the frame's conversation "
                    "(the frame keeps its session; asks first)"),
    Binding("y", "answer", "Answer",
            tooltip="answer the selected agent's prompt yes or no, for when its pane is out "
                    "of reach (a browser, a remote host)"),
    Binding("escape", "clear_filter", "Clear filter", show=False),
    # a and d act in their panels; pressed anywhere else they say where (never silent)
    Binding("a", "acknowledge_anywhere", "Acknowledge", show=False,
            tooltip="the selected message (Inbox panel)"),
    Binding("d", "dismiss_anywhere", "Dismiss", show=False,
            tooltip="close the selected recovery (Recoveries panel)"),
    Binding("question_mark", "help", "Help", key_display="?"),
]
"""The app's keys; each engine key's action has its function below."""

_Answer = TypeVar("_Answer")
"""What a dialog dismisses with (a confirmation, a task, a message, a handoff)."""


@dataclass(frozen=True)
class Request:
    """One engine request: its toast title, what the toast says once done, the call."""

    description: str
    done: str
    call: Callable[[], object]


@dataclass(frozen=True)
class Ask(Generic[_Answer]):
    """A dialog first; a given answer becomes the request, a cancelled one nothing."""

    screen: Screen[_Answer | None]
    description: str
    done: Callable[[_Answer], str]
    call: Callable[[_Answer], Callable[[], object]]


@dataclass(frozen=True)
class Checked(Generic[_Answer]):
    """A dialog offered only once ``check`` (a blocking read, run off the event loop)
    finds nothing against it: its text refuses instead, before anything is asked."""

    check: Callable[[], str | None]
    then: Ask[_Answer]


Intent = Request | Ask[Any] | Checked[Any] | Refusal
Key = Callable[[NavigatorState | None, Selection, EngineClient], Intent]
"""An engine key: (state, selection, client) -> what it asks for."""


def start(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    frame = frame_for_key(state, selection, "Select a frame to start a session in.",
                          open_only=True)
    if isinstance(frame, Refusal):
        return frame
    return Request("Start", f"Starting a session in {frame.title}",
                   partial(client.start, frame.frame_id))


def stop(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    from navigator.screens.confirm import ConfirmScreen

    frame = frame_for_key(state, selection, "Select a frame whose agent should stop.")
    if isinstance(frame, Refusal):
        return frame
    return Ask(ConfirmScreen(f"Stop the agent of “{frame.title}”? Its session is kept; n "
                             "resumes it.", confirm_label="Stop agent"),
               "Stop", lambda _: f"Stopped the agent of {frame.title}",
               lambda _: partial(client.stop, frame.frame_id))


def go_back(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    view = view_for_key(state, selection)
    if isinstance(view, Refusal):
        return view
    return Request("Back", "Showing the parent; the task stays open",
                   partial(client.back, view.view_id))


def cancel_transition(state: NavigatorState | None, selection: Selection,
                      client: EngineClient) -> Intent:
    view = view_for_key(state, selection)
    if isinstance(view, Refusal):
        return view
    return Request("Withdraw", "The waiting transition is cancelled; nothing moved",
                   partial(client.cancel_transition, view.view_id))


def new_task(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    from navigator.screens.new_task import NewTaskScreen

    remote = remote_frame_for_key(state, selection, open_only=True)
    if isinstance(remote, RemoteFrame):
        actions = client.remote_actions()
        return Ask(NewTaskScreen(remote.frame.title), "New task",
                   lambda task: f"Pushing “{task.title}” under {remote.frame.title} on "
                                f"{remote.host_name}",
                   lambda task: partial(actions.push, remote.host_id, remote.frame.frame_id,
                                        task.title, task.brief))
    frame = remote or frame_for_key(state, selection,
                                    "Select the frame the new task goes under.",
                                    open_only=True)
    if isinstance(frame, Refusal):
        return frame
    return Ask(NewTaskScreen(frame.title), "New task",
               lambda task: f"Pushing “{task.title}” under {frame.title}",
               lambda task: partial(client.push, frame.frame_id, task.title, task.brief))


def message(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    from navigator.screens.compose import ComposeMessageScreen

    remote = remote_frame_for_key(state, selection)
    if isinstance(remote, RemoteFrame):
        actions = client.remote_actions()
        return Ask(ComposeMessageScreen(remote.frame.title), "Message",
                   lambda _: f"Message for {remote.frame.title} on {remote.host_name} sent",
                   lambda text: partial(actions.message, remote.host_id,
                                        remote.frame.frame_id, text))
    frame = remote or frame_for_key(state, selection,
                                    "Select a frame whose agent should get a message.")
    if isinstance(frame, Refusal):
        return frame
    return Ask(ComposeMessageScreen(frame.title), "Message",
               lambda _: f"Message for {frame.title} sent",
               lambda text: partial(client.message_frame, frame.frame_id, text))


def answer(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    """y: the person's yes or no to the agent's prompt, pressed in its pane by the
    engine of the agent's host (``core.runtime.answer``)."""
    from navigator.screens.answer import AnswerScreen

    remote = remote_frame_for_key(state, selection, open_only=True)
    frame = remote.frame if isinstance(remote, RemoteFrame) else (
        remote or frame_for_key(state, selection, "Select the frame whose agent asks.",
                                open_only=True))
    if isinstance(frame, Refusal):
        return frame
    if frame.activity != "needs_input":
        return Refusal(f"“{frame.title}” is not waiting for an answer.")
    title, frame_id = frame.title, frame.frame_id
    if isinstance(remote, RemoteFrame):
        actions = client.remote_actions()
        host_id, where = remote.host_id, f" on {remote.host_name}"
        return Ask(AnswerScreen(title, where), "Answer",
                   lambda choice: f"Answered {choice} to {title}{where}",
                   lambda choice: partial(actions.answer, host_id, frame_id, choice == "yes"))
    return Checked(partial(prompt_problem, client, frame_id, title),
                   Ask(AnswerScreen(title, ""), "Answer",
                       lambda choice: f"Answered {choice} to {title}",
                       lambda choice: partial(client.answer_prompt, frame_id, choice == "yes")))


def prompt_problem(client: EngineClient, frame_id: str, title: str) -> str | None:
    """Why ``y`` cannot answer the frame's prompt from here, read off its pane before
    Yes and No are offered (the answer itself reads it again: ``core.runtime.answer``)."""
    from core.model.text import shown, strip_sgr
    from core.runtime.answer import choice_list

    lines = client.preview(frame_id)
    if lines is None:
        return (f"The pane of “{shown(title)}” cannot be read from here, so its prompt "
                "cannot be answered here: enter its view to answer it there.")
    if choice_list([strip_sgr(line) for line in lines]) is None:
        return (f"“{shown(title)}” shows no choice list to answer (its prompt waits for "
                "typed text): enter its view to answer it there.")
    return None


def inbox_stream(state: NavigatorState | None, selection: Selection,
                 client: EngineClient) -> Intent:
    view = view_for_key(state, selection)
    if isinstance(view, Refusal):
        return view
    return Request("Inbox stream", "Inbox stream toggled",
                   partial(client.toggle_inbox_stream, view.view_id))


def complete(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    from navigator.screens.complete import CompleteReturnScreen

    frame = task_for_key(state, selection, "complete")
    if isinstance(frame, Refusal):
        return frame
    return Ask(CompleteReturnScreen(frame.title), "Complete",
               lambda _: f"Returning from {frame.title} to its parent",
               lambda answer: partial(client.complete, frame.frame_id, answer.summary,
                                      answer.next_action))


def close_frame(state: NavigatorState | None, selection: Selection,
                client: EngineClient) -> Intent:
    from navigator.screens.confirm import ConfirmScreen

    frame = task_for_key(state, selection, "close")
    if isinstance(frame, Refusal):
        return frame
    return Ask(ConfirmScreen(f"Close “{frame.title}” without a handoff? Its parent is shown "
                             "first, then its agent is stopped.", confirm_label="Close task"),
               "Close", lambda _: f"Closed {frame.title} (dismissed)",
               lambda _: partial(client.close, frame.frame_id))


SWITCH_TO: dict[str, str] = {"claude": "codex", "codex": "claude",
                             "gemini": "claude", "opencode": "claude"}
"""``P``'s target for each provider (every one named): Claude Code and Codex swap, the
others move to Claude Code; ``frame switch-provider --to`` reaches any of them."""


def switch_provider(state: NavigatorState | None, selection: Selection,
                    client: EngineClient) -> Intent:
    """P: the frame's task moves to the other provider, after the person confirms (its
    agent is stopped; the new one claims a handover brief)."""
    from core.model.enums import Provider
    from navigator.screens.confirm import ConfirmScreen

    frame = frame_for_key(state, selection, "Select the frame to move to the other provider.",
                          open_only=True)
    if isinstance(frame, Refusal):
        return frame
    if frame.current_session is None:
        return Refusal(f"{frame.title} has no agent yet: n starts one.")
    now = Provider(frame.current_session.provider)
    to = Provider(SWITCH_TO[now.value])
    return Ask(ConfirmScreen(f"Stop the {now.value} agent of "
                             f"“{frame.title}” and carry the task on with {to.value}? The new "
                             "agent gets its brief, last handoff and evidence so far.",
                             confirm_label=f"Move to {to.value}"),
               "Switch provider", lambda _: f"{frame.title} moved to {to.value}",
               lambda _: partial(client.switch_provider, frame.frame_id, to))


def fork(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    """F: a sibling task whose agent resumes a fork of the frame's conversation (a
    workspace's fork is a task under it), after the person confirms."""
    from navigator.screens.confirm import ConfirmScreen

    frame = frame_for_key(state, selection, "Select the frame whose conversation to fork.",
                          open_only=True)
    if isinstance(frame, Refusal):
        return frame
    if frame.current_session is None:
        return Refusal(f"{frame.title} has no agent yet: n starts one, then F forks it.")
    where = "a task under it" if frame.parent_frame_id is None else "a task beside it"
    return Ask(ConfirmScreen(f"Fork “{frame.title}”? {where[0].upper()}{where[1:]} starts "
                             "with a copy of its conversation; this frame keeps its session.",
                             confirm_label="Fork"),
               "Fork", lambda _: f"Forked {frame.title}",
               lambda _: partial(client.fork, frame.frame_id))


def reopen(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    frame = closed_frame_for_key(state, selection)
    if isinstance(frame, Refusal):
        return frame
    return Request("Reopen", f"Reopened {frame.title}", partial(client.reopen, frame.frame_id))


def toggle_mode(state: NavigatorState | None, selection: Selection,
                client: EngineClient) -> Intent:
    view = view_for_key(state, selection)
    if isinstance(view, Refusal):
        return view
    other = "direct" if view.mode == "navigator" else "navigator"
    done = f"{view.title}: {other} mode" + (
        " (tmux prefix + S brings the navigator back)" if other == "direct" else "")
    return Request("Mode", done, partial(client.toggle_mode, view.view_id))


def recover(state: NavigatorState | None, selection: Selection, client: EngineClient) -> Intent:
    recovery = recovery_for_key(state, selection.recovery)
    if isinstance(recovery, Refusal):
        return recovery
    return Request("Recover", f"Recovery {recovery.kind} handled",
                   partial(client.recover, recovery.recovery_id))
