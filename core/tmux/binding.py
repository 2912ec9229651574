"""Adapters of one tmux socket, one per server generation, sharing one counted runner.

A stored locator is only valid on the server generation that issued it, so
the stage never acts through "the server on the socket" but through an
adapter bound to a recorded identity. This keeps those bindings: the live
generation (read once per process, its holding session checked once per
generation) and one adapter per recorded ``tmux_servers`` row, all over the
same runner so the stage's process count covers every one of them. It does
not read the registry: the caller resolves a row to its identity.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import core.tmux.topology as topology
from core.model.files import private_dir
from core.tmux.adapter import TmuxAdapter
from core.tmux.errors import TmuxUnavailable
from core.tmux.identity import ServerIdentity, read_identity
from core.tmux.runner import TmuxRunner


class ServerBindings:
    """The live adapter and the adapters of recorded servers, on one runner."""

    def __init__(self, runner: TmuxRunner, *, holding_session: str,
                 navigator_width: int, private: bool = False) -> None:
        self.runner = runner
        self.holding_session = holding_session
        self.navigator_width = navigator_width
        self.server_options = topology.PRIVATE_SERVER_OPTIONS if private else ()
        """Set with the holding session: only on a server that is Switchboard's own."""
        self.live: TmuxAdapter | None = None
        self._holding_checked: ServerIdentity | None = None
        self._recorded: dict[str, TmuxAdapter] = {}

    def ensure_live(self, *, refresh: bool = False) -> ServerIdentity:
        """Start the private server (with its holding session) if none answers; bind to it."""
        live = self.live.expected if self.live is not None else None
        if live is not None and not refresh and self._holding_checked == live:
            return live
        if live is None or refresh:
            try:
                live = read_identity(self.runner)
            except TmuxUnavailable:
                private_dir(Path(self.runner.socket_path).parent)
                topology.ensure_holding_session(self.runner,
                                                holding_session=self.holding_session,
                                                server_options=self.server_options)
                live = read_identity(self.runner)
                self._holding_checked = live
        if self._holding_checked != live:
            topology.ensure_holding_session(self.runner, live,
                                            holding_session=self.holding_session,
                                            server_options=self.server_options)
            self._holding_checked = live
        self.adopt(live)
        return live

    def live_adapter(self) -> TmuxAdapter:
        """The adapter of the live generation (the server is started if none answers)."""
        self.ensure_live()
        assert self.live is not None
        return self.live

    def adopt(self, identity: ServerIdentity) -> None:
        """Bind new launches and views to ``identity`` (reconcile read it from tmux)."""
        if self.live is None or self.live.expected != identity:
            self.live = self.adapter(identity)

    def recorded(self, tmux_server_id: str,
                 identity_of: Callable[[str], ServerIdentity]) -> TmuxAdapter:
        """The adapter of a recorded server row; ``identity_of`` resolves it the first time."""
        adapter = self._recorded.get(tmux_server_id)
        if adapter is None:
            adapter = self.adapter(identity_of(tmux_server_id))
            self._recorded[tmux_server_id] = adapter
        return adapter

    def adapter(self, identity: ServerIdentity) -> TmuxAdapter:
        return TmuxAdapter(self.runner, identity, holding_session=self.holding_session,
                           navigator_width=self.navigator_width)
