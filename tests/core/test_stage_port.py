"""The tmux stage the engine is typed with: ``TmuxStage`` provides every member of
``StagePort`` (mypy checks the signatures where ``attach_stage`` assigns it)."""

from __future__ import annotations

from core.context.stage_port import StagePort
from core.runtime.stage import TmuxStage
from tests.core.engines import fresh_engine


def test_tmux_stage_satisfies_the_port(tmp_path) -> None:
    engine = fresh_engine(tmp_path / "home")
    assert isinstance(TmuxStage(engine, str(tmp_path / "sock")), StagePort)
