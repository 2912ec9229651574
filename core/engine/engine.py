"""The one transition engine: every CLI command and every navigator key lands here.

Each public method takes a request id, checks idempotency (same id + same
fingerprint returns the stored result; a different fingerprint is refused),
then runs named storage operations in one write transaction. Transitions that
move panes continue in ``core.engine.sagas`` after their intent is durable.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from core.engine.reader import RegistryReader
from core.engine.requests import fingerprint
from core.engine.stage_port import StagePort
from core.model.enums import (
    ClaimState,
    CloseReason,
    ControlKind,
    ControlTransport,
    CreatedBy,
    FrameLifecycle,
    FrameRole,
    LaunchAction,
    MembershipReason,
    PlacementState,
    Provider,
    TransitionKind,
    TransitionState,
    TransportPolicy,
    ViewMode,
    ViewState,
)
from core.model.errors import (
    Conflict,
    InvariantViolation,
    NotFound,
    ProviderError,
    SwitchboardError,
)
from core.model.ports import IdSource, Uuid4Ids
from core.model.results import FrameResult, RouteResult, StartResult, TransitionResult, ViewResult
from core.model.text import TextShape, refuse_unsafe
from core.model.tokens import token_hex, token_urlsafe
from storage.connection import write_transaction
from storage.limits import check_text
from storage.operations import frames as frames_ops
from storage.operations import projects as projects_ops
from storage.operations import requests as requests_ops
from storage.operations import sessions as sessions_ops
from storage.operations import transitions as transitions_ops
from storage.operations import views as views_ops

if TYPE_CHECKING:
    from core.install.home import Home

_Result = TypeVar("_Result")


@dataclass
class Engine(RegistryReader):
    """Registry-backed engine; ``stage`` (tmux) is attached by callers that move panes."""

    ids: IdSource = field(default_factory=Uuid4Ids)
    stage: StagePort | None = None  # core.tmux.stage.TmuxStage when tmux effects are wanted
    fault: Callable[[str], None] | None = None  # test hook: raise/exit at named saga points
    owner: str = field(default_factory=lambda: "engine-" + token_hex(4))

    def require_stage(self) -> StagePort:
        """The attached stage, for steps that only run with one (a launch, a view's
        rebuild); without one the request is refused by name instead of failing on
        ``None``. Public because those steps live in ``core.engine.launcher`` and
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

    # ------------------------------------------------------------------ projects

    def _ensure_project(self, conn: sqlite3.Connection, project_id: str, now: int) -> None:
        project = self.config.project(project_id)
        checkout = self.config.checkout(project.checkout_id)
        if checkout.repository_id:
            repo = next((r for r in self.config.repositories
                         if r.repository_id == checkout.repository_id), None)
            if repo is not None:
                projects_ops.upsert_repository(conn, self.host_id, repo.repository_id, repo.name)
        projects_ops.upsert_checkout(conn, self.host_id, checkout.checkout_id,
                                     checkout.repository_id, checkout.path)
        projects_ops.upsert_project(conn, self.host_id, project.project_id, project.name,
                                    checkout.checkout_id, now)

    def project_enter(self, request_id: str, project: str) -> RouteResult:
        """Show a project in its view: create view and workspace on first entry.

        Two concurrent entries serialize on the write lock and the
        one-workspace / one-view-per-project indexes, so they converge. With a
        stage, the view's window is ensured (``core.reconcile.recovery.enter_view``): after
        a tmux server restart it is rebuilt on the running server, and a
        navigator that crashed or was quit runs again.
        """
        project_id = self.config.project_id_for(project)

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            self._ensure_project(conn, project_id, now)
            workspace = frames_ops.workspace_of(conn, self.host_id, project_id)
            if workspace is None:
                workspace_id = self._create_workspace(conn, project_id, now)
            else:
                workspace_id = workspace["frame_id"]
            view = views_ops.view_of_project(conn, self.host_id, project_id)
            if view is None:
                view_id = self.ids.new_id()
                views_ops.insert_view(conn, view_id=view_id, host_id=self.host_id,
                                      project_id=project_id,
                                      mode=self.config.views.cli_default_mode,
                                      active_frame_id=workspace_id,
                                      desktop_token=token_urlsafe(16), now=now)
                # Home every open frame of the project in the new view: on re-entry
                # after a retire, its old placement is orphaned first.
                for frame in conn.execute(
                        "SELECT frame_id FROM frames WHERE host_id = ? AND project_id = ?"
                        " AND lifecycle_state <> 'closed'", (self.host_id, project_id)):
                    old = views_ops.placement_of_frame(conn, frame["frame_id"])
                    if old is not None and old["view_id"] != view_id:
                        views_ops.move_placement(conn, old["placement_id"], old["generation"],
                                                 PlacementState.ORPHANED, now)
                        old = None
                    if old is None:
                        views_ops.insert_placement(
                            conn, placement_id=self.ids.new_id(), host_id=self.host_id,
                            view_id=view_id, frame_id=frame["frame_id"],
                            state=PlacementState.STOPPED_AFFINITY, surface_id=None, now=now)
                frames_ops.touch_focus(conn, workspace_id, now)
                return "view", view_id
            return "view", view["view_id"]

        def finish(view_id: str | None) -> RouteResult:
            assert view_id is not None
            if self.stage is not None:
                # An explicit entry: a view whose tmux server restarted is rebuilt on the
                # running one (its server_restarted recovery runs), not refused.
                from core.reconcile.recovery import enter_view
                enter_view(self, request_id, view_id)
            view = views_ops.get_view(self.conn, view_id)
            target = self._route_target(project_id, view)
            transition_id = None
            if target != view["active_frame_id"]:
                moved = self.view_focus(request_id + ":route", view_id, target)
                transition_id = moved.transition_id
                view = views_ops.get_view(self.conn, view_id)
            return RouteResult(request_id, project_id, view_id, view["active_frame_id"],
                               view["revision"], transition_id)

        return self.run_request(request_id, "project.enter", {"project_id": project_id},
                                body, finish, finish)

    def _route_target(self, project_id: str, view: sqlite3.Row) -> str:
        """The active frame if it is an open frame of this project, else the most
        recently focused open frame, else the workspace."""
        active = view["active_frame_id"]
        if active:
            row = self.conn.execute(
                "SELECT lifecycle_state, project_id FROM frames WHERE frame_id = ?",
                (active,)).fetchone()
            if row and row["lifecycle_state"] == "open" and row["project_id"] == project_id:
                return active
        row = self.conn.execute(
            "SELECT frame_id FROM frames WHERE project_id = ? AND host_id = ?"
            " AND lifecycle_state = 'open' ORDER BY COALESCE(last_focused_at, 0) DESC,"
            " role = 'workspace' DESC, frame_id LIMIT 1",
            (project_id, self.host_id)).fetchone()
        if row is None:
            raise NotFound(f"project {project_id} has no open frame")
        return row["frame_id"]

    def _create_workspace(self, conn: sqlite3.Connection, project_id: str, now: int) -> str:
        project = self.config.project(project_id)
        frame_id = self.ids.new_id()
        context_id = self.ids.new_id()
        frames_ops.insert_work_context(conn, work_context_id=context_id, host_id=self.host_id,
                                       project_id=project_id, checkout_id=project.checkout_id,
                                       now=now)
        frames_ops.insert_frame(conn, frame_id=frame_id, host_id=self.host_id,
                                project_id=project_id, role=FrameRole.WORKSPACE,
                                parent_frame_id=None, work_context_id=context_id,
                                title=project.name, purpose=None,
                                preferred_provider=(project.preferred_provider.value
                                                    if project.preferred_provider else None),
                                created_by=CreatedBy.USER, depth=0, now=now)
        return frame_id

    # ------------------------------------------------------------------ frames

    def _frame(self, frame_id: str) -> sqlite3.Row:
        return frames_ops.get_frame(self.conn, frame_id)

    def _frame_result(self, request_id: str, transition_id: str | None = None
                      ) -> Callable[[str | None], FrameResult]:
        def build(frame_id: str | None) -> FrameResult:
            assert frame_id is not None
            row = self._frame(frame_id)
            return FrameResult(request_id, frame_id, row["lifecycle_state"], transition_id)
        return build

    def frame_start(self, request_id: str, frame_id: str, provider: Provider | None = None,
                    *, fresh: bool = False) -> StartResult:
        """Start the frame's agent: resume its current provider session by exact id when
        that session is stopped and resumable, else the start bundle of a new session
        (a rollover membership when the frame had one before)."""
        frame = self._frame(frame_id)
        current = None
        if frame["current_session_key"]:
            current = sessions_ops.get_session(self.conn, frame["current_session_key"])
        provider = provider or (Provider(current["provider"]) if current is not None
                                else self.provider_for(frame))

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            return "launch", self.plan_start_bundle(conn, request_id, frame_id, now,
                                                    provider=provider, fresh=fresh)

        def build(launch_id: str | None) -> StartResult:
            if launch_id is None:
                raise InvariantViolation(f"request {request_id} recorded no launch")
            row = self.conn.execute("SELECT * FROM launch_intents WHERE launch_id = ?",
                                    (launch_id,)).fetchone()
            surface = self.conn.execute("SELECT surface_id FROM surfaces WHERE launch_id = ?",
                                        (launch_id,)).fetchone()
            return StartResult(request_id, row["frame_id"], row["session_key"], launch_id,
                               surface["surface_id"])

        if self.stage is not None:
            self._show_for_start(request_id, frame_id)
        result = self.run_request(request_id, "frame.start",
                                  {"frame_id": frame_id, "provider": provider.value,
                                   "fresh": fresh}, body, build, build)
        if self.stage is not None:
            from core.engine import sagas
            sagas.launch(self, result.launch_id,
                         initial_prompt_for=self._undelivered_brief(frame_id))
        return result

    def _undelivered_brief(self, frame_id: str) -> str | None:
        """A push to this task that failed before its agent ran: the start carries the
        fixed claim line so the agent claims the brief it was never given."""
        row = self.conn.execute(
            "SELECT t.transition_id FROM view_transitions t JOIN transition_briefs b"
            " ON b.transition_id = t.transition_id WHERE t.target_frame_id = ?"
            " AND t.kind = 'push' AND t.state = 'failed' AND b.first_claimed_at IS NULL"
            " ORDER BY t.created_at DESC LIMIT 1", (frame_id,)).fetchone()
        return row[0] if row is not None else None

    def _show_for_start(self, request_id: str, frame_id: str) -> None:
        """n on a frame the view does not show: show it first (a focus), so the started
        agent lands in main as a start always does, instead of being refused."""
        placement = views_ops.placement_of_frame(self.conn, frame_id)
        if placement is None:
            return
        view = views_ops.get_view(self.conn, placement["view_id"])
        if view["active_frame_id"] == frame_id or view["state"] == ViewState.RETIRED or \
                placement["state"] != PlacementState.STOPPED_AFFINITY:
            return  # shown already, or it runs: the start refuses that by name
        self.view_focus(request_id + ":show", view["view_id"], frame_id)

    def frame_stop(self, request_id: str, frame_id: str) -> FrameResult:
        """Stop a frame's agent: its launch-owned pane is killed (an active one after
        the placeholder takes main), the session is kept, resumable by exact id."""
        from core.engine import sagas

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            frame = frames_ops.get_frame(conn, frame_id)
            placement = views_ops.placement_of_frame(conn, frame_id)
            if placement is None or placement["state"] not in (
                    PlacementState.ACTIVE, PlacementState.PARKED, PlacementState.STAGED):
                raise Conflict(f"frame {frame_id} has no running agent", code="not_running")
            view = views_ops.get_view(conn, placement["view_id"])
            _require_live_view(view)
            pending = transitions_ops.pending_for_view(conn, view["view_id"])
            if pending is not None and pending["state"] != "prepared":
                # A prepared one has moved nothing yet: stopping the agent it waits for
                # is the way to run it now (it runs right after the stop).
                raise Conflict("a transition is in flight in this view; let it settle first",
                               code="transition_in_flight")
            if placement["state"] == PlacementState.ACTIVE and self.stage is not None:
                self.stage.present(view, None)  # the placeholder takes main first
            panes = sagas.stop_runtime(conn, frame_id, now)
            if placement["state"] == PlacementState.ACTIVE:
                views_ops.mutate_view(conn, view["view_id"], view["revision"], now=now)
            stopped.extend(panes)
            del frame
            return "frame", frame_id

        stopped: list[str] = []
        result = self.run_request(request_id, "frame.stop", {"frame_id": frame_id}, body,
                                  self._frame_result(request_id), self._frame_result(request_id))
        for pane in stopped:
            if self.stage is not None:
                self.stage.kill(pane)
        self._run_unblocked(frame_id)
        return result

    def _run_unblocked(self, frame_id: str) -> None:
        """A prepared push/return that waited for this frame's agent runs once it stopped."""
        from core.engine import sagas

        rows = self.conn.execute(
            "SELECT transition_id FROM view_transitions WHERE state = 'prepared' AND kind IN"
            " ('push', 'complete_return') AND (source_frame_id = ? OR target_frame_id = ?)"
            " ORDER BY created_at", (frame_id, frame_id)).fetchall()
        for row in rows:
            if not sagas.waits_for_stop(self, row["transition_id"]):
                sagas.execute(self, row["transition_id"])

    def _require_child_provider(self, source_frame_id: str, provider: Provider | None) -> None:
        """Refuse a push, before anything is written, whose child's agent could not start.

        The child frame, its placement and the transition are committed first and
        the child is launched later (at the source's Stop, or at once); a provider
        that is not installed then failed that launch and left a stopped frame and
        a placement recovery behind a refusal. The check is the launcher's own
        (``check_provider``, probed once per process), so what passes here launches.
        An engine without a tmux stage launches nothing, so it has nothing to check.
        """
        from core.reconcile.provider_checks import check_provider

        if self.stage is None:
            return
        source = self.conn.execute("SELECT * FROM frames WHERE frame_id = ?",
                                   (source_frame_id,)).fetchone()
        if source is None:
            return  # the request itself says the frame does not exist
        chosen = provider or self._source_provider(self.conn, source) or \
            self._provider_of(None, source["project_id"])
        try:
            check_provider(self.config, chosen)
        except ProviderError as exc:
            raise ProviderError(f"no task was created: its agent would run {chosen.value}, "
                                f"which cannot start here ({exc.message})",
                                code=exc.code) from None

    def _depth_refusal(self, depth: int, max_depth: int) -> str:
        """Where a person meets the depth limit (an agent's task_push, the navigator's
        p, frame push) it says what the limit is and how to raise it, not just its name."""
        where = f" in {self.home.config_path}" if self.home is not None else ""
        level = "the workspace" if depth == 0 else \
            f"a task {depth} level{'s' if depth > 1 else ''} below the workspace"
        return (f"no task was created: this frame is {level}, and tasks may go at most "
                f"{max_depth} level{'s' if max_depth > 1 else ''} deep "
                f"([automation] initial_max_depth = {max_depth}). To let tasks push "
                f"their own tasks, set initial_max_depth = {depth + 1} (at most 32) "
                f"under [automation]{where}: an agent's next task_push reads it, a "
                "navigator pane once it restarts.")

    def _source_provider(self, conn: sqlite3.Connection,
                         source: sqlite3.Row) -> Provider | None:
        """A task runs on its parent agent's provider unless the push names one (a
        Codex agent's tasks are Codex tasks), while that provider is enabled."""
        if not source["current_session_key"]:
            return None
        row = conn.execute("SELECT provider FROM provider_sessions WHERE session_key = ?",
                           (source["current_session_key"],)).fetchone()
        if row is None:
            return None
        provider = Provider(row["provider"])
        config = self.config.providers.get(provider)
        return provider if config is not None and config.enabled else None

    def provider_for(self, frame: sqlite3.Row) -> Provider:
        """The provider a new session of ``frame`` runs: the frame's preferred one, else
        its project's, else the first enabled. Public because a push's child is started
        by the saga that executes the push (``core.engine.sagas``)."""
        return self._provider_of(frame["preferred_provider"], frame["project_id"])

    def _provider_of(self, preferred: str | None, project_id: str) -> Provider:
        if preferred:
            return Provider(preferred)
        project = self.config.project(project_id)
        if project.preferred_provider:
            return project.preferred_provider
        enabled = [p for p, c in self.config.providers.items() if c.enabled]
        return enabled[0] if enabled else Provider.CLAUDE

    def plan_start_bundle(self, conn: sqlite3.Connection, request_id: str, frame_id: str,
                          now: int, *, provider: Provider | None = None,
                          fresh: bool = False) -> str:
        """Plan a frame's start inside the caller's write transaction; return its launch id.

        The frame's current session is resumed by exact id when it is stopped and
        resumable on ``provider`` (default: that session's provider, else the frame's
        preferred one) and ``fresh`` is not asked; otherwise a new session starts (a
        rollover membership when the frame had one before). Public because the sagas
        plan starts in their own claim transaction: a pushed child's first start and
        a returned-to parent's resume.
        """
        frame = frames_ops.get_frame(conn, frame_id)
        key = frame["current_session_key"]
        session = sessions_ops.get_session(conn, key) if key else None
        if provider is None:
            provider = Provider(session["provider"]) if session is not None \
                else self.provider_for(frame)
        if session is not None and not fresh and _resumable(session, provider):
            return self.start_bundle(conn, request_id, frame_id, provider,
                                      MembershipReason.RESUMED, key, now)
        reason = MembershipReason.STARTED if session is None else MembershipReason.ROLLOVER
        return self.start_bundle(conn, request_id, frame_id, provider, reason, None, now)

    def start_bundle(self, conn: sqlite3.Connection, request_id: str, frame_id: str,
                     provider: Provider, reason: MembershipReason, resume_key: str | None,
                     now: int) -> str:
        """Write a start bundle inside the caller's transaction and return its launch id:
        a new session and membership (or the resumed ``resume_key``), the launch intent,
        its surface, the placement staged, the claim acquired. Public because the saga
        that executes a push starts the child as its own step (``core.engine.sagas``); the
        choice between resuming and a new session is ``plan_start_bundle``'s."""
        frame = frames_ops.get_frame(conn, frame_id)
        if frame["lifecycle_state"] != FrameLifecycle.OPEN:
            raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}; reopen it first")
        placement = views_ops.placement_of_frame(conn, frame_id)
        if placement is None:
            raise Conflict(f"frame {frame_id} has no placement in any view")
        if placement["state"] != PlacementState.STOPPED_AFFINITY:
            raise Conflict(
                f"frame {frame_id} already has a {placement['state']} runtime; "
                "stop it before starting another", code="runtime_exists")
        if resume_key is None:
            # Claude takes our UUID; Codex's thread id is learned from its first hook,
            # so it starts under a provisional id that binding re-keys.
            provider_session_id = self.ids.new_id() if provider is Provider.CLAUDE \
                else "pending-" + self.ids.new_id()
            key = sessions_ops.insert_session(
                conn, host_id=self.host_id, provider=provider,
                provider_session_id=provider_session_id, project_id=frame["project_id"],
                checkout_id=self.config.project(frame["project_id"]).checkout_id,
                name=frame["title"], purpose=frame["purpose"], now=now)
            sessions_ops.insert_membership(conn, frame_session_id=self.ids.new_id(),
                                           frame_id=frame_id, key=key, reason=reason, now=now)
            frames_ops.set_current_session(conn, frame_id, key, now)
            action, target = LaunchAction.NEW, None
        else:
            key, action, target = resume_key, LaunchAction.RESUME, resume_key
        launch_id = self.ids.new_id()
        sessions_ops.insert_launch(conn, launch_id=launch_id, request_id=request_id,
                                   host_id=self.host_id, frame_id=frame_id, provider=provider,
                                   action=action, target_session_key=target, key=key, now=now)
        surface_id = self.ids.new_id()
        sessions_ops.insert_surface(conn, surface_id=surface_id, host_id=self.host_id,
                                    provider=provider, key=key, launch_id=launch_id, now=now)
        views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                 PlacementState.STAGED, now, surface_id=surface_id,
                                 change_surface=True)
        context = frames_ops.get_context(conn, frame["work_context_id"])
        if context["claim_state"] == ClaimState.RELEASED:
            frames_ops.acquire_claim(conn, context["work_context_id"], frame_id,
                                     context["claim_generation"], now)
        elif context["claim_state"] == ClaimState.BLOCKED:
            raise Conflict("the checkout claim is blocked; resolve it first",
                           code="claim_blocked")
        return launch_id

    def frame_push(self, request_id: str, source_frame_id: str, title: str, brief: str, *,
                   purpose: str | None = None, provider: Provider | None = None,
                   created_by: CreatedBy = CreatedBy.USER) -> TransitionResult:
        """Prepare a push: child frame, its placement, the transition and its brief.

        Execution (parking the parent and presenting the child) waits for the
        source agent's Stop, or runs at once when the source has no live agent.
        """
        refuse_unsafe("title", title, TextShape.LINE)
        title = title.strip()
        if not title:
            raise SwitchboardError("a task needs a non-empty title", code="bad_request")
        if not brief.strip():
            raise SwitchboardError("a task needs a non-empty brief", code="bad_request")
        refuse_unsafe("brief", brief, TextShape.BLOCK)
        refuse_unsafe("purpose", purpose, TextShape.LINE)
        check_text("title", title)
        check_text("brief", brief)
        check_text("purpose", purpose)

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            source = frames_ops.get_frame(conn, source_frame_id)
            if source["lifecycle_state"] != FrameLifecycle.OPEN:
                raise Conflict(f"frame {source_frame_id} is not open")
            max_depth = self.config.automation.initial_max_depth
            if source["depth"] + 1 > max_depth:
                raise Conflict(self._depth_refusal(source["depth"], max_depth),
                               code="depth_exceeded")
            placement = views_ops.placement_of_frame(conn, source_frame_id)
            if placement is None:
                raise Conflict(f"frame {source_frame_id} is not placed in a view")
            view = views_ops.get_view(conn, placement["view_id"])
            _require_live_view(view)
            context = frames_ops.get_context(conn, source["work_context_id"])
            child_id = self.ids.new_id()
            chosen = provider or self._source_provider(conn, source)
            frames_ops.insert_frame(
                conn, frame_id=child_id, host_id=self.host_id, project_id=source["project_id"],
                role=FrameRole.TASK, parent_frame_id=source_frame_id,
                work_context_id=source["work_context_id"], title=title[:200],
                purpose=purpose, preferred_provider=chosen.value if chosen else None,
                created_by=created_by, depth=source["depth"] + 1, now=now)
            views_ops.insert_placement(conn, placement_id=self.ids.new_id(),
                                       host_id=self.host_id, view_id=view["view_id"],
                                       frame_id=child_id,
                                       state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                       now=now)
            transition_id = self.ids.new_id()
            transitions_ops.insert_transition(
                conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
                host_id=self.host_id, view_id=view["view_id"], kind=TransitionKind.PUSH,
                source_frame_id=source_frame_id, target_frame_id=child_id,
                work_context_id=source["work_context_id"],
                expected_view_revision=view["revision"],
                expected_claim_generation=context["claim_generation"], now=now)
            transitions_ops.insert_brief(
                conn, brief_id=self.ids.new_id(), transition_id=transition_id,
                source_frame_id=source_frame_id, source_session_key=source["current_session_key"],
                target_frame_id=child_id, brief=brief, now=now)
            # A new child learns its brief through the launch's initial prompt.
            transitions_ops.insert_control_turn(
                conn, control_turn_id=self.ids.new_id(), transition_id=transition_id,
                target_frame_id=child_id, target_session_key=None, kind=ControlKind.CLAIM_BRIEF,
                transport=ControlTransport.RESUME_INITIAL, now=now)
            return "transition", transition_id

        self._require_child_provider(source_frame_id, provider)
        semantic = {"source_frame_id": source_frame_id, "title": title, "brief": brief,
                    "purpose": purpose, "provider": provider.value if provider else None}
        result = _prepared(self.run_request(request_id, "frame.push", semantic, body,
                                            self._transition_result(request_id),
                                            self._transition_result(request_id)))
        from core.evidence import tasks as evidence_tasks  # after the commit, best effort
        evidence_tasks.task_pushed(self, result.transition_id)
        return _prepared(self._maybe_execute(result))

    def frame_complete(self, request_id: str, frame_id: str, summary: str, next_action: str,
                       *, source: CreatedBy = CreatedBy.USER) -> TransitionResult:
        """Store the completion handoff, mark the child closing, prepare the return."""
        if not summary.strip():
            raise SwitchboardError("complete-return needs a summary", code="bad_request")
        refuse_unsafe("summary", summary, TextShape.BLOCK)
        refuse_unsafe("next action", next_action, TextShape.BLOCK)
        check_text("summary", summary)
        check_text("next_action", next_action)

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            frame = frames_ops.get_frame(conn, frame_id)
            if frame["role"] != FrameRole.TASK:
                raise Conflict("only a task can complete and return; the workspace has no parent",
                               code="not_a_task")
            if frame["lifecycle_state"] != FrameLifecycle.OPEN:
                raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}, not open")
            if frames_ops.open_children(conn, frame_id):
                raise Conflict("complete or close its open child tasks first",
                               code="has_open_children")
            parent = frames_ops.get_frame(conn, frame["parent_frame_id"])
            placement = views_ops.placement_of_frame(conn, frame_id)
            if placement is None:
                raise Conflict(f"frame {frame_id} is not placed in any view")
            view = views_ops.get_view(conn, placement["view_id"])
            _require_live_view(view)
            context = frames_ops.get_context(conn, frame["work_context_id"])
            transition_id = self.ids.new_id()
            transitions_ops.insert_transition(
                conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
                host_id=self.host_id, view_id=view["view_id"],
                kind=TransitionKind.COMPLETE_RETURN, source_frame_id=frame_id,
                target_frame_id=parent["frame_id"], work_context_id=frame["work_context_id"],
                expected_view_revision=view["revision"],
                expected_claim_generation=context["claim_generation"], now=now)
            transitions_ops.insert_handoff(
                conn, handoff_id=self.ids.new_id(), transition_id=transition_id,
                source_frame_id=frame_id, source_session_key=frame["current_session_key"],
                target_frame_id=parent["frame_id"], summary=summary, next_action=next_action,
                now=now)
            frames_ops.begin_close(conn, frame_id, CloseReason.COMPLETED, now)
            policy = self.config.effective_complete_return(frame["project_id"])
            if policy.value == "synthesize":
                transport = self._control_transport(conn, parent)
                transitions_ops.insert_control_turn(
                    conn, control_turn_id=self.ids.new_id(), transition_id=transition_id,
                    target_frame_id=parent["frame_id"],
                    target_session_key=parent["current_session_key"],
                    kind=ControlKind.CLAIM_HANDOFF, transport=transport, now=now)
            return "transition", transition_id

        result = _prepared(self.run_request(
            request_id, "frame.complete",
            {"frame_id": frame_id, "summary": summary, "next_action": next_action},
            body, self._transition_result(request_id), self._transition_result(request_id)))
        from core.evidence import tasks as evidence_tasks  # after the commit, best effort
        evidence_tasks.task_completed(self, result.transition_id)
        return _prepared(self._maybe_execute(result))

    def transition_cancel(self, request_id: str, *, view_id: str | None = None,
                          transition_id: str | None = None,
                          by_frame: str | None = None) -> TransitionResult:
        """Withdraw a prepared transition (``prepared -> cancelled``): a push or return
        still waiting for an agent's Stop. Later states are refused by name."""
        from core.reconcile import settlement

        if (view_id is None) == (transition_id is None):
            raise SwitchboardError("name exactly one of a view or a transition to cancel",
                                   code="bad_request")
        cancelled = settlement.cancel(self, request_id, view_id=view_id,
                                      transition_id=transition_id, by_frame=by_frame)
        result = self._transition_result(request_id)(cancelled)
        assert result is not None
        return result

    def _control_transport(self, conn: sqlite3.Connection,
                           target: sqlite3.Row) -> ControlTransport:
        if self.config.control_turns.transport is TransportPolicy.RESUME_ONLY:
            return ControlTransport.RESUME_INITIAL
        placement = views_ops.placement_of_frame(conn, target["frame_id"])
        if placement is not None and placement["surface_id"]:
            surface = sessions_ops.get_surface(conn, placement["surface_id"])
            if surface["lifecycle_state"] == "live":
                return ControlTransport.LIVE_INPUT
        return ControlTransport.RESUME_INITIAL

    def frame_back(self, request_id: str, view_id: str) -> TransitionResult:
        """Show the exact parent of the active frame; the child stays open and parked."""

        def resolve(conn: sqlite3.Connection) -> tuple[str, str]:
            view = views_ops.get_view(conn, view_id)
            active = frames_ops.get_frame(conn, view["active_frame_id"])
            if active["parent_frame_id"] is None:
                raise Conflict("the workspace has no parent to go back to", code="no_parent")
            return active["parent_frame_id"], active["frame_id"]

        return _prepared(self._prepare_simple(request_id, TransitionKind.BACK, view_id,
                                              {"view_id": view_id}, resolve))

    def frame_close(self, request_id: str, frame_id: str) -> TransitionResult:
        """Human close: present the parent first, then stop the child, dismissed."""
        placement = views_ops.placement_of_frame(self.conn, frame_id)
        if placement is None:
            # A closed frame may have lost its placement; a replay still finds its request.
            placement = self.conn.execute(
                "SELECT * FROM frame_placements WHERE frame_id = ? ORDER BY updated_at DESC",
                (frame_id,)).fetchone()
        if placement is None:
            raise NotFound(f"frame {frame_id} is not placed in any view")

        def resolve(conn: sqlite3.Connection) -> tuple[str, str]:
            frame = frames_ops.get_frame(conn, frame_id)
            if frame["role"] != FrameRole.TASK:
                raise Conflict("the workspace cannot be closed; retire its view instead",
                               code="not_a_task")
            if frame["lifecycle_state"] != FrameLifecycle.OPEN:
                raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}, not open")
            if frames_ops.open_children(conn, frame_id):
                raise Conflict("close its open child tasks first", code="has_open_children")
            return frame["parent_frame_id"], frame_id

        return _prepared(self._prepare_simple(request_id, TransitionKind.HUMAN_CLOSE,
                                              placement["view_id"], {"frame_id": frame_id},
                                              resolve))

    def frame_reopen(self, request_id: str, frame_id: str) -> FrameResult:
        """closed -> open with the same identity and lineage; no runtime is started."""

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            frame = frames_ops.get_frame(conn, frame_id)
            if frame["parent_frame_id"]:
                parent = frames_ops.get_frame(conn, frame["parent_frame_id"])
                if parent["lifecycle_state"] != FrameLifecycle.OPEN:
                    raise Conflict("reopen its parent first", code="parent_closed")
            frames_ops.reopen(conn, frame_id, now)
            self._rehome_if_stranded(conn, frame, now)
            return "frame", frame_id

        build = self._frame_result(request_id)
        return self.run_request(request_id, "frame.reopen", {"frame_id": frame_id}, body,
                                build, build)

    def _rehome_if_stranded(self, conn: sqlite3.Connection, frame: sqlite3.Row,
                            now: int) -> None:
        """A frame whose view was retired moves to its project's live view, if any."""
        placement = views_ops.placement_of_frame(conn, frame["frame_id"])
        if placement is not None and views_ops.get_view(
                conn, placement["view_id"])["state"] != ViewState.RETIRED:
            return
        live = views_ops.view_of_project(conn, self.host_id, frame["project_id"])
        if live is None:
            return  # the next project entry homes it
        if placement is not None:
            views_ops.move_placement(conn, placement["placement_id"], placement["generation"],
                                     PlacementState.ORPHANED, now)
        views_ops.insert_placement(conn, placement_id=self.ids.new_id(), host_id=self.host_id,
                                   view_id=live["view_id"], frame_id=frame["frame_id"],
                                   state=PlacementState.STOPPED_AFFINITY, surface_id=None,
                                   now=now)

    # ------------------------------------------------------------------ views

    def view_focus(self, request_id: str, view_id: str, frame_id: str) -> TransitionResult:
        """Navigation only: no lineage, nothing closes."""

        def resolve(conn: sqlite3.Connection) -> tuple[str, str | None]:
            frame = frames_ops.get_frame(conn, frame_id)
            if frame["lifecycle_state"] != FrameLifecycle.OPEN:
                raise Conflict(f"frame {frame_id} is {frame['lifecycle_state']}; only open "
                               "frames can be shown (reopen it first)", code="frame_not_open")
            placement = views_ops.placement_of_frame(conn, frame_id)
            if placement is None or placement["view_id"] != view_id:
                raise Conflict(f"frame {frame_id} is not placed in view {view_id}")
            return frame_id, views_ops.get_view(conn, view_id)["active_frame_id"]

        return _prepared(self._prepare_simple(request_id, TransitionKind.FOCUS, view_id,
                                              {"view_id": view_id, "frame_id": frame_id},
                                              resolve))

    def view_mode(self, request_id: str, view_id: str, mode: ViewMode | None = None) -> ViewResult:
        """Set (or, with no mode, toggle) navigator/direct as a model-free ``mode``
        transition; the provider pane never moves or restarts."""
        chosen: dict[str, str] = {}

        def resolve(conn: sqlite3.Connection) -> tuple[str, str | None] | None:
            view = views_ops.get_view(conn, view_id)
            chosen["mode"] = (mode or (ViewMode.DIRECT if view["mode"] == ViewMode.NAVIGATOR
                                       else ViewMode.NAVIGATOR)).value
            if view["mode"] == chosen["mode"]:
                return None  # already there: the request is recorded, nothing moves
            if view["active_frame_id"] is None:
                raise Conflict("the view shows no frame yet; enter its project first",
                               code="view_empty")
            return view["active_frame_id"], view["active_frame_id"]

        result = self._prepare_simple(
            request_id, TransitionKind.MODE, view_id,
            {"view_id": view_id, "mode": mode.value if mode else "toggle"},
            resolve, target_mode=lambda: chosen["mode"])
        row = views_ops.get_view(self.conn, view_id)
        if result is None and mode is ViewMode.NAVIGATOR and self.stage is not None \
                and row["mode"] == ViewMode.NAVIGATOR and row["tmux_window_id"]:
            # Already navigator mode (prefix+S): a navigator that crashed or was quit
            # is brought back in place; a live one is left exactly as it is.
            self.stage.set_mode(row, ViewMode.NAVIGATOR)
        return ViewResult(request_id, view_id, row["mode"], row["revision"],
                          row["active_frame_id"])

    def view_retire(self, request_id: str, view_id: str) -> ViewResult:
        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            view = views_ops.get_view(conn, view_id)
            if transitions_ops.pending_for_view(conn, view_id) is not None:
                raise Conflict("a transition is in flight in this view")
            live = conn.execute(
                "SELECT COUNT(*) FROM frame_placements p JOIN surfaces s"
                " ON s.surface_id = p.surface_id WHERE p.view_id = ?"
                " AND s.lifecycle_state = 'live'", (view_id,)).fetchone()[0]
            if live:
                raise Conflict(f"view has {live} live agent pane(s); stop them first",
                               code="live_surfaces")
            views_ops.mutate_view(conn, view_id, view["revision"], state=ViewState.RETIRED,
                                  now=now)
            # Its placements stay until the next entry re-homes them, so every open
            # frame always has exactly one owning placement.
            return "view", view_id

        def build(_: str | None) -> ViewResult:
            row = views_ops.get_view(self.conn, view_id)
            return ViewResult(request_id, view_id, row["mode"], row["revision"],
                              row["active_frame_id"])

        return self.run_request(request_id, "view.retire", {"view_id": view_id}, body, build,
                                build)

    # ------------------------------------------------------------------ claims

    def context_release(self, request_id: str, work_context_id: str) -> str:
        """Release a checkout claim only when nothing can still mutate the checkout."""

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            context = frames_ops.get_context(conn, work_context_id)
            if context["background_state"] != "safe":
                raise Conflict(f"background work is {context['background_state']}; "
                               "the claim stays held", code="background_work")
            live = conn.execute(
                "SELECT COUNT(*) FROM surfaces s JOIN frame_placements p"
                " ON p.surface_id = s.surface_id JOIN frames f ON f.frame_id = p.frame_id"
                " WHERE f.work_context_id = ? AND s.lifecycle_state = 'live'",
                (work_context_id,)).fetchone()[0]
            if live:
                raise Conflict(f"{live} live agent pane(s) can still change the checkout",
                               code="live_surfaces")
            if transitions_ops.pending_in_context(conn, work_context_id):
                raise Conflict("a transition is pending in this context",
                               code="transition_in_flight")
            frames_ops.release_claim(conn, work_context_id, context["claim_generation"], now)
            return "work_context", work_context_id

        return self.run_request(request_id, "context.release",
                                {"work_context_id": work_context_id}, body,
                                _recorded_id, _recorded_id)

    def context_block(self, request_id: str, work_context_id: str) -> str:
        """A person blocks the checkout claim (e.g. to work in it by hand): no automatic
        transition may take it until an explicit resolution."""

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            context = frames_ops.get_context(conn, work_context_id)
            if context["claim_state"] == ClaimState.BLOCKED:
                return "work_context", work_context_id
            if transitions_ops.pending_in_context(conn, work_context_id):
                raise Conflict("a transition is in flight in this context; let it settle first",
                               code="transition_in_flight")
            frames_ops.block_claim(conn, work_context_id, context["claim_generation"], now)
            return "work_context", work_context_id

        return self.run_request(request_id, "context.block",
                                {"work_context_id": work_context_id}, body,
                                _recorded_id, _recorded_id)

    def context_resolve(self, request_id: str, work_context_id: str, to_state: ClaimState,
                        foreground_frame_id: str | None = None) -> str:
        """The explicit human resolution of a blocked claim."""

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            context = frames_ops.get_context(conn, work_context_id)
            frames_ops.resolve_blocked(conn, work_context_id, to_state,
                                       foreground_frame_id if to_state is ClaimState.HELD
                                       else None, context["claim_generation"], now)
            return "work_context", work_context_id

        return self.run_request(request_id, "context.resolve",
                                {"work_context_id": work_context_id, "to": to_state.value,
                                 "foreground": foreground_frame_id}, body,
                                _recorded_id, _recorded_id)

    # ------------------------------------------------------------------ transitions

    def _transition_result(self, request_id: str
                           ) -> Callable[[str | None], TransitionResult | None]:
        def build(transition_id: str | None) -> TransitionResult | None:
            if transition_id is None:
                return None  # the request was a no-op (e.g. mode already set)
            row = transitions_ops.get_transition(self.conn, transition_id)
            return TransitionResult(request_id, transition_id, row["kind"], row["state"],
                                    row["transport_phase"], row["view_id"],
                                    row["target_frame_id"])
        return build

    def _prepare_simple(self, request_id: str, kind: TransitionKind, view_id: str,
                        semantic: dict[str, Any],
                        resolve: Callable[[sqlite3.Connection], tuple[str, str | None] | None],
                        *, target_mode: Callable[[], str] | None = None
                        ) -> TransitionResult | None:
        """Prepare a model-free transition; ``resolve`` derives (target, source) inside the
        transaction, after the request lookup, so a replay never re-derives them. A
        show-only move (focus, back) is claimed in that same transaction."""
        from core.engine import sagas

        claimed: list[str] = []

        def body(conn: sqlite3.Connection, fp: str, now: int) -> tuple[str, str | None]:
            view = views_ops.get_view(conn, view_id)
            _require_live_view(view)
            resolved = resolve(conn)
            if resolved is None:
                return "none", None
            target_frame_id, source = resolved
            pending = transitions_ops.pending_for_view(conn, view_id)
            if pending is not None:
                # Navigation may replace navigation that has not started; an agent's
                # prepared push or return is never dropped by a keypress.
                if pending["state"] == "prepared" and kind in MODEL_FREE \
                        and pending["kind"] in MODEL_FREE:
                    transitions_ops.move_transition(conn, pending["transition_id"],
                                                    _ts("prepared"), _ts("superseded"), now)
                else:
                    raise Conflict(
                        f"a {pending['kind']} transition is {pending['state']} in this view; "
                        "wait for it to settle or recover it", code="transition_in_flight")
            target = frames_ops.get_frame(conn, target_frame_id)
            context = frames_ops.get_context(conn, target["work_context_id"])
            transition_id = self.ids.new_id()
            transitions_ops.insert_transition(
                conn, transition_id=transition_id, request_id=request_id, fingerprint=fp,
                host_id=self.host_id, view_id=view_id, kind=kind, source_frame_id=source,
                target_frame_id=target_frame_id, work_context_id=target["work_context_id"],
                expected_view_revision=view["revision"],
                expected_claim_generation=context["claim_generation"], now=now,
                target_mode=target_mode() if target_mode is not None else None)
            if sagas.claim_at_prepare(self, conn, transition_id, now):
                claimed.append(transition_id)
            return "transition", transition_id

        result = self.run_request(request_id, f"view.{kind.value}", semantic, body,
                                  self._transition_result(request_id),
                                  self._transition_result(request_id))
        return self._maybe_execute(result, claimed=bool(claimed))

    def _maybe_execute(self, result: TransitionResult | None, *, claimed: bool = False
                       ) -> TransitionResult | None:
        """Run a prepared transition now unless it must wait for its source's Stop;
        ``claimed``: this request's prepare claimed it (``sagas.claim_at_prepare``)."""
        from core.engine import sagas

        if result is None or (result.state != "prepared" and not claimed):
            return result
        if claimed:
            sagas.execute(self, result.transition_id, claimed=True)
        elif not sagas.waits_for_stop(self, result.transition_id):
            sagas.execute(self, result.transition_id)
        row = transitions_ops.get_transition(self.conn, result.transition_id)
        return TransitionResult(result.request_id, result.transition_id, row["kind"],
                                row["state"], row["transport_phase"], row["view_id"],
                                row["target_frame_id"])


