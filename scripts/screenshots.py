"""Regenerate screenshots/*.svg (and *.png when a converter exists) from the real app.

Each screen runs the real SwitchboardApp headless against a real registry
built through the engine (the same frozen scenario the snapshot tests use:
fixed clock, sequential ids), so the images are reproducible and never show a
mocked state. Run: ``python scripts/screenshots.py`` (or ``make screenshots``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from textual.widgets import Input  # noqa: E402

from navigator.app import SwitchboardApp  # noqa: E402
from navigator.widgets.frames import FrameTree, frame_key  # noqa: E402
from tests.navigator.scenario import Scenario, build_demo, new_scenario  # noqa: E402

OUT = ROOT / "screenshots"


@dataclass(frozen=True)
class Shot:
    name: str
    size: tuple[int, int]
    title: str
    select: str | None = None  # frame title to put the cursor on
    keys: Sequence[str] = field(default_factory=tuple)
    bound_view: str | None = None  # project whose view the pane belongs to
    prepare: Callable[[Scenario], None] | None = None  # extra state, written before start
    rest: float = 0.0  # seconds to rest on the selection (the preview reads after a rest)
    after: float = 0.0  # seconds to rest after the keys (a search runs after a pause)
    scene: str = "demo"  # the registry it starts from: demo, empty or providers

    def __post_init__(self) -> None:
        room = title_room(self.size[0])
        if len(self.title) > room:
            raise ValueError(f"{self.name}: the title {self.title!r} is wider than the "
                             f"{room} characters beside the window buttons; shorten it")


def title_room(columns: int) -> int:
    """How many title characters fit, centred, right of the window buttons.

    Rich's SVG is 12.2 px a column plus 19; its 18 px title measures ~9 px a character
    as rendered, and the three buttons end at x=77 (a few px of air kept after them)."""
    width = columns * 12.2 + 19
    return int((width - 166) / 9)


def record_evidence(scenario: Scenario) -> None:
    """A short turn of the "Fix login" agent, as its hooks would have recorded it."""
    from storage.session_db import open_session_db, record_hook_event, session_db_path

    key = scenario.frame_row("Fix login")["current_session_key"]
    start = 1_767_261_600_000  # 2026-01-01 10:00:00 UTC; the script pins TZ=UTC
    steps = (("SessionStart", "session_started", 0, None, None),
             ("UserPromptSubmit", "prompt_submitted", 2_000, None, None),
             ("PreToolUse", "tool_started", 3_000, "Read", "toolu_01"),
             ("PostToolUse", "tool_finished", 3_180, "Read", "toolu_01"),
             ("PreToolUse", "tool_started", 4_000, "Bash", "toolu_02"),
             ("PostToolUse", "tool_finished", 6_450, "Bash", "toolu_02"),
             ("Stop", "turn_stopped", 9_000, None, None))
    conn = open_session_db(session_db_path(scenario.home.root, key), now_ms=start)
    try:
        for event, kind, offset, tool, tool_use_id in steps:
            record_hook_event(conn, session_key=key, provider="claude", project_id="alpha",
                              project_root="/src/alpha", event=event, kind=kind,
                              now_ms=start + offset, turn_id="prompt-1", tool_name=tool,
                              tool_use_id=tool_use_id)
    finally:
        conn.close()


def parked_agent(scenario: Scenario) -> None:
    """Write docs shown in main, Fix login's agent working parked; its pane's last lines
    as the preview would read them (the tmux read itself is tested on a real server)."""
    from core.context.requests import new_request_id
    from core.model.enums import Activity
    from tests.navigator.scenario import set_activity

    scenario.engine.view_focus(new_request_id(), scenario.views["alpha"],
                               scenario.frames["Write docs"])
    set_activity(scenario, "Fix login", Activity.WORKING, "live")
    scenario.client.preview = lambda frame_id: [  # type: ignore[method-assign]
        "$ python -m pytest -q tests/test_login.py", "F..",
        "FAILED tests/test_login.py::test_expired_token", "1 failed, 2 passed in 0.31s",
        "● Fixing the token expiry check in auth.py"]


def reviewed_change(scenario: Scenario) -> None:
    """alpha's checkout is a git repository in which Fix login's agent changed app.py and
    added a module; the person has a draft comment on one line (issue 27)."""
    from core.review.client import ReviewClient
    from tests.navigator.test_review_screens import change, checkout_here, repository

    checkout = repository(scenario.home.root / "alpha-repo")
    checkout_here(scenario, "alpha", checkout)
    change(checkout)
    ReviewClient(scenario.home, scenario.client.message_frame).comment(
        scenario.frames["Fix login"], "app.py", 5, "use the plus, as the other steps do")


def searched_work(scenario: Scenario) -> None:
    """Fix login's session ran pytest (failing, then passing) and returned a handoff."""
    from tests.navigator.test_session_detail import record_frame_work

    record_frame_work(scenario, "Fix login")


