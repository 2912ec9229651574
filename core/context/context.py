"""The engine's context: the small set of things every command, saga, launch,
reconcile step and broker step needs (connection, config, clock, ids, stage,
home, ``run_request``, ``fault_point``).

Collaborators below the engine's command modules take a ``Context`` rather than
the whole ``Engine``: the engine (``core.engine.engine``) is the context plus the
commands, and sits above everything that serves it, so the import graph has no
loop through it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from core.context.reader import RegistryReader
from core.context.requests import fingerprint
from core.context.stage_port import StagePort
from core.model.errors import Conflict, InvariantViolation
from core.model.ports import IdSource, Uuid4Ids
from core.model.tokens import token_hex
from storage.connection import write_transaction
from storage.operations import requests as requests_ops

if TYPE_CHECKING:
    from core.config.home import Home

_Result = TypeVar("_Result")


@dataclass
class Context(RegistryReader):
    """What every request and its collaborators share: the registry connection and
    config (from the reader), ids, the tmux stage when this process moves panes, the
    fault hook and this process's owner tag, with ``run_request``'s idempotency."""

    ids: IdSource = field(default_factory=Uuid4Ids)
    stage: StagePort | None = None  # core.runtime.stage.TmuxStage when tmux effects are wanted
    fault: Callable[[str], None] | None = None  # test hook: raise/exit at named saga points
    owner: str = field(default_factory=lambda: "engine-" + token_hex(4))

    def require_stage(self) -> StagePort:
        """The attached stage, for steps that only run with one (a launch, a view's
        rebuild); without one the request is refused by name instead of failing on
        ``None``. Public because those steps live in ``core.runtime.launcher`` and
        ``core.reconcile``."""
        if self.stage is None:
            raise Conflict("no tmux stage in this process; run it from a home with tmux "
                           "configured", code="no_stage")
        return self.stage

    def require_home(self) -> Home:
        """The home this engine was opened from (every ``open_engine`` engine has one);
        public for the collaborators that find run files, the broker and logs there."""
        if self.home is None:
            raise InvariantViolation("this engine was not opened from a Switchboard home")
        return self.home

    def fault_point(self, point: str) -> None:
        """Mark a named crash point (``after_claim``, ``after_swap``...): the test hook
        ``fault`` may raise or exit there. Public because the sagas, launches and the
        stage that own most of these points live outside this module."""
        if self.fault is not None:
            self.fault(point)

    # ------------------------------------------------------------------ requests

    def run_request(self, request_id: str, operation: str, semantic: dict[str, Any],
                    body: Callable[[sqlite3.Connection, str, int], tuple[str, str | None]],
                    replay: Callable[[str | None], _Result],
                    result: Callable[[str | None], _Result]) -> _Result:
        """Run ``body`` once per request id inside one write transaction.

        ``body`` returns (result_type, result_id); a replay of the same request
        rebuilds the result from the stored id without mutating anything. Public
        because requests implemented beside the engine (a cancel in
        ``core.reconcile.settlement``, a recovery's execution in
        ``core.reconcile.recover_view``) get the same idempotency through it.
        """
        fp = fingerprint(operation, semantic)
        with write_transaction(self.conn) as conn:
            stored = requests_ops.lookup(conn, self.host_id, request_id, operation, fp)
            if stored is not None:
                return replay(stored.result_id)
            now = self.now()
            requests_ops.record(conn, self.host_id, request_id, operation, fp, now)
            result_type, result_id = body(conn, fp, now)
            requests_ops.complete(conn, self.host_id, request_id, result_type, result_id, now)
        return result(result_id)
