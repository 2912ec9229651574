"""A real headless Chromium (Debian's ``chromium``) driven over the DevTools protocol.

No browser-automation dependency: Chromium is started with a fresh profile and
``--remote-debugging-port=0``, the port it chose is read from the profile's
``DevToolsActivePort``, and the page is driven over its DevTools websocket with
aiohttp's client (already installed with textual-serve). Just enough protocol
for the serve test and the README screenshot: navigate, evaluate, keys,
screenshot.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = "chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")

#: DevTools key descriptions for the keys the tests press (key, code, keyCode, text).
KEYS: dict[str, tuple[str, str, int, str]] = {
    "enter": ("Enter", "Enter", 13, "\r"),
    "escape": ("Escape", "Escape", 27, ""),
    "tab": ("Tab", "Tab", 9, ""),
    "down": ("ArrowDown", "ArrowDown", 40, ""),
    "up": ("ArrowUp", "ArrowUp", 38, ""),
}


class Browser:
    """One headless Chromium with its own throwaway profile; ``close`` ends it."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        if shutil.which(CHROMIUM) is None:
            raise AssertionError("chromium is not installed; `make test` installs it (apt)")
        self.profile = Path(tempfile.mkdtemp(prefix="sb-chromium-"))
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (active.exists() and active.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AssertionError("chromium did not open its DevTools port")
            time.sleep(0.05)
        self.port = int(active.read_text().split()[0])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    async def page(self, session: aiohttp.ClientSession) -> Page:
        async with session.get(f"http://127.0.0.1:{self.port}/json/list") as response:
            targets = await response.json()
        target = next(t for t in targets if t["type"] == "page")
        ws = await session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        return Page(ws)


class Page:
    """A page's DevTools session: one command at a time, events kept by method."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        sent = self.next_id
        await self.ws.send_str(json.dumps({"id": sent, "method": method, "params": params}))
        while True:
            message = await asyncio.wait_for(self.ws.receive(), 30)
            data = json.loads(message.data)
            if data.get("id") == sent:
                if "error" in data:
                    raise AssertionError(f"{method}: {data['error']}")
                return data.get("result", {})
            self.events.append(data)

    async def navigate(self, url: str, size: tuple[int, int] | None = None) -> dict[str, Any]:
        """Load ``url``; ``size`` fixes the viewport first (a headless window's own size
        can change once the page loads, and a terminal sized before that keeps a stale
        strip)."""
        await self.send("Page.enable")
        await self.send("Network.enable")
        if size is not None:
            await self.send("Emulation.setDeviceMetricsOverride", width=size[0],
                            height=size[1], deviceScaleFactor=1, mobile=False)
        return await self.send("Page.navigate", url=url)

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression,
                                 returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    async def key(self, name: str) -> None:
        """One key press, as the person's keyboard sends it to the focused element."""
        if name in KEYS:
            key, code, key_code, text = KEYS[name]
        else:
            key, code, key_code, text = name, f"Key{name.upper()}", ord(name.upper()), name
        down: dict[str, Any] = {"type": "keyDown", "key": key, "code": code,
                                "windowsVirtualKeyCode": key_code}
        if text:
            down["text"] = text
        await self.send("Input.dispatchKeyEvent", **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code,
                        windowsVirtualKeyCode=key_code)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    async def status_of(self, url: str) -> int | None:
        """The HTTP status the page's own fetch gets for ``url`` (cookies included)."""
        return await self.evaluate(
            f"fetch({json.dumps(url)}, {{credentials: 'include'}}).then(r => r.status)")