def used_tokens(scenario: Scenario) -> None:
    """Fix login's agent worked three turns, the last ended on a rate limit (issue 26):
    the usage reader's rows from a transcript in Claude Code's shape."""
    from tests.navigator.test_session_detail import record_frame_work
    from tests.navigator.test_usage_screens import record_usage

    record_frame_work(scenario, "Fix login")
    record_usage(scenario, "Fix login")


GEMINI_TASK = "Port the parser"
OPENCODE_TASK = "Parser tests"


def providers_scene(home: Path) -> Scenario:
    """alpha's workspace runs Claude Code; it pushed a Gemini CLI task, which pushed an
    OpenCode task (issue 41). Both providers are off in a new config: this scene's config
    turns them on, as a person does under [providers.gemini] and [providers.opencode], and
    lets a task push its own task ([automation] initial_max_depth = 2)."""
    from dataclasses import replace

    from core.apps.client import EngineClient
    from core.config.config import AutomationConfig, ProviderConfig, default_providers
    from core.config.home import Home
    from core.context.requests import new_request_id
    from core.model.enums import Activity, Provider
    from core.model.ports import FixedClock, SequentialIds
    from core.runtime.claims import claim_for_frame
    from tests.factories import make_engine
    from tests.navigator.scenario import back, push_and_claim, set_activity

    providers = {provider: replace(config, enabled=True)
                 for provider, config in default_providers().items()}
    assert all(isinstance(config, ProviderConfig) for config in providers.values())
    clock = FixedClock()
    engine = make_engine(home, clock=clock, ids=SequentialIds(), providers=providers,
                         automation=AutomationConfig(initial_max_depth=2))
    scenario = Scenario(engine, EngineClient(engine=engine, home=Home(home, home / "config.toml")),
                        Home(home, home / "config.toml"), clock)
    route = engine.project_enter(new_request_id(), "alpha")
    scenario.frames["alpha"], scenario.views["alpha"] = route.frame_id, route.view_id
    scenario.tick()
    claim_for_frame(engine, route.frame_id, None)  # the workspace's Claude Code session
    scenario.tick()
    push_and_claim(scenario, "alpha", "Fix login")
    back(scenario, "alpha")
    for title, parent, provider in ((GEMINI_TASK, "alpha", Provider.GEMINI),
                                    (OPENCODE_TASK, GEMINI_TASK, Provider.OPENCODE)):
        pushed = engine.frame_push(new_request_id(), scenario.frames[parent], title,
                                   f"brief for {title}", provider=provider)
        scenario.frames[title] = pushed.target_frame_id
        scenario.tick()
        claim_for_frame(engine, pushed.target_frame_id, None)
        scenario.tick()
    set_activity(scenario, "Fix login", Activity.READY, "live")
    set_activity(scenario, GEMINI_TASK, Activity.WORKING, "live")
    set_activity(scenario, OPENCODE_TASK, Activity.NEEDS_INPUT, "live")
    route = engine.project_enter(new_request_id(), "beta")
    scenario.frames["beta"], scenario.views["beta"] = route.frame_id, route.view_id
    scenario.tick()
    return scenario


