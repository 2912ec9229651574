"""`switchboard serve` in a real headless Chromium (Debian's ``chromium``).

The server runs as the person runs it (its own process, 127.0.0.1, a random
token); Chromium loads the printed URL, the navigator draws, a key acts (enter
on a project makes the engine create its view: a registry row and a tmux window
on the test's private server), and the same requests without the token, or with
a wrong one, are refused with 403, in the browser and from a plain client.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from tests.integration.cdp import Browser
from tests.integration.journey_env import make_live_engine, tmux

REPO_ROOT = Path(__file__).resolve().parents[2]


def _serve(root: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(SWITCHBOARD_HOME=str(root), SWITCHBOARD_CONFIG=str(root / "config.toml"),
               PYTHONPATH=str(REPO_ROOT))
    server = subprocess.Popen([sys.executable, "-m", "navigator.cli", "serve"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{40,}", line)
    assert found, (line, server.stderr.read() if server.poll() is not None else "")
    return server, found.group(0)


async def _drawn(page, seconds: float = 30) -> None:
    """The terminal has received the app's first output (textual-serve marks the body)."""
    deadline = time.monotonic() + seconds
    while not await page.evaluate("document.body.classList.contains('-first-byte')"):
        assert time.monotonic() < deadline, "the served navigator never drew"
        await asyncio.sleep(0.1)


def test_the_served_navigator_in_chromium_acts_and_refuses_without_its_token(
        tmp_path: Path, tmux_socket: Path) -> None:
    root = tmp_path / "home"
    engine = make_live_engine(root, tmux_socket)
    server, url = _serve(root)
    base = f"http://{urlsplit(url).netloc}"
    token = url.split("token=", 1)[1]
    browser = Browser(1280, 720)

    async def run() -> None:
        async with aiohttp.ClientSession() as plain:
            # a plain client: every route needs the token (or its cookie)
            for path in ("/", "/ws", "/static/js/textual.js", "/download/x",
                         f"/?token={token[:-1]}x", "/?token="):
                async with plain.get(base + path) as response:
                    assert response.status == 403, (path, response.status)
                    assert "needs its token" in await response.text()
            async with plain.get(url) as response:
                assert response.status == 200
                cookie = response.cookies[f"sb_serve_token_{urlsplit(url).port}"]
                assert cookie["httponly"]
                assert cookie["samesite"] == "Strict"
            # a websocket from another origin is refused even with the token
            async with plain.get(f"{base}/ws?token={token}",
                                 headers={"Origin": "http://evil.example"}) as response:
                assert response.status == 403

            page = await browser.page(plain)
            await page.navigate(url)
            await _drawn(page)
            # the page's own assets came through its cookie
            assert await page.status_of(f"{base}/static/js/textual.js") == 200
            await asyncio.sleep(1.0)
            await page.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
            # enter on the selected project: the engine creates its view
            await page.key("enter")
            deadline = time.monotonic() + 30
            while engine.conn.execute("SELECT COUNT(*) FROM user_views").fetchone()[0] == 0:
                assert time.monotonic() < deadline, "enter in the browser made no view"
                await asyncio.sleep(0.2)
            while "alpha" not in tmux(tmux_socket, "list-windows", "-a", "-F",
                                      "#{window_name}"):  # the row commits first
                assert time.monotonic() < deadline, "the view's window never appeared"
                await asyncio.sleep(0.2)

            # the same page address without the token (and without the cookie it left):
            # refused, and the browser shows why
            await page.send("Network.clearBrowserCookies")
            page.events.clear()
            await page.navigate(base + "/")
            deadline = time.monotonic() + 15
            while "needs its token" not in (await page.evaluate(
                    "document.body ? document.body.innerText : ''") or ""):
                assert time.monotonic() < deadline, "the refusal was never shown"
                await asyncio.sleep(0.1)
            statuses = [e["params"]["response"]["status"] for e in page.events
                        if e.get("method") == "Network.responseReceived"
                        and e["params"]["response"]["url"].startswith(base)]
            assert statuses and statuses[0] == 403, page.events[-5:]
            assert await page.status_of(f"{base}/static/js/textual.js") == 403

    try:
        asyncio.run(run())
    finally:
        browser.close()
        server.terminate()
        server.wait(timeout=20)
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()
        engine.conn.close()
