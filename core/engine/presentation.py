"""PresentationDirective v1: what a desktop frontend does after core moved the view.

The semantic action (project entry, recovery) is committed first, under its
request id; the directive only says how to present it. Whether desktop focus
is available is a presentation capability, not part of the request's
fingerprint, so a focus miss can retry the same request id with focus off and
receive the view's one attach lease without repeating any navigation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.model.enums import DirectiveKind
from core.model.errors import InvariantViolation, SwitchboardError
from core.model.text import shown
from core.state.state_types import DirectiveError, PresentationDirective
from storage.connection import write_transaction
from storage.operations import leases as leases_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.engine.engine import Engine

LEASE_MS = 30_000


def open_view(engine: Engine, request_id: str, project: str, *,
              desktop_focus_available: bool) -> PresentationDirective:
    """Enter a project, then answer focus (a window exists) or attach (with a lease)."""
    try:
        route = engine.project_enter(request_id, project)
        return _directive_for(engine, request_id, route.view_id, desktop_focus_available)
    except SwitchboardError as exc:
        return blocked(engine, request_id, exc)


def _directive_for(engine: Engine, request_id: str, view_id: str,
                   desktop_focus_available: bool) -> PresentationDirective:
    now = engine.now()
    with write_transaction(engine.conn) as conn:
        view = views_ops.get_view(conn, view_id)
        if desktop_focus_available:
            return PresentationDirective(request_id=request_id, host_id=engine.host_id,
                                         kind=DirectiveKind.FOCUS, view_id=view_id,
                                         view_revision=view["revision"],
                                         desktop_token=view["desktop_token"])
        leases_ops.expire_overdue(conn, view_id, now)
        lease = leases_ops.offered(conn, view_id)
        if lease is not None and lease["request_id"] != request_id:
            raise SwitchboardError(
                "another request is already attaching a desktop window to this view; wait "
                "for it or retry after the lease expires", code="desktop_launch_in_progress")
        if lease is None:
            expires_at = now + LEASE_MS
            leases_ops.offer(conn, lease_id=engine.ids.new_id(), view_id=view_id,
                             request_id=request_id, expires_at=expires_at)
        else:
            expires_at = lease["expires_at"]
        return PresentationDirective(request_id=request_id, host_id=engine.host_id,
                                     kind=DirectiveKind.ATTACH, view_id=view_id,
                                     view_revision=view["revision"],
                                     desktop_token=view["desktop_token"],
                                     lease_expires_at=expires_at)


def blocked(engine: Engine, request_id: str, exc: SwitchboardError) -> PresentationDirective:
    """A refusal as a directive a frontend shows as it is: the message spelled out (it
    may echo a project name), a schema rule's name replaced by ``refused``."""
    code = "refused" if isinstance(exc, InvariantViolation) else exc.code
    return PresentationDirective(request_id=request_id, host_id=engine.host_id,
                                 kind=DirectiveKind.BLOCKED,
                                 error=DirectiveError(code=_token(code),
                                                      message=shown(exc.message)[:1000]))


def _token(code: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in code.lower())
    return cleaned or "error"


def claim_lease(engine: Engine, view_id: str, request_id: str) -> bool:
    """The attaching client took the view: offered -> claimed, freeing the next open."""
    with write_transaction(engine.conn) as conn:
        lease = leases_ops.offered(conn, view_id)
        if lease is None or lease["request_id"] != request_id:
            return False
        return leases_ops.claim(conn, lease["lease_id"])


def show_view(engine: Engine, view_id: str) -> None:
    """Switch the person's tmux clients to a view's window: a navigator in one view
    that enters another project or focuses a frame shown elsewhere takes the person
    there. A presentation effect only; the registry does not change."""
    if engine.stage is None:
        raise SwitchboardError("no tmux stage in this process; open the view with "
                               "`switchboard open PROJECT`", code="tmux_unavailable")
    engine.stage.show_view(views_ops.get_view(engine.conn, view_id))
