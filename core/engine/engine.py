"""The one transition engine: every CLI command and every navigator key lands here.

``Engine`` is the context (``core.context.context``: connection, config, clock,
ids, stage, ``run_request``) with the requests bound as its methods. Each request
lives in the command module of what it acts on (``core.engine.commands``): it
takes a request id, checks idempotency (same id + same fingerprint returns the
stored result; a different fingerprint is refused), then runs named storage
operations in one write transaction. Transitions that move panes continue in
``core.runtime.sagas`` after their intent is durable.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.context.context import Context
from core.engine.commands import contexts, forks, frames, projects, tasks, views
from core.runtime import starts


@dataclass
class Engine(Context):
    """Registry-backed engine; ``stage`` (tmux) is attached by callers that move panes.

    Each attribute below is a command module's function: called on an engine, the
    engine is its context."""

    # projects and frames
    project_enter = projects.project_enter
    frame_start = frames.frame_start
    frame_stop = frames.frame_stop
    frame_close = frames.frame_close
    frame_reopen = frames.frame_reopen

    # tasks
    frame_push = tasks.frame_push
    frame_complete = tasks.frame_complete
    frame_back = tasks.frame_back
    frame_fork = forks.frame_fork
    transition_cancel = tasks.transition_cancel

    # views
    view_focus = views.view_focus
    view_mode = views.view_mode
    view_retire = views.view_retire

    # checkout claims
    context_release = contexts.context_release
    context_block = contexts.context_block
    context_resolve = contexts.context_resolve

    # starts (the sagas call these on a plain context)
    provider_for = starts.provider_for
    plan_start_bundle = starts.plan_start_bundle
    start_bundle = starts.start_bundle
