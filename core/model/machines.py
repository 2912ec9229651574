"""The legal state edges of every state machine, as data.

This is the one place edges are written. Storage turns each machine into a
trigger that refuses any other edge, and the engine checks the same table
before it writes, so code and database agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import core.model.enums as e


@dataclass(frozen=True)
class Machine:
    """A state column of one table and the edges it may take."""

    name: str
    table: str
    column: str
    states: type[StrEnum]
    edges: dict[str, frozenset[str]]

    def allows(self, old: str, new: str) -> bool:
        return new in self.edges.get(old, frozenset())

    def terminal(self) -> frozenset[str]:
        return frozenset(s.value for s in self.states if not self.edges.get(s.value))


def _m(name: str, table: str, column: str, states: type[StrEnum], edges: dict) -> Machine:
    return Machine(
        name,
        table,
        column,
        states,
        {str(k): frozenset(str(v) for v in vs) for k, vs in edges.items()},
    )


S = e.FrameLifecycle
FRAME = _m("frame", "frames", "lifecycle_state", S, {
    S.OPEN: {S.CLOSING},
    S.CLOSING: {S.CLOSED},
    S.CLOSED: {S.OPEN},  # reopen: identity and lineage kept
})

C = e.ClaimState
WORK_CONTEXT = _m("work_context", "work_contexts", "claim_state", C, {
    C.RELEASED: {C.HELD, C.BLOCKED},
    C.HELD: {C.RELEASED, C.BLOCKED},
    C.BLOCKED: {C.RELEASED, C.HELD},  # explicit human resolution only
})

V = e.ViewState
USER_VIEW = _m("user_view", "user_views", "state", V, {
    V.READY: {V.TRANSITIONING, V.DEGRADED, V.RETIRED},
    V.TRANSITIONING: {V.READY, V.DEGRADED},
    V.DEGRADED: {V.READY, V.RETIRED},
})

P = e.PlacementState
PLACEMENT = _m("placement", "frame_placements", "state", P, {
    P.STAGED: {P.ACTIVE, P.ORPHANED},
    P.ACTIVE: {P.PARKED, P.STOPPED_AFFINITY, P.ORPHANED},
    P.PARKED: {P.ACTIVE, P.STOPPED_AFFINITY, P.ORPHANED},
    P.STOPPED_AFFINITY: {P.STAGED, P.ORPHANED},
})

U = e.SurfaceState
SURFACE = _m("surface", "surfaces", "lifecycle_state", U, {
    U.PLANNED: {U.LIVE, U.ORPHANED, U.RETIRED},
    U.LIVE: {U.DEAD, U.ORPHANED},
    U.DEAD: {U.RETIRED},
    U.ORPHANED: {U.LIVE, U.DEAD, U.RETIRED},
})

L = e.LaunchState
LAUNCH = _m("launch", "launch_intents", "state", L, {
    L.PLANNED: {L.AUTHORIZED, L.FAILED, L.SUPERSEDED},
    L.AUTHORIZED: {L.STARTED, L.FAILED, L.SUPERSEDED},
    L.STARTED: {L.BOUND, L.FAILED},
})

T = e.TransitionState
TRANSITION = _m("transition", "view_transitions", "state", T, {
    T.PREPARED: {T.EXECUTING, T.CANCELLED, T.SUPERSEDED, T.FAILED},
    T.EXECUTING: {T.PRESENTED, T.FAILED},
    T.PRESENTED: {T.AWAITING_CLAIM, T.SETTLING, T.FAILED},
    T.AWAITING_CLAIM: {T.SETTLING, T.FAILED},
    T.SETTLING: {T.COMPLETED, T.FAILED},
})

X = e.TransportPhase
TRANSPORT = _m("transport", "view_transitions", "transport_phase", X, {
    X.INTENT: {X.MOVED, X.INSPECTED},
    X.MOVED: {X.INSPECTED, X.ROLLED_BACK},
    X.INSPECTED: {X.COMMITTED, X.ROLLED_BACK},
})

K = e.ControlState
CONTROL_TURN = _m("control_turn", "control_turns", "state", K, {
    K.PREPARED: {K.SUBMITTED, K.FAILED, K.SUPERSEDED},
    K.SUBMITTED: {K.OBSERVED, K.UNCERTAIN},
    K.OBSERVED: {K.CLAIMED, K.UNCERTAIN, K.FAILED},
    K.UNCERTAIN: {K.OBSERVED, K.CLAIMED, K.FAILED},
    K.CLAIMED: {K.SETTLED, K.FAILED},
})

R = e.RecoveryState
RECOVERY = _m("recovery", "recoveries", "state", R, {R.OPEN: {R.RESOLVED, R.DISMISSED}})

D = e.LeaseState
LEASE = _m("lease", "desktop_attachment_leases", "state", D, {
    D.OFFERED: {D.CLAIMED, D.EXPIRED},
})

Q = e.RequestState
REQUEST = _m("request", "request_records", "state", Q, {Q.PREPARED: {Q.COMPLETED, Q.FAILED}})

ALL: tuple[Machine, ...] = (
    FRAME, WORK_CONTEXT, USER_VIEW, PLACEMENT, SURFACE, LAUNCH,
    TRANSITION, TRANSPORT, CONTROL_TURN, RECOVERY, LEASE, REQUEST,
)
