"""Keys typed before the navigator's first state wait for it instead of being refused.

A navigator draws its panels and its key footer before its first registry read
has come back (about half a second on a busy machine, longer for a woken pane).
A key pressed in that gap used to act on no state at all: ``p`` said "Select the
frame the new task goes under." although the tree was about to show that frame,
and the key was gone. A person types ahead of a screen they already know, so
such keys are held and replayed, in order, once the first state is on screen.
A first read that fails, or is slow, must not eat the keyboard: after
``HOLD_LIMIT_S`` the held keys are replayed anyway (then they act, or say why
not, on whatever the navigator has).
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events

HOLD_LIMIT_S = 2.0
"""The longest a key waits for the first state (a first read that failed or hangs)."""


class FirstStateKeys:
    """Holds key events until ``release``; then every later key passes straight on."""

    def __init__(self, replay: Callable[[events.Key], object]) -> None:
        self._replay = replay
        self._held: list[events.Key] | None = []

    @property
    def holding(self) -> bool:
        return self._held is not None

    def hold(self, event: events.Key) -> bool:
        """Keep ``event`` for later when the first state is not there yet; True if kept."""
        if self._held is None:
            return False
        self._held.append(events.Key(event.key, event.character))
        return True

    def release(self) -> None:
        """The first state is on screen (or the wait is over): replay what was held."""
        held, self._held = self._held, None
        for event in held or ():
            self._replay(event)
