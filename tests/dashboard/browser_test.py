#!/usr/bin/python3
"""The dashboard in a real browser (docs/guide/dashboard.md, "Tests").

Starts the example server (`dashboard --serve 127.0.0.1:0`), starts headless
Chromium with a DevTools port, and over the DevTools protocol: loads the
page, waits for the pools to render, shows the dead-lettered tasks, clicks
Retry on one with the mouse, and sees the retried task run again (its new
task succeeds); opens a task whose payload holds <script> and checks that it
shows as text and ran nothing; saves screenshots under --out.

Exit codes: 0 passed, 1 failed, 77 skipped (no Chromium: the reason is
printed).
"""
import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

TIMEOUT = 30.0  # seconds for any one thing to appear on the page


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One page target over the DevTools protocol."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []

    async def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        await self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == my_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    async def evaluate(self, expression):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate {expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression, what):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.1)
        seen = await self.evaluate("document.querySelector('#tasks') ? document.querySelector('#message').textContent +"
                                   " ' | tasks: ' + document.querySelector('#tasks tbody').innerText.slice(0, 600) : location.href")
        raise AssertionError(f"timed out waiting for {what}; the page shows: {seen}")

    async def click(self, selector):
        """A real mouse click at the centre of the element."""
        box = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()")
        if not box:
            raise AssertionError(f"nothing to click at {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)

    async def screenshot(self, path):
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))


def start_server(binary):
    server = subprocess.Popen([binary, "--serve", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not match:
        server.kill()
        raise AssertionError(f"the server did not say where it serves: {line!r}")
    return server, f"http://127.0.0.1:{match.group(1)}/"


def start_browser(chromium, profile):
    browser = subprocess.Popen(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1400,1800", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                lines = f.read().split()
            if lines:
                return browser, int(lines[0])
        time.sleep(0.05)
    browser.kill()
    raise AssertionError("Chromium did not open its DevTools port")


async def drive(url, devtools_port, out):
    import websockets  # python3-websockets

    with urllib.request.urlopen(f"http://127.0.0.1:{devtools_port}/json/list") as r:
        targets = [t for t in json.load(r) if t["type"] == "page"]
    async with websockets.connect(targets[0]["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024) as ws:
        page = Page(ws)
        await page.call("Page.enable")
        await page.call("Runtime.enable")
        await page.call("Page.navigate", url=url)

        # The pools render, with their charts.
        pools = await page.wait_for(
            "document.querySelector('#pools') && document.querySelector('#pools').dataset.state === 'ready' &&"
            " document.querySelectorAll('#pools .card').length", "the pools")
        assert pools == 3, f"3 pools expected, the page shows {pools}"
        await page.wait_for("document.querySelectorAll('#pools .card svg.chart').length === 6", "the pools' charts")
        print(f"browser: the page shows {pools} pools with their charts")

        # The dead letters, by the status filter.
        await page.evaluate("(() => { const s = document.querySelector('#status'); s.value = 'dead_lettered';"
                            " s.dispatchEvent(new Event('change')); })()")
        dead = await page.wait_for(
            "(() => { const rows = [...document.querySelectorAll('#tasks tbody tr[data-status=dead_lettered]')];"
            " const flaky = rows.find((r) => r.children[3].textContent === 'export'); return flaky && flaky.dataset.task; })()",
            "a dead-lettered export in the task list")
        row = f"#tasks tbody tr[data-task='{dead}']"
        name = await page.evaluate(f"document.querySelector(\"{row} .actions button\").textContent")
        assert name == "Retry", f"the row's action is named {name!r}, not Retry"
        await page.screenshot(os.path.join(out, "dead_letters.png"))

        # Retry it with the mouse; its new task runs again and succeeds.
        await page.click(f"{row} .actions button")
        message = await page.wait_for(
            "(() => { const m = document.querySelector('#message').textContent; return /retried as task/.test(m) && m; })()",
            "the retry's confirmation")
        again = re.search(r"retried as task (\d+)", message).group(1)
        print(f"browser: clicked Retry on dead-lettered task {dead}; the page says: {message}")
        await page.evaluate(f"(() => {{ document.querySelector('#search-by').value = 'id';"
                            f" document.querySelector('#search').value = '{again}';"
                            " document.querySelector('#filters').requestSubmit(); })()")
        await page.wait_for(f"document.querySelector(\"#tasks tbody tr[data-task='{again}'][data-status=succeeded]\") !== null",
                            f"task {again} to run again and succeed")
        print(f"browser: task {again}, the retry, ran again and succeeded")

        # Pause a pool, then resume it, with the mouse.
        await page.click("#pools .card[data-pool='emails'] h3 button")
        await page.wait_for("(() => { const c = document.querySelector(\"#pools .card[data-pool='emails']\");"
                            " return c.classList.contains('paused') && c.querySelector('h3 button').textContent === 'Resume'; })()",
                            "the emails pool to show paused, with a Resume control")
        await page.click("#pools .card[data-pool='emails'] h3 button")
        await page.wait_for("(() => { const c = document.querySelector(\"#pools .card[data-pool='emails']\");"
                            " return !c.classList.contains('paused') && c.querySelector('h3 button').textContent === 'Pause'; })()",
                            "the emails pool to run again")
        print("browser: paused the emails pool with Pause and resumed it with Resume")

        # A payload holding markup shows as text, and runs nothing.
        await page.click(f"#tasks tbody tr[data-task='{again}'] .task-link")
        await page.evaluate("(() => { document.querySelector('#search-by').value = 'key_prefix';"
                            " document.querySelector('#search').value = 'markup-payload';"
                            " const s = document.querySelector('#status'); s.value = '';"
                            " document.querySelector('#filters').requestSubmit(); })()")
        markup = await page.wait_for(
            "(() => { const r = document.querySelector('#tasks tbody tr[data-task]'); return r && r.children[3].textContent === 'markup' && r.dataset.task; })()",
            "the task whose payload holds markup")
        await page.click(f"#tasks tbody tr[data-task='{markup}'] .task-link")
        shown = await page.wait_for(
            f"document.querySelector('#detail').dataset.task === '{markup}' && document.querySelector('#payload').textContent",
            "the task's payload preview")
        assert "<script>" in shown, f"the payload is not shown as text: {shown!r}"
        injected = await page.evaluate(
            "[window.__cronoq_injected === undefined, document.querySelectorAll('#detail script, #detail img').length]")
        assert injected == [True, 0], f"the payload's markup ran or became elements: {injected}"
        print("browser: a payload holding <script> and <img onerror> shows as text and runs nothing")
        await page.screenshot(os.path.join(out, "dashboard.png"))
        print(f"browser: screenshots in {out}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True, help="the dashboard example binary")
    parser.add_argument("--out", required=True, help="where screenshots go")
    args = parser.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("SKIPPED: no Chromium on this machine (Debian: apt-get install chromium)")
        return 77
    os.makedirs(args.out, exist_ok=True)
    server, url = start_server(args.server)
    profile = tempfile.mkdtemp(prefix="cronoq-chromium-")
    browser = None
    try:
        browser, devtools_port = start_browser(chromium, profile)
        asyncio.run(asyncio.wait_for(drive(url, devtools_port, args.out), 4 * TIMEOUT))
        return 0
    except (AssertionError, RuntimeError, asyncio.TimeoutError) as e:
        print(f"FAILED: {e!r}")
        return 1
    finally:
        if browser:
            browser.terminate()
            try:
                browser.wait(10)
            except subprocess.TimeoutExpired:
                browser.kill()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
