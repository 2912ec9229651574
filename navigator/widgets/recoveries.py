"""The Recoveries panel: every durable uncertainty, with what a person can do about it.

Actionability decides the wording and what enter does: ``safe_auto`` is fixed
by one key (enter or R runs it), ``open_view`` asks the person to go and look
(enter goes to the frame it is about), ``manual`` only explains (enter shows
what to do). The panel never guesses a fix: running or dismissing one is a request the app
sends. Going to look and explaining are the panel's own: it asks the app
(``RecoveryHost``) where the subject is and to show that place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, cast

from rich.style import Style
from rich.text import Text
from textual.app import SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList

from core.apps.client import SubjectPlace
from core.state.state_types import (
    FrameSummary,
    NavigatorState,
    RecoveryRow,
    ViewRow,
)
from navigator.targeting import recovery_about, recovery_target, remote_refusal
from navigator.widgets.rows import Row, RowList

ACTIONABILITY: dict[str, tuple[str, str]] = {
    "safe_auto": ("↻", "R fixes"),
    "open_view": ("→", "look"),
    "manual": ("✎", "manual"),
}


class RecoveryHost(Protocol):
    """What the panel needs from the app to go and look (narrow: no import cycle)."""

    def locate_recovery(self, recovery: RecoveryRow,
                        then: Callable[[RecoveryRow, SubjectPlace], None]) -> None: ...

    def show_place(self, view: ViewRow | None, frame: FrameSummary | None) -> None: ...


OPEN_TITLE = "Open recovery"
DISMISS_TITLE = "Dismiss recovery"
OPEN_ANYWHERE = f"ctrl+p › {OPEN_TITLE}"
"""How a message sends the person to a recovery: the palette lists the selected one (the
first, unless another row was highlighted) at every size, while a low or narrow
navigator hides the Recoveries panel (the 40x23 sidebar of an 80x24 terminal may give it
no rows; a compact one below 14 rows shows none)."""
DISMISS_ANYWHERE = f"ctrl+p › {DISMISS_TITLE}"

class RecoveryList(RowList):
    """Data in: ``navigator_state``; intent out: Recover/Dismiss requests."""

    EMPTY_TEXT = "no recoveries"
    COMPONENT_CLASSES = {"recovery--safe-auto", "recovery--open-view", "recovery--manual",
                         "recovery--explanation"}
    # One enter per actionability; check_action enables the one that fits the
    # highlighted row, so the footer names what enter will do.
    BINDINGS = [
        Binding("enter", "activate('safe_auto')", "Recover", show=True),
        Binding("enter", "activate('open_view')", "Go to", show=True),
        Binding("enter", "activate('manual')", "Explain", show=True),
        Binding("d", "dismiss_recovery", "Dismiss", show=True),
    ]

    navigator_state: reactive[NavigatorState | None] = reactive(None, always_update=True,
                                                               repaint=False)
    #: The open recoveries the rows were last built from (None: build on the next state).
    _shown: tuple[RecoveryRow, ...] | None = None

    @dataclass
    class RecoverRequested(Message):
        """Run this safe_auto recovery."""

        recovery_id: str

    @dataclass
    class GoToRequested(Message):
        """Show the view or frame this open_view recovery is about (navigation only)."""

        recovery_id: str

    @dataclass
    class ExplainRequested(Message):
        """Say what to do about this manual recovery; nothing is run."""

        recovery_id: str

    @dataclass
    class DismissRequested(Message):
        """Close this recovery without running anything."""

        recovery_id: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Recoveries"
        self._enter_means: str | None = None

    def _sync_bindings(self) -> None:
        """Refresh the bindings only when enter's meaning changed: every refresh makes
        the footer recompose, which must not happen on each state update."""
        recovery = self.selected_recovery
        means = recovery.actionability if recovery is not None else None
        if means != self._enter_means:
            self._enter_means = means
            self.refresh_bindings()

    @property
    def open_recoveries(self) -> list[RecoveryRow]:
        state = self.navigator_state
        return [r for r in state.recoveries if r.state == "open"] if state is not None else []

    @property
    def selected_recovery(self) -> RecoveryRow | None:
        return self.recovery(self.highlighted_key)

    def watch_navigator_state(self) -> None:
        self._render_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._shown = None  # the same rows in new colours
        self._render_rows()

    def _render_rows(self) -> None:
        if self.navigator_state is None or not self.is_mounted:
            return
        recoveries = tuple(self.open_recoveries)
        # Every registry write brings a new NavigatorState; the rows are rebuilt only
        # when the open recoveries themselves changed (a host with hundreds open would
        # otherwise restyle every one of them on every hook).
        if recoveries == self._shown:
            return
        self._shown = recoveries
        rows = []
        for recovery in recoveries:
            symbol, word = ACTIONABILITY.get(recovery.actionability, ("?", "unknown"))
            style = self.get_component_rich_style(
                "recovery--" + recovery.actionability.replace("_", "-"), partial=True,
                default=Style())
            prompt = Text.assemble((f"{symbol} {word}", style), " ", recovery.kind)
            prompt.append("\n" + recovery.explanation,
                          style=self.get_component_rich_style("recovery--explanation",
                                                              partial=True))
            rows.append(Row(self._key(recovery), prompt))
        count = len(rows)
        self.show_title(f"Recoveries ({count})" if count else "Recoveries")
        self.set_class(count > 0, "-has-recoveries")
        self.sync_rows(rows)
        self._sync_bindings()

    def _key(self, recovery: RecoveryRow) -> str:
        """The row's key (``NavigatorState.row_key``): ids are unique per host only, and
        a remote may reuse a local one."""
        state = self.navigator_state
        return recovery.recovery_id if state is None \
            else state.row_key(recovery.host_id, recovery.recovery_id)

    def recovery(self, recovery_id: str | None) -> RecoveryRow | None:
        """The open recovery a row key names: ``HOST/ID`` only on that host, a bare id on
        the host that owns it here (``NavigatorState.resolve_key``: this host first)."""
        state = self.navigator_state
        if recovery_id is None or state is None:
            return None
        host_id, wanted = state.resolve_key(recovery_id)
        return next((r for r in self.open_recoveries if r.recovery_id == wanted
                     and (host_id is None or r.host_id == host_id)), None)

    def intent_for(self, recovery: RecoveryRow) -> Message | None:
        """What enter means for this row: run it, go and look, or explain. Running one
        is for this host's engine only: another host's row gets None (and says why),
        so a cached row reusing a local recovery's id can never run the local one."""
        if recovery.actionability == "safe_auto":
            refusal = remote_refusal(self.navigator_state, recovery.host_id)
            if refusal is not None:
                self.notify(refusal.text, severity="warning", markup=False)
                return None
            return self.RecoverRequested(recovery.recovery_id)
        if recovery.actionability == "open_view":
            return self.GoToRequested(self._key(recovery))
        return self.ExplainRequested(self._key(recovery))

    def _post_intent(self, recovery: RecoveryRow) -> None:
        intent = self.intent_for(recovery)
        if intent is not None:
            self.post_message(intent)

    def _dismiss(self, recovery: RecoveryRow) -> None:
        """Dismissing is this host's engine's too (see ``intent_for``)."""
        refusal = remote_refusal(self.navigator_state, recovery.host_id)
        if refusal is not None:
            self.notify(refusal.text, severity="warning", markup=False)
            return
        self.post_message(self.DismissRequested(recovery.recovery_id))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action != "activate":
            return True
        recovery = self.selected_recovery
        wanted = recovery.actionability if recovery is not None else "safe_auto"
        if wanted not in ACTIONABILITY:
            wanted = "manual"  # an actionability this build does not know only explains
        return parameters == (wanted,)

    def action_activate(self, actionability: str) -> None:
        recovery = self.selected_recovery
        if recovery is not None:
            self._post_intent(recovery)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._sync_bindings()  # the footer's enter follows the row; the app sees it too

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()  # a click on a row: the same as enter
        recovery = self.recovery(event.option.id)
        if recovery is not None:
            self._post_intent(recovery)

    def action_dismiss_recovery(self) -> None:
        recovery = self.selected_recovery
        if recovery is not None:
            self._dismiss(recovery)

    # ------------------------------------------------------------------ go and look

    @property
    def _host(self) -> RecoveryHost:
        return cast(RecoveryHost, self.app)

    def on_recovery_list_go_to_requested(self, message: GoToRequested) -> None:
        message.stop()
        recovery = self.recovery(message.recovery_id)
        if recovery is None:
            return
        refusal = remote_refusal(self.navigator_state, recovery.host_id)
        if refusal is not None:
            self.notify(refusal.text, severity="warning", markup=False)
            return
        self._host.locate_recovery(recovery, self._go_to)

    def _go_to(self, recovery: RecoveryRow, place: SubjectPlace) -> None:
        """open_view: select the view and frame the recovery is about (the app shows
        that frame in its view when it is not shown) and say what to check. Nothing
        is recovered; d dismisses the row once checked."""
        target = recovery_target(self.navigator_state, place)
        frame = target.found[0] if target.found is not None else None
        if frame is None and target.view is None:
            self.notify(f"{recovery.explanation} What it was about is gone from the registry; "
                        "press d to dismiss it.", title=recovery.kind.replace("_", " "),
                        severity="warning", markup=False, timeout=10)
            return
        self._host.show_place(target.view, frame)
        title = frame.title if frame is not None else \
            target.view.title if target.view is not None else ""
        self.notify(f"{recovery.explanation} Press d on the recovery once checked.",
                    title=f"Look at {title}", markup=False, timeout=10)

    def on_recovery_list_explain_requested(self, message: ExplainRequested) -> None:
        message.stop()
        recovery = self.recovery(message.recovery_id)
        if recovery is None:
            return
        if recovery.host_id != getattr(self.navigator_state, "local_host_id", None):
            self._explain(recovery, SubjectPlace(None, None))  # its rows are elsewhere
            return
        self._host.locate_recovery(recovery, self._explain)

    def _explain(self, recovery: RecoveryRow, place: SubjectPlace) -> None:
        """manual: the whole explanation and what it is about, in a small dialog."""
        from navigator.screens.recovery import RecoveryExplanationScreen  # on demand: RSS

        self.app.push_screen(RecoveryExplanationScreen(
            recovery, recovery_about(self.navigator_state, place)))

    # ------------------------------------------------------------------ palette

    def system_commands(self) -> Iterator[SystemCommand]:
        """Palette entries for the selected recovery (none without one)."""
        if self.selected_recovery is None:
            return
        yield SystemCommand(OPEN_TITLE, "enter on the selected recovery: recover, go "
                            "to its frame, or explain what to do", self.open_selected)
        yield SystemCommand(DISMISS_TITLE, "dismiss the selected recovery",
                            self.dismiss_selected)

    def say_where_d_works(self) -> None:
        """``d`` pressed outside this panel: say where it works."""
        if self.selected_recovery is None:
            self.notify("Nothing to dismiss: no recovery is open.", markup=False)
        else:
            self.notify("d dismisses the selected recovery in the Recoveries panel (tab "
                        f"there), or {DISMISS_ANYWHERE} from anywhere.", markup=False)

    def open_selected(self) -> None:
        """What enter does, from the palette; says so when the row has gone meanwhile."""
        recovery = self.selected_recovery
        if recovery is None:
            self.notify("No recovery selected: none is open (it may have been closed "
                        "meanwhile).", severity="warning", markup=False)
            return
        self._post_intent(recovery)

    def dismiss_selected(self) -> None:
        recovery = self.selected_recovery
        if recovery is None:
            self.notify("No recovery selected.", severity="warning", markup=False)
            return
        self._dismiss(recovery)
