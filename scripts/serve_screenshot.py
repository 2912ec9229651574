"""Regenerate screenshots/serve-browser.png: `switchboard serve` in headless Chromium.

The demo registry (the snapshot tests' scenario) on this host, one remote host
(a second home behind a real sshd on loopback, three agents, one needing input)
followed live, the navigator served on 127.0.0.1 behind its token, and Chromium
(Debian's ``chromium``) driven over the DevTools protocol takes the picture.
Run: ``python scripts/serve_screenshot.py``.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from core.model.session_enums import Activity, ActivityReason  # noqa: E402
from tests.integration.cdp import Browser  # noqa: E402
from tests.integration.remote_hosts import (  # noqa: E402
    add_agents,
    end_followers,
    make_hosts,
    plain_home,
    set_activity,
)
from tests.navigator.scenario import build_demo  # noqa: E402

OUT = ROOT / "screenshots" / "serve-browser.png"


def main() -> int:
    base = Path(tempfile.mkdtemp(prefix="sb-shot-", dir="/tmp"))
    hosts = make_hosts(1, plain_home(("api", "web", "infra")))
    server = None
    browser = None
    try:
        host = hosts.hosts[0]
        agents = add_agents(host, 3)
        set_activity(host, agents[1][1], Activity.NEEDS_INPUT, ActivityReason.PERMISSION)
        set_activity(host, agents[2][1], Activity.READY, ActivityReason.TURN_COMPLETE)
        home = base / "home"
        demo = build_demo(home)
        demo.engine.conn.close()
        with open(home / "config.toml", "a", encoding="utf-8") as config:
            config.write(f'\n[[remotes]]\nname = "{host.name}"\nhost_id = "{host.host_id}"\n'
                         f'ssh_target = "{host.name}"\n')
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env.update(SWITCHBOARD_HOME=str(home), SWITCHBOARD_CONFIG=str(home / "config.toml"),
                   SWITCHBOARD_SSH=str(hosts.wrapper), PYTHONPATH=str(ROOT))
        server = subprocess.Popen([sys.executable, "-m", "navigator.cli", "serve"], env=env,
                                  stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None
        found = re.search(r"http://\S+", server.stdout.readline())
        assert found, "serve printed no URL"
        browser = Browser(1180, 560)

        async def shoot() -> None:
            async with aiohttp.ClientSession() as session:
                page = await browser.page(session)
                await page.navigate(found.group(0) + "&fontsize=15", size=(1180, 560))
                deadline = time.monotonic() + 30
                while not await page.evaluate(
                        "document.body.classList.contains('-first-byte')"):
                    assert time.monotonic() < deadline, "the navigator never drew"
                    await asyncio.sleep(0.1)
                await asyncio.sleep(6)  # the remote host's first document, then a redraw
                # one more fit, so the terminal repaints whole at its final size
                for height in (500, 560):
                    await page.send("Emulation.setDeviceMetricsOverride", width=1180,
                                    height=height, deviceScaleFactor=1, mobile=False)
                    await page.evaluate("window.dispatchEvent(new Event('resize'))")
                    await asyncio.sleep(2)
                await page.screenshot(OUT)

        asyncio.run(shoot())
        print(f"wrote {OUT.relative_to(ROOT)}")
    finally:
        if browser is not None:
            browser.close()
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        end_followers()
        hosts.close()
        subprocess.run(["rm", "-rf", str(base)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