def gemini_work(scenario: Scenario) -> None:
    """Two turns of the Gemini task: their hooks as Gemini CLI 0.61.0 sends them, and
    their usage read by the same reader its AfterAgent hook starts from a chat record in
    the CLI's shape."""
    import json

    from core.usage.worker import read_usage
    from storage.session_db import open_session_db, record_hook_event, session_db_path

    key = scenario.frame_row(GEMINI_TASK)["current_session_key"]
    start = 1_767_261_600_000  # 2026-01-01 10:00:00 UTC
    conn = open_session_db(session_db_path(scenario.home.root, key), now_ms=start)
    try:
        for event, kind, offset, tool in (
                ("SessionStart", "session_started", 0, None),
                ("BeforeAgent", "prompt_submitted", 1_000, None),
                ("BeforeTool", "tool_started", 4_000, "read_file"),
                ("AfterTool", "tool_finished", 4_120, "read_file"),
                ("AfterAgent", "turn_stopped", 9_000, None),
                ("BeforeAgent", "prompt_submitted", 58_000, None),
                ("AfterAgent", "turn_stopped", 66_000, None)):
            record_hook_event(conn, session_key=key, provider="gemini", project_id="alpha",
                              project_root="/src/alpha", event=event, kind=kind,
                              now_ms=start + offset, tool_name=tool)
    finally:
        conn.close()
    record = scenario.home.root / "gemini-chat.jsonl"
    for index, (reply, tokens) in enumerate((
            ("r1", {"input": 8_200, "output": 410, "cached": 6_000, "thoughts": 900, "tool": 0}),
            ("r2", {"input": 12_500, "output": 1_150, "cached": 9_800, "thoughts": 2_100,
                    "tool": 300}))):
        line = {"type": "gemini", "id": reply, "model": "gemini-3.1-pro-preview",
                "content": "", "tokens": {**tokens, "total": sum(tokens.values())}}
        with record.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        read_usage(scenario.home.root, key, "gemini", str(record), f"t-{index}",
                   start + 60_000 * index)


SHOTS = (
    Shot("navigator-80x24", (80, 24), "Switchboard: projects, views, recoveries",
         select="Fix login"),
    Shot("navigator-sidebar-40x40", (40, 40), "Switchboard as a view's sidebar",
         select="Write docs", bound_view="alpha"),
    Shot("first-run-80x24", (80, 24), "Switchboard: first run", scene="empty"),
    Shot("complete-return-80x24", (80, 24), "Complete and return",
         select="Fix login", keys=("c", *"login fixed", "tab", *"ship behind a flag")),
    Shot("human-close-40x40", (40, 40), "Human close asks first", select="Write docs",
         keys=("x",)),
    Shot("search-80x24", (80, 24), "/ filters the tree", keys=("slash", *"docs")),
    Shot("help-80x24", (80, 24), "? lists every key", keys=("question_mark",)),
    Shot("session-detail-80x24", (80, 24), "i: the agent's recorded session",
         select="Fix login", keys=("i",), prepare=record_evidence),
    Shot("new-task-80x24", (80, 24), "p: a new task under the selected frame",
         select="beta", keys=("p", *"Add docs", "enter", *"Write the worktree section.")),
    Shot("preview-80x24", (80, 24), "A parked agent's last lines", select="Fix login",
         prepare=parked_agent, rest=0.8),
    Shot("compact-26x23", (26, 23), "Compact 80x24", select="Fix login"),
    Shot("navigator-100x30", (100, 30), "Switchboard at 100x30: a parked agent's preview",
         select="Fix login", prepare=parked_agent, rest=0.8),
    Shot("navigator-60x20", (60, 20), "Switchboard at 60x20", select="Fix login"),
    Shot("sidebar-90x30", (40, 29), "Sidebar of 90x30: tree first",
         select="Fix login", bound_view="alpha", prepare=parked_agent, rest=0.8),
    Shot("new-task-60x20", (19, 19), "p, 60x20",
         select="Fix login", keys=("p", *"Add docs")),
    Shot("diff-80x24", (80, 24), "v: review what the task changed", select="Fix login",
         keys=("v", "n", "down", "down"), prepare=reviewed_change, after=0.3),
    Shot("find-80x24", (80, 24), "ctrl+f: search every session", keys=("ctrl+f", *"pytest"),
         prepare=searched_work, after=0.6),
    Shot("usage-80x24", (80, 24), "u: tokens and estimated cost per frame and in all",
         select="Fix login", keys=("u",), prepare=used_tokens, after=0.5),
    Shot("usage-detail-80x24", (80, 24), "i: the session's turns, their tokens and cost",
         select="Fix login", keys=("i",), prepare=used_tokens, after=0.5),
    Shot("providers-80x24", (80, 24), "Claude Code workspace, Gemini CLI task, its OpenCode "
         "task", select=GEMINI_TASK, scene="providers"),
    Shot("providers-switch-80x24", (80, 24), "P on the OpenCode task: carry it on with Claude "
         "Code", select=OPENCODE_TASK, keys=("P",), scene="providers"),
    Shot("providers-usage-80x24", (80, 24), "i on the Gemini CLI task: its hooks, turns and "
         "tokens", select=GEMINI_TASK, keys=("i",), prepare=gemini_work, after=0.5,
         scene="providers"),
)


