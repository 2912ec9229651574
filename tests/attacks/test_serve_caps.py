"""`switchboard serve` under attack by its own token holder, and as a good citizen.

Each test runs serve as a person does (its own process, 127.0.0.1, a random token,
a real registry) and performs the attack through a plain HTTP/websocket client:
a 20000 x 20000 tab and a 30000 x 30000 resize (the drawn terminal must stay at
500 x 200), a ninth tab (refused, with a page that says why), ``kill -9`` of serve
(every tab's navigator must end within seconds), SIGINT and SIGTERM (serve stops
at once, its tabs with it, without asyncio's "loop is closed" noise), a tab's
navigator sent SIGTERM or stuck (SIGSTOP) when its tab closes, a port
already in use (one line, no traceback), the static folder's listing, the cookie's
name, and the page: every URL it or its assets reference is this server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest
from rich.cells import cell_len

from navigator.serve import MAX_COLUMNS, MAX_ROWS, MAX_TABS
from tests.integration.journey_env import make_live_engine
from tests.waiting import retry_until

pytestmark = pytest.mark.tmux

REPO_ROOT = Path(__file__).resolve().parents[2]
MOVE = re.compile(rb"\x1b\[(\d+);(\d+)H")
CONTROL = re.compile(r"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07")
LOOP_CLOSED = re.compile(r"loop is closed|Event loop is closed", re.IGNORECASE)


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    base: str
    token: str
    port: int
    seen: set[int] = field(default_factory=set)  # the processes it started, for cleanup

    def ws(self, width: int = 80, height: int = 24) -> str:
        return f"{self.base}/ws?token={self.token}&width={width}&height={height}"

    def output(self) -> str:
        """Everything serve printed, once it has exited."""
        out, err = self.process.communicate(timeout=30)
        return out + err


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"),
               PYTHONPATH=str(REPO_ROOT))
    return env


@pytest.fixture
def home(tmp_path: Path, tmux_socket: Path) -> Path:
    root = tmp_path / "home"
    make_live_engine(root, tmux_socket).conn.close()
    return root


@pytest.fixture
def served(home: Path) -> Iterator[Served]:
    process = subprocess.Popen([sys.executable, "-m", "navigator.cli", "serve"], env=_env(home),
                               cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{40,})", line)
    assert found, (line, process.stderr.read() if process.poll() is not None else "")
    url = found.group(0)
    serving = Served(process, url, url.split("/?", 1)[0], found.group(2), int(found.group(1)))
    try:
        yield serving
    finally:
        serving.seen.update(_descendants(process.pid))
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
        for pid in serving.seen:  # the tabs this test made, should a fix have failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, ...)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[1] == str(pid) and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def _descendants(pid: int) -> list[int]:
    """Live processes below ``pid``, at any depth."""
    found, frontier = [], [pid]
    while frontier:
        children = _children(frontier.pop())
        found += children
        frontier += children
    return found


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
    return False


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def drawn_size(output: bytes) -> tuple[int, int]:
    """The terminal a navigator drew on, from what it sent: the lowest row it moved
    the cursor to, and the rightmost cell a line reached (Textual draws each line
    after a cursor move to its start)."""
    parts = MOVE.split(output)
    width = height = 0
    for index in range(1, len(parts), 3):
        row, column = int(parts[index]), int(parts[index + 1])
        text = CONTROL.sub("", parts[index + 2].decode("utf-8", "replace")).replace("\n", "")
        width, height = max(width, column - 1 + cell_len(text)), max(height, row)
    return width, height


async def _read_until(ws: aiohttp.ClientWebSocketResponse, done: Callable[[bytes], bool],
                      seconds: float, sofar: bytes = b"") -> bytes:
    """The tab's output until ``done`` accepts it (or ``seconds`` pass)."""
    deadline = time.monotonic() + seconds
    while not done(sofar) and time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(ws.receive(), 0.5)
        except TimeoutError:
            continue
        if message.type == aiohttp.WSMsgType.BINARY:
            sofar += message.data
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                              aiohttp.WSMsgType.ERROR):
            break
    return sofar


async def _quiet(ws: aiohttp.ClientWebSocketResponse, seconds: float) -> bytes:
    """The tab's output once it drew a screen and then sent nothing for 2 s."""
    deadline = time.monotonic() + seconds
    output = b""
    while time.monotonic() < deadline:
        more = await _read_until(ws, lambda out: False, 2.0)
        output += more
        if len(output) > 1000 and not more:
            return output
    raise AssertionError(f"the tab never drew and went quiet ({len(output)} bytes)")


