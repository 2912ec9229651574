"""Every rule the registry schema enforces, in words a person can act on.

The schema names its invariants (trigger ``RAISE(ABORT, 'invariant:NAME')``,
unique indexes, named CHECK constraints) so a refused write maps to a domain
error with a stable ``code``. That name is for agents, scripts and tests; the
person reads the sentence here, never ``one_nonterminal_transition_per_view``.
``tests/storage/test_refusal_words.py`` walks every name in the schema and
fails when one has no sentence here, or when a sentence leaks a raw name.
"""

from __future__ import annotations

REFUSAL_WORDS: dict[str, str] = {
    # --- triggers: counters and immutability
    "claim_edge_bumps_generation":
        "a checkout's claim changed without a new claim generation",
    "claim_generation_only_moves_on_edges":
        "a checkout's claim generation changed without a change of claim",
    "placement_edge_bumps_generation":
        "a frame moved in its view without a new placement generation",
    "view_mutation_bumps_revision":
        "the view changed without a new revision (it was changed meanwhile: retry)",
    "submission_count_never_decreases":
        "a control line's submission count cannot go back",
    "brief_content_immutable": "a task's brief cannot be changed once written",
    "handoff_content_immutable": "a completion handoff cannot be changed once written",
    "session_handoff_immutable": "a session's handoff cannot be changed once written",
    "semantic_records_never_deleted":
        "frames, briefs, handoffs and requests are kept for good and cannot be deleted",
    "frame_lineage_immutable":
        "a frame's parent, project and place in the tree cannot change",
    "request_fingerprint_immutable":
        "a request id keeps the request it was first used for: use a fresh request id",
    # --- triggers: the frame tree
    "task_parent_same_project_and_context":
        "a task's parent must be in the same project and checkout",
    "current_session_is_member": "a frame's current session must be one of its own sessions",
    "completed_requires_claimed_handoff":
        "a task closes as completed only after its parent has claimed the handoff",
    "dismissed_forbids_handoff": "a dismissed task cannot carry a handoff",
    "no_open_child_under_closing_parent":
        "a task cannot stay open under a parent that is closing: close its children first",
    "reopen_needs_open_parent":
        "a task can be reopened only while its parent is open: reopen the parent first",
    "foreground_is_open_member": "a checkout's foreground frame must be one of its open frames",
    "surface_locator_fixed_once_set":
        "an agent pane's tmux location is fixed once it is recorded",
    # --- unique indexes and unique constraints
    "one_workspace_per_project": "this project already has its workspace",
    "one_held_context_per_checkout": "this checkout is already held by another work context",
    "one_frame_per_session": "this provider session already belongs to another frame",
    "one_membership_per_ordinal": "this frame already has a session at that position",
    "one_live_surface_per_session": "this session already runs in a live pane",
    "one_live_surface_per_pane": "this tmux pane is already recorded for another agent",
    "one_pending_launch_per_session":
        "this session is already being launched: wait for it to start",
    "one_nonterminal_transition_per_view":
        "the view already has a move in flight (a push, back, return or its start-up "
        "focus): wait a moment for it to finish, or withdraw it (w), then retry",
    "one_active_placement_per_view": "this view already shows a frame in main",
    "one_owning_placement_per_frame": "this frame is already placed in a view",
    "one_placement_per_surface": "this agent pane is already placed in a view",
    "one_brief_per_push": "this push already has its brief",
    "one_handoff_per_completion": "this return already has its handoff",
    "one_control_turn_per_transition": "this move already has its control line",
    "one_active_lease_per_view":
        "another terminal is attaching to this view right now: retry in a moment",
    "one_fingerprint_per_request": "this request id was already used",
    "one_live_view_per_project": "this project already has its view",
    "one_open_recovery_per_subject":
        "a recovery for this is already open: see `switchboard recovery list`",
    "one_session_per_provider_id": "this provider session is already recorded",
    "one_row_per_server_identity": "this tmux server is already recorded",
    "one_record_per_pane": "this extra pane is already listed under its frame",
    # --- named CHECK constraints
    "session_key_shape": "a session key must be host, provider and session id",
    "held_context_has_foreground": "a held checkout needs a foreground frame",
    "workspace_is_root": "a workspace has no parent, and a task always has one",
    "workspace_depth_zero": "a workspace sits at depth 0 and every task below it",
    "open_frame_has_no_close_reason": "an open frame has no close reason",
    "close_reason_only_when_closing": "a close reason is set only when a frame closes",
    "resume_names_its_session": "resuming needs the session it resumes",
    "live_surface_has_pane": "a live agent pane needs its tmux pane id",
    "mode_transition_names_its_mode": "a mode switch names the mode it switches to",
}

GENERIC_WORDS = "the change would break one of the registry's rules"


def refusal_words(name: str) -> str:
    """The sentence for a schema rule's name (a generic one for a name not listed)."""
    return REFUSAL_WORDS.get(name, GENERIC_WORDS)
