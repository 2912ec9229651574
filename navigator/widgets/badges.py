"""The one table of frame badges: symbol, word and style class per badge.

A badge is never colour alone: each has its own symbol and word, so it reads
on a monochrome terminal and for colour-blind people. Colours come from the
``badge--*`` component classes in ``styles/switchboard.tcss`` (theme
variables), so a theme switch recolours every badge.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rich.style import Style
from rich.text import Text
from textual.widget import Widget


class BadgeKind(StrEnum):
    WORKING = "working"
    NEEDS_INPUT = "needs_input"
    LIMITED = "limited"
    READY = "ready"
    UNKNOWN = "unknown"
    STOPPED = "stopped"
    STALE = "stale"
    OFFLINE = "offline"
    CLOSED = "closed"
    IN_FLIGHT = "in_flight"
    UNCERTAIN = "uncertain"
    DEGRADED = "degraded"


@dataclass(frozen=True)
class Badge:
    symbol: str
    word: str

    @property
    def component_class(self) -> str:
        return f"badge--{self.word.replace(' ', '-')}"


BADGES: dict[BadgeKind, Badge] = {
    BadgeKind.WORKING: Badge("●", "working"),
    BadgeKind.NEEDS_INPUT: Badge("!", "needs input"),
    # needs the person too, but waits for the provider's limit to reset
    BadgeKind.LIMITED: Badge("⏸", "limited"),
    BadgeKind.READY: Badge("✓", "ready"),
    BadgeKind.UNKNOWN: Badge("○", "unknown"),
    BadgeKind.STOPPED: Badge("■", "stopped"),
    BadgeKind.STALE: Badge("~", "stale"),
    BadgeKind.OFFLINE: Badge("×", "offline"),
    BadgeKind.CLOSED: Badge("·", "closed"),
    BadgeKind.IN_FLIGHT: Badge("⇄", "moving"),
    BadgeKind.UNCERTAIN: Badge("?", "uncertain"),
    # a view with an open recovery: not the same glyph as an agent asking for input
    BadgeKind.DEGRADED: Badge("⚠", "degraded"),
}

#: Component classes a badge-rendering widget must declare.
BADGE_COMPONENT_CLASSES: set[str] = {badge.component_class for badge in BADGES.values()}

_ACTIVITY: dict[str, BadgeKind] = {
    "working": BadgeKind.WORKING,
    "needs_input": BadgeKind.NEEDS_INPUT,
    "ready": BadgeKind.READY,
    "completed": BadgeKind.READY,
    "unknown": BadgeKind.UNKNOWN,
}


def badge_kind(*, activity: str | None, runtime_presence: str | None, lifecycle: str = "open",
               stale: bool = False, reachability: str = "online",
               activity_reason: str | None = None) -> BadgeKind:
    """Map core-authored fields onto the badges (core decides, this only names).

    Host evidence wins over session evidence: a cached or offline host's
    activity is not trusted enough to show as current. A live runtime without
    activity evidence (a fresh start, or a stale ``working`` that core aged to
    ``unknown``) is "unknown", never "ready": only a trusted Stop says ready.
    """
    if reachability == "offline":
        return BadgeKind.OFFLINE
    if stale:
        return BadgeKind.STALE
    if lifecycle == "closed":
        return BadgeKind.CLOSED
    if runtime_presence != "live":
        return BadgeKind.STOPPED
    if activity == "needs_input" and activity_reason == "usage_limit":
        return BadgeKind.LIMITED
    return _ACTIVITY.get(activity or "", BadgeKind.UNKNOWN)


def badge_style(widget: Widget, kind: BadgeKind) -> Style:
    """The theme-derived style of a badge, read from the widget's component class."""
    return widget.get_component_rich_style(BADGES[kind].component_class, partial=True)


def badge_text(widget: Widget, kind: BadgeKind, *, with_word: bool = False) -> Text:
    """Symbol (and optionally word) of a badge styled for ``widget``."""
    badge = BADGES[kind]
    body = f"{badge.symbol} {badge.word}" if with_word else badge.symbol
    return Text(body, style=badge_style(widget, kind))


class BadgeLegend(Widget):
    """Every badge with its symbol and word, for the help screen."""

    COMPONENT_CLASSES = BADGE_COMPONENT_CLASSES
    DEFAULT_CSS = "BadgeLegend { height: auto; }"

    def render(self) -> Text:
        lines = [badge_text(self, kind, with_word=True) for kind in BADGES]
        return Text("\n").join(lines)