def _session() -> aiohttp.ClientSession:
    # A browser keeps a 127.0.0.1 cookie; aiohttp's jar only does when told to.
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def _tabs_of(serving: Served, count: int) -> list[int]:
    assert retry_until(lambda: len(_children(serving.process.pid)) == count, 30), (
        _children(serving.process.pid))
    serving.seen.update(_descendants(serving.process.pid))
    return _children(serving.process.pid)


def test_a_huge_terminal_is_clamped_at_the_start_and_on_resize(served: Served) -> None:
    async def run() -> tuple[bytes, bytes, list[bytes], float]:
        async with _session() as session, session.ws_connect(served.ws(20000, 20000)) as ws:
            first = await _read_until(ws, lambda out: drawn_size(out)[1] >= MAX_ROWS, 60)
            tabs = _tabs_of(served, 1)
            await ws.send_str(json.dumps(["resize", {"width": 30000, "height": 30000}]))
            resized = await _read_until(ws, lambda out: drawn_size(out)[0] >= MAX_COLUMNS, 60)
            await asyncio.sleep(1.0)  # anything it would still draw beyond the bounds
            resized = await _read_until(ws, lambda out: False, 1.0, resized)
            # read the tab while its socket is open: closing it ends the tab
            environ = Path(f"/proc/{tabs[0]}/environ").read_bytes().split(b"\0")
            return first, resized, environ, _rss_mb(tabs[0])

    first, resized, environ, rss = asyncio.run(run())
    assert f"COLUMNS={MAX_COLUMNS}".encode() in environ
    assert f"ROWS={MAX_ROWS}".encode() in environ
    assert drawn_size(first)[1] == MAX_ROWS
    assert drawn_size(resized) == (MAX_COLUMNS, MAX_ROWS)
    assert 0 < rss < 400, rss


def test_a_ninth_tab_is_refused_and_sigterm_ends_serve_and_its_tabs(served: Served) -> None:
    async def run() -> list[int]:
        async with _session() as session:
            sockets = [await session.ws_connect(served.ws()) for _ in range(MAX_TABS)]
            tabs = _tabs_of(served, MAX_TABS)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(served.ws())
            assert refused.value.status == 503
            async with session.get(served.url) as response:
                assert response.status == 503
                text = await response.text()
                assert f"already runs {MAX_TABS} browser tabs" in text
                assert "close one of them" in text
            assert len(_children(served.process.pid)) == MAX_TABS
            # a closed tab frees its place (and its navigator)
            await sockets.pop().close()
            _tabs_of(served, MAX_TABS - 1)
            sockets.append(await session.ws_connect(served.ws()))
            tabs = list({*tabs, *_tabs_of(served, MAX_TABS)})
            started = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            await asyncio.get_running_loop().run_in_executor(None, served.process.wait, 30)
            assert time.monotonic() - started < 10
            for ws in sockets:
                await ws.close()
            return tabs

    tabs = asyncio.run(run())
    assert retry_until(lambda: not any(_group_alive(pid) for pid in tabs), 10)
    output = served.output()
    assert served.process.returncode == 0, output
    assert not LOOP_CLOSED.search(output), output
    assert "Traceback" not in output, output


def test_kill_9_of_serve_ends_every_tab_within_seconds(served: Served) -> None:
    async def run() -> list[int]:
        async with _session() as session:
            sockets = [await session.ws_connect(served.ws()) for _ in range(2)]
            for ws in sockets:  # both navigators drew and went quiet (an idle navigator
                # writes nothing, so a closed stdout alone never ends it)
                assert await _quiet(ws, 60)
            tabs = _descendants(served.process.pid)
            served.seen.update(tabs)
            assert len(tabs) >= 2, tabs
            served.process.kill()
            served.process.wait(timeout=10)
            return tabs

    tabs = asyncio.run(run())
    # the navigators and whatever they started (their process groups) are gone
    assert retry_until(lambda: not any(_alive(pid) or _group_alive(pid) for pid in tabs), 10), [
        (pid, _stat(pid)) for pid in tabs]


def test_ctrl_c_stops_serve_at_once_without_loop_noise(served: Served) -> None:
    async def run() -> list[int]:
        async with _session() as session, session.ws_connect(served.ws()) as ws:
            assert await _read_until(ws, lambda out: len(out) > 1000, 60)
            tabs = _tabs_of(served, 1)
            started = time.monotonic()
            served.process.send_signal(signal.SIGINT)
            await asyncio.get_running_loop().run_in_executor(None, served.process.wait, 30)
            assert time.monotonic() - started < 10
            return tabs

    tabs = asyncio.run(run())
    output = served.output()
    assert served.process.returncode == 0, output
    assert not LOOP_CLOSED.search(output), output
    assert "Traceback" not in output, output
    assert not any(_group_alive(pid) for pid in tabs)


