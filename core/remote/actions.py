"""What the person does to a remote host's frame: the remote engine's own CLI requests.

A frame of another host is shown from its cached, validated HostState; nothing
local may act for it. So a key on a remote frame becomes the request the local
CLI would make on that host (``switchboard view focus``, ``frame message``,
``frame push``), run there over the host's connection (``core.remote.channel``):
the remote engine checks and decides everything on its host, exactly as if the
person had typed it there. Ids come from the cached document (validated UUIDs)
and every word is shell-quoted; free text travels as one ``--name=value`` word so
a text that starts with a dash stays text.

Entering a remote frame (enter, or answering its permission prompt) focuses it
in its view on the remote host and then opens, or selects, the local window
that runs ``ssh -t TARGET switchboard open PROJECT`` (``core.state.remote_open``):
the person answers the prompt in the remote host's own pane.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.config.config import Config, RemoteConfig
from core.config.home import Home
from core.model.errors import NotFound, SwitchboardError
from core.remote.channel import RemoteReply, run_request


@dataclass(frozen=True)
class RemoteActions:
    """Requests on remote frames for one home and config."""

    home: Home
    config: Config
    #: Drops the cached state of remotes no longer configured (``EngineClient``'s).
    pruner: Callable[[], int] | None = None

    def remote(self, host_id: str) -> RemoteConfig:
        remote = next((r for r in self.config.remotes if r.host_id == host_id), None)
        if remote is None:
            raise NotFound(f"host {host_id} is not a configured remote; add it under "
                           "[[remotes]]", code="remote_unknown")
        return remote

    def prune(self) -> int:
        """Delete the cached state of remotes no longer configured, through ``pruner``
        (the caller's own registry connection: a second one opened in the same process
        would drop its POSIX locks on the file); best effort, a busy registry is pruned
        by the next start. Returns how many rows went (0 without a pruner)."""
        if self.pruner is None:
            return 0
        try:
            return self.pruner()
        except SwitchboardError:
            return 0

    def focus(self, host_id: str, view_id: str, frame_id: str) -> RemoteReply:
        return run_request(self.remote(host_id), self.home,
                           ["view", "focus", view_id, frame_id])

    def message(self, host_id: str, frame_id: str, text: str) -> RemoteReply:
        return run_request(self.remote(host_id), self.home,
                           ["frame", "message", frame_id, f"--text={text}"])

    def push(self, host_id: str, frame_id: str, title: str, brief: str) -> RemoteReply:
        return run_request(self.remote(host_id), self.home,
                           ["frame", "push", frame_id, f"--title={title}", f"--brief={brief}"])

    def answer(self, host_id: str, frame_id: str, yes: bool) -> RemoteReply:
        return run_request(self.remote(host_id), self.home,
                           ["frame", "answer", frame_id, "--yes" if yes else "--no"])