async def settle(app: SwitchboardApp, pilot) -> None:  # noqa: ANN001 - textual Pilot
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def take(shot: Shot, template: Scenario, home: Path) -> Path:
    scenario = template.clone(home)
    if shot.prepare is not None:
        shot.prepare(scenario)
    view_id = scenario.views.get(shot.bound_view or "")
    app = SwitchboardApp(scenario.client, view_id=view_id, poll_interval=3600)
    async with app.run_test(size=shot.size) as pilot:
        await settle(app, pilot)
        if shot.select is not None:
            frames = app.query_one(FrameTree)
            frames.focus()
            frames.select_key(frame_key(scenario.frames[shot.select]))
            await pilot.pause()
            if shot.rest:
                await pilot.pause(shot.rest)
                await settle(app, pilot)
        for key in shot.keys:
            await pilot.press(key)
            await pilot.pause()
        if shot.after:
            await pilot.pause(shot.after)
            await settle(app, pilot)
        for screen in app.screen_stack:
            for box in screen.query(Input):
                box.cursor_blink = False
        await settle(app, pilot)
        app.clear_notifications()
        await pilot.pause()
        path = OUT / f"{shot.name}.svg"
        app.save_screenshot(filename=path.name, path=str(OUT))
        path.write_text(path.read_text(encoding="utf-8").replace(
            ">Switchboard</text>", f">{shot.title}</text>", 1), encoding="utf-8")
    scenario.engine.conn.close()
    return path


def to_png(svg: Path) -> Path | None:
    """PNG beside the SVG with the first converter that really works, else None.

    Each converter writes a scratch file that replaces the PNG only when it is a
    real PNG: a converter that fails (ImageMagick without an SVG delegate) leaves
    the committed PNG as it was instead of deleting it.
    """
    png = svg.with_suffix(".png")
    scratch = svg.with_suffix(".new.png")
    try:
        import cairosvg  # type: ignore[import-not-found]

        cairosvg.svg2png(url=str(svg), write_to=str(scratch))
        scratch.replace(png)
        return png
    except Exception:
        scratch.unlink(missing_ok=True)
    for command in (["rsvg-convert", "-o", str(scratch), str(svg)],
                    ["inkscape", str(svg), "--export-filename", str(scratch)],
                    ["convert", str(svg), str(scratch)]):
        if shutil.which(command[0]) is None:
            continue
        done = subprocess.run(command, capture_output=True, check=False)
        if done.returncode == 0 and scratch.is_file() and scratch.read_bytes()[:4] == b"\x89PNG":
            scratch.replace(png)
            return png
        scratch.unlink(missing_ok=True)
    return None


async def main() -> int:
    os.environ["TZ"] = "UTC"  # times on screen are local: pin them for reproducible images
    time.tzset()
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sb-shots-") as tmp:
        base = Path(tmp)
        demo = build_demo(base / "demo-template")
        demo.freeze()
        empty = new_scenario(base / "empty-template")
        empty.freeze()
        providers = providers_scene(base / "providers-template")
        providers.freeze()
        scenes = {"demo": demo, "empty": empty, "providers": providers}
        converted = 0
        wanted = set(sys.argv[1:])  # names to regenerate; none given: every shot
        for index, shot in enumerate(SHOTS):
            if wanted and shot.name not in wanted:
                continue
            svg = await take(shot, scenes[shot.scene], base / f"home-{index}")
            png = to_png(svg)
            converted += png is not None
            print(f"{svg.relative_to(ROOT)}" + (f"  {png.relative_to(ROOT)}" if png else ""))
    if not converted:
        print("no working SVG->PNG converter (cairosvg, rsvg-convert, inkscape, ImageMagick "
              "with an SVG delegate): SVGs regenerated, PNGs left as they were (they may be "
              "stale; install cairosvg and run `make screenshots` again)")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