def test_a_port_in_use_is_one_line_naming_it(home: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "navigator.cli", "serve", "--port",
                                 str(port)], env=_env(home), cwd=REPO_ROOT, capture_output=True,
                                text=True, timeout=60)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"port {port}" in lines[0] and "in use" in lines[0] and "--port" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert "Switchboard navigator:" not in result.stdout  # no URL for a server that is not


def _references(text: str) -> list[str]:
    """Every URL a page or stylesheet makes the browser load or connect to."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)  # a comment loads nothing
    found = re.findall(r"""(?:href|src|data-session-websocket-url)\s*=\s*["']([^"']+)["']""",
                       text)
    found += re.findall(r"""url\(\s*["']?([^"')]+)["']?\s*\)""", text)
    found += re.findall(r"""@import\s+["']([^"']+)["']""", text)
    return found


def test_the_page_and_its_assets_are_all_this_servers(served: Served) -> None:
    origin = urlsplit(served.base)

    async def run() -> None:
        async with _session() as session:
            async with session.get(served.url) as response:
                assert response.status == 200
                page = await response.text()
                cookie = response.cookies[f"sb_serve_token_{served.port}"]
                assert cookie["httponly"] and cookie["samesite"] == "Strict"
                policy = response.headers["Content-Security-Policy"]
                assert "default-src 'none'" in policy
            assert "fonts.googleapis" not in page
            # every absolute URL anywhere on the page is this server's
            for absolute in re.findall(r"[a-z]+://[^\s\"'<>)]+", page):
                assert urlsplit(absolute).netloc == origin.netloc, absolute
            pending = [urljoin(served.url, ref) for ref in _references(page)]
            assert any(ref.endswith("textual.js") for ref in pending), pending
            assert any(ref.endswith(".ttf") for ref in pending), pending  # the font is ours
            seen: set[str] = set()
            while pending:
                ref = pending.pop()
                if ref in seen:
                    continue
                seen.add(ref)
                parts = urlsplit(ref)
                assert parts.netloc == origin.netloc, ref
                if parts.scheme in ("ws", "wss"):
                    continue
                async with session.get(ref) as asset:  # the cookie carries the token
                    assert asset.status == 200, ref
                    body = await asset.read()
                if ref.endswith(".css"):
                    pending += [urljoin(ref, inner) for inner in _references(body.decode())]
                if ref.endswith(".js"):
                    assert not re.search(rb"https?://", body), ref
            # the static folder is served file by file, never listed
            for folder in ("/static/", "/static/fonts/", "/static/js", "/static/css/"):
                async with session.get(served.base + folder) as listing:
                    assert listing.status in (403, 404), folder
                    text = await listing.text()
                    assert "Index of" not in text and ".ttf" not in text, folder

    asyncio.run(run())


def test_a_tab_navigator_honours_sigterm_and_one_that_hangs_dies_with_its_tab(
        served: Served) -> None:
    """A navigator that no longer answers (SIGSTOP stands in for one stuck drawing a
    huge screen) is killed when its tab closes; one sent SIGTERM ends by itself."""
    async def run() -> tuple[int, int]:
        async with _session() as session:
            sockets = [await session.ws_connect(served.ws()) for _ in range(2)]
            for ws in sockets:
                assert await _quiet(ws, 60)
            stuck, asked = _tabs_of(served, 2)
            os.kill(asked, signal.SIGTERM)
            assert retry_until(lambda: not _alive(asked), 10), _stat(asked)
            # whichever socket was the stuck one's: type into both (far more than a
            # pipe holds), then close both tabs' sockets
            os.kill(stuck, signal.SIGSTOP)
            for ws in sockets:
                for _ in range(64):
                    if ws.closed:  # the tab that ended on SIGTERM
                        break
                    with contextlib.suppress(aiohttp.ClientConnectionResetError):
                        await ws.send_str(json.dumps(["stdin", "x" * 8192]))
                await ws.close()
            def stuck_gone() -> bool:
                return not (_alive(stuck) or _group_alive(stuck))

            assert await asyncio.get_running_loop().run_in_executor(
                None, retry_until, stuck_gone, 20), _stat(stuck)
            async with session.get(served.url) as response:  # serve carries on
                assert response.status == 200
            return stuck, asked

    asyncio.run(run())
    assert _children(served.process.pid) == []
