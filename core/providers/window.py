"""The tested version window of each provider CLI, and where a found version sits in it.

Claude Code ships several releases a week and Codex one or two, so the version a
person runs is rarely the one a pin names. The real-CLI tier (``tests/realcli``)
runs its whole journey against every version in ``TESTED`` (the oldest and the
newest supported, plus the releases where behaviour changed); anything between
the oldest and the newest is inside the window. A version outside it is not
refused for being outside: it starts, and the badge, ``doctor`` and ``--version``
call it untested. Only a version below ``floor`` is refused, because its hook
contract is known not to carry what Switchboard reads (that is the contract
check of :mod:`core.providers.version`, not a preference).

Updating the window is routine work: add the new release to ``TESTED`` (drop the
middle ones that no longer mark a change), run ``make realcli-latest`` and
``make test``, and record what changed in ``docs/cli-versions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.model.enums import Provider

Version = tuple[int, int, int]


class WindowPlace(StrEnum):
    """Where a version stands against the tested window."""

    TESTED = "tested"
    """One of the versions the real-CLI tier runs."""
    INSIDE = "inside"
    """Between the oldest and the newest tested: covered by the window."""
    NEWER = "newer"
    """Newer than the newest tested: starts, flagged untested until the window moves."""
    OLDER = "older"
    """Older than the oldest tested but not below the floor: starts, flagged untested."""
    BELOW_FLOOR = "below_floor"
    """Its hook contract cannot carry what Switchboard reads: refused."""

    @property
    def untested(self) -> bool:
        return self in (WindowPlace.NEWER, WindowPlace.OLDER)


@dataclass(frozen=True)
class VersionWindow:
    """One provider's tested releases (oldest first) and the floor below which it is refused."""

    provider: Provider
    tested: tuple[Version, ...]
    floor: Version
    as_of: str
    """The day the newest tested release was the newest the registry served."""

    @property
    def oldest(self) -> Version:
        return self.tested[0]

    @property
    def newest(self) -> Version:
        return self.tested[-1]

    def place(self, version: Version) -> WindowPlace:
        if version < self.floor:
            return WindowPlace.BELOW_FLOOR
        if version in self.tested:
            return WindowPlace.TESTED
        if version > self.newest:
            return WindowPlace.NEWER
        if version < self.oldest:
            return WindowPlace.OLDER
        return WindowPlace.INSIDE

    def describe(self, version: Version) -> str:
        """One line for a person: the version and where it stands."""
        found, place = dotted(version), self.place(version)
        span = dotted(self.oldest) if self.oldest == self.newest else \
            f"{dotted(self.oldest)}..{dotted(self.newest)}"  # one release: named once
        if place is WindowPlace.TESTED:
            return f"{found} (tested)"
        if place is WindowPlace.INSIDE:
            return f"{found} (inside the tested window {span})"
        if place is WindowPlace.NEWER:
            return (f"{found} is newer than the tested window {span} (as of {self.as_of}): "
                    "untested, it starts")
        if place is WindowPlace.OLDER:
            return f"{found} is older than the tested window {span}: untested, it starts"
        return f"{found} is below {dotted(self.floor)}, the oldest release whose hooks work"


NPM_PACKAGES: dict[Provider, str] = {Provider.CLAUDE: "@anthropic-ai/claude-code",
                                     Provider.CODEX: "@openai/codex",
                                     Provider.GEMINI: "@google/gemini-cli",
                                     Provider.OPENCODE: "opencode-ai"}
"""How each CLI is installed (the registry the real-CLI tier installs from too)."""


def dotted(version: Version) -> str:
    return ".".join(str(part) for part in version)


TESTED: dict[Provider, VersionWindow] = {
    # 2.1.197: the first recorded contract. 2.1.300: the start-up dialog "Make auto
    # mode your default permission mode?". 2.1.332: auto mode is the default, MCP
    # tools deferred behind ToolSearch.
    Provider.CLAUDE: VersionWindow(Provider.CLAUDE, ((2, 1, 197), (2, 1, 300), (2, 1, 332)),
                                   floor=(2, 1, 0), as_of="2026-12-05"),
    # 0.166.0 (2026-10-29) is the oldest tested; 0.171.0 the newest released.
    Provider.CODEX: VersionWindow(Provider.CODEX, ((0, 166, 0), (0, 171, 0)),
                                  floor=(0, 166, 0), as_of="2026-12-05"),
    # 0.61.0: the first recorded hooks (tests/fixtures/hooks/gemini-0.61.0.tsv).
    Provider.GEMINI: VersionWindow(Provider.GEMINI, ((0, 61, 0),),
                                   floor=(0, 61, 0), as_of="2026-12-06"),
    # 1.18.33: the first recorded plugin events (tests/fixtures/hooks/opencode-1.18.33-*).
    Provider.OPENCODE: VersionWindow(Provider.OPENCODE, ((1, 18, 33),),
                                     floor=(1, 18, 33), as_of="2026-12-06"),
}
