"""The tree's desired shape as plain data: ordering, History, filter, and the spec cache."""

from __future__ import annotations

from dataclasses import replace

from navigator.widgets.frames import NodeKind, SpecCache, build_specs
from tests.navigator.scenario import Scenario


def _titles(spec) -> list:  # noqa: ANN001 - a _Spec
    return [(child.label, _titles(child)) for child in spec.children]


def test_open_frames_nest_under_their_parent_and_closed_ones_go_to_history(
        demo: Scenario) -> None:
    state = demo.client.state()
    alpha = next(s for s in build_specs(state.projects, state) if s.ref.project_name == "alpha")
    assert _titles(alpha) == [("alpha", [("Fix login", []), ("Write docs", [])]),
                              ("History (1)", [("Old spike", [])])]
    assert alpha.children[1].ref.kind is NodeKind.HISTORY


def test_filter_keeps_matches_and_their_ancestors(demo: Scenario) -> None:
    state = demo.client.state()
    specs = build_specs(state.projects, state, "docs")
    assert [s.ref.project_name for s in specs] == ["alpha"]
    assert _titles(specs[0]) == [("alpha", [("Write docs", [])])]


def test_unchanged_projects_reuse_their_spec_object(demo: Scenario) -> None:
    cache: SpecCache = {}
    state = demo.client.state()
    first = {s.ref.project_id: s for s in build_specs(state.projects, state, "", cache)}
    demo.tick()
    later = demo.client.state()  # host observed_at moved; nothing else did
    again = {s.ref.project_id: s for s in build_specs(later.projects, later, "", cache)}
    assert all(again[key] is first[key] for key in first)
    changed_alpha = replace(later.projects[0], name="alpha renamed")
    mixed = build_specs((changed_alpha, *later.projects[1:]), later, "", cache)
    by_id = {s.ref.project_id: s for s in mixed}
    assert by_id[changed_alpha.project_id] is not first[changed_alpha.project_id]
    assert by_id[later.projects[1].project_id] is first[later.projects[1].project_id]
