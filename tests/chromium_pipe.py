"""Headless Chromium driven over the DevTools protocol on a pipe, for the report's browser tests.

One launch serves several checks of one page: the page is loaded once (parsing and laying out report.html and
drawing its timelines is most of a launch's CPU) and then measured, shot and resized in place. With
--remote-debugging-pipe Chromium reads commands on its fd 3 and answers on fd 4, each message JSON ended by a NUL.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import time
from pathlib import Path
from types import TracebackType
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]
TIMEOUT = 300.0  # seconds for any one command (a page load, a check): a hung browser fails the test, never waits on


class ChromiumPage:
    """Chromium started on its own profile with a window `width` × `height`, attached to its one page; a context
    manager: the browser is closed (killed if it does not answer) on the way out. Its stderr goes to `log`."""

    def __init__(self, browser: str, profile: Path, width: int, height: int) -> None:
        self.log = profile.with_name(profile.name + ".log")
        commands, self._to_browser = os.pipe()
        self._from_browser, answers = os.pipe()
        with open(os.devnull, "rb") as nothing, self.log.open("wb") as log:
            self.pid = os.posix_spawn(
                browser,
                [browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
                dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, nothing.fileno(), 0),
                    (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                    (os.POSIX_SPAWN_DUP2, log.fileno(), 2),
                    (os.POSIX_SPAWN_DUP2, commands, 3),
                    (os.POSIX_SPAWN_DUP2, answers, 4),
                ],
            )
        os.close(commands)
        os.close(answers)
        self._read = b""
        self._last_id = 0
        self._events: list[dict[str, Any]] = []
        self._running = True
        self._session: str | None = None
        self._target = ""

    def __enter__(self) -> ChromiumPage:
        try:
            pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            self._target = pages[0]["targetId"]
            attached = self.call("Target.attachToTarget", targetId=self._target, flatten=True)
            self._session = attached["sessionId"]
            self.call("Page.enable")
        except BaseException:
            self._end(closed=False)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._end(closed=kind is None)

    def _end(self, closed: bool) -> None:
        """The browser closed (`closed`: asked to close, as a person would), else killed: ours to end either way."""
        try:
            if closed:
                self._session = None
                self.call("Browser.close")
                self._reaped(60.0, cleanly=True)
        finally:
            if self._running:  # an error, or no answer to Browser.close
                os.kill(self.pid, signal.SIGKILL)
                self._reaped(60.0)
            os.close(self._to_browser)
            os.close(self._from_browser)

    def _reaped(self, seconds: float, cleanly: bool = False) -> None:
        """The browser's end waited for (`seconds` at most); `cleanly`: it must have exited 0."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._running = False
                assert not cleanly or os.waitstatus_to_exitcode(status) == 0, self.log.read_text()[-2000:]
                return
            time.sleep(0.05)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._read:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer within {TIMEOUT:.0f} s: {self.log.read_text()[-2000:]}")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise EOFError(f"Chromium ended: {self.log.read_text()[-2000:]}")
            self._read += chunk
        message, self._read = self._read.split(b"\0", 1)
        found: dict[str, Any] = json.loads(message)
        return found

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """A command to the page (to the browser before one is attached, or with Browser.close): its result."""
        self._last_id += 1
        command: dict[str, Any] = {"id": self._last_id, "method": method, "params": params}
        if self._session is not None:
            command["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._message(deadline)
            if message.get("id") == self._last_id:
                assert "error" not in message, (method, message["error"])
                result: dict[str, Any] = message["result"]
                return result
            self._events.append(message)

    def event(self, method: str) -> dict[str, Any]:
        """The first `method` event not yet taken, waited for."""
        for at, message in enumerate(self._events):
            if message.get("method") == method:
                return self._events.pop(at)
        deadline = time.monotonic() + TIMEOUT
        while (message := self._message(deadline)).get("method") != method:
            self._events.append(message)
        return message

    def load(self, page: Path) -> None:
        self.call("Page.navigate", url=page.as_uri())
        self.event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page, a promise awaited; a thrown error fails."""
        found = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in found, found["exceptionDetails"]
        return found["result"].get("value")

    def resize(self, width: int, height: int, window: bool = False) -> None:
        """The page's viewport made `width` × `height`, or with `window` the window resized as --window-size sizes it
        (headless Chromium keeps part of its height for a browser's bars); done once the page has had its resize event
        (each size asked for differs from the one before, or no event would come)."""
        self.evaluate('void (window.resized = new Promise((r) => addEventListener("resize", r, {once: true})))')
        if window:
            self.call("Emulation.clearDeviceMetricsOverride")
            session, self._session = self._session, None
            try:
                found = self.call("Browser.getWindowForTarget", targetId=self._target)
                bounds = {"width": width, "height": height}
                self.call("Browser.setWindowBounds", windowId=found["windowId"], bounds=bounds)
            finally:
                self._session = session
        else:
            viewport = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            self.call("Emulation.setDeviceMetricsOverride", **viewport)
        self.evaluate("window.resized")

    def screenshot(self, to: Path) -> None:
        """The viewport as it stands (scrolled or not), as a PNG."""
        to.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