MODEL_FREE = (TransitionKind.FOCUS, TransitionKind.BACK, TransitionKind.MODE)


def _prepared(result: TransitionResult | None) -> TransitionResult:
    """The result of a request that always prepares a transition (only a mode toggle
    that is already in place prepares none)."""
    if result is None:
        raise InvariantViolation("the request prepared no transition")
    return result


def _recorded_id(result_id: str | None) -> str:
    """The id a context request records (every one records its work context)."""
    if result_id is None:
        raise InvariantViolation("the request recorded no work context")
    return result_id


def _resumable(session: sqlite3.Row, provider: Provider) -> bool:
    """A stopped session of the same provider whose exact id is known can be resumed."""
    return (session["provider"] == provider.value
            and session["runtime_presence"] != "live"
            and session["resumability"] != "missing"
            and not session["provider_session_id"].startswith("pending-"))


def _require_live_view(view: sqlite3.Row) -> None:
    """Only ready or degraded views take mutations; retired is terminal."""
    if view["state"] not in (ViewState.READY, ViewState.DEGRADED, ViewState.TRANSITIONING):
        raise Conflict(f"view {view['view_id']} is {view['state']}; enter the project again "
                       "to get a live view", code="view_not_live")


def _ts(value: str) -> TransitionState:
    return TransitionState(value)
