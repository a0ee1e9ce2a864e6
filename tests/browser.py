"""Headless Chromium driven through its DevTools protocol (over ``websocket-client``, which Jupyter's server
already needs): open a page, let it load and typeset, and read what a learner's browser would show and report.

    with Chromium() as browser:
        seen = browser.visit("http://127.0.0.1:8000/index.html", check_script)
        seen.errors, seen.result

Chromium runs with a fresh profile and its background connections off, so that a test page that fetches
nothing from the network loads without a connection (as root it also needs ``--no-sandbox``).
"""

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import websocket

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--remote-debugging-port=0"]


def chromium_path():
    """The Chromium (or Chrome) on this machine's PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


@dataclass
class Seen:
    """What one visit produced: the page's errors (console errors, uncaught exceptions, failed loads) and the
    value its check script returned."""

    url: str
    errors: list = field(default_factory=list)
    result: object = None


class Chromium:
    """One headless Chromium for a test; ``visit`` opens each page in a tab of its own."""

    def __init__(self, executable=None, timeout=60):
        self.executable, self.timeout = executable or chromium_path(), timeout
        if self.executable is None:
            raise FileNotFoundError("no Chromium on the PATH (Debian: apt-get install chromium)")

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="dlscratch-chromium-")
        self.process = subprocess.Popen([self.executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"Chromium did not start (exit status {self.process.poll()})")
            time.sleep(0.05)
        port, path = port_file.read_text().split()
        self.socket = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=self.timeout,
                                                  suppress_origin=True, http_no_proxy=["127.0.0.1"])
        self.calls, self.events = 0, []
        return self

    def __exit__(self, *exc):
        if getattr(self, "socket", None) is not None:
            self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, session=None, **params):
        """Send one DevTools command and wait for its answer; events that arrive meanwhile are kept."""
        self.calls += 1
        message = {"id": self.calls, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        while True:
            answer = json.loads(self.socket.recv())
            if answer.get("id") == self.calls:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def wait_for(self, method, session):
        """Wait for event ``method`` of tab ``session``."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if any(e.get("method") == method and e.get("sessionId") == session for e in self.events):
                return
            self.events.append(json.loads(self.socket.recv()))
        raise TimeoutError(f"no {method} within {self.timeout} s")

    def visit(self, url, script="null"):
        """Open ``url`` in a new tab, wait for its load event, then evaluate ``script`` (an expression; a promise
        is awaited) and return what was seen."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session)
        self.events.clear()
        self.call("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        value = self.call("Runtime.evaluate", session, expression=script, awaitPromise=True, returnByValue=True)
        seen = Seen(url, result=value.get("result", {}).get("value"))
        if "exceptionDetails" in value:
            seen.errors.append(f"the check script failed: {value['exceptionDetails']}")
        seen.errors += [describe(e) for e in self.events if e.get("sessionId") == session and is_error(e)]
        self.call("Target.closeTarget", targetId=target)
        return seen


def is_error(event):
    method, params = event.get("method"), event.get("params", {})
    return (method == "Runtime.exceptionThrown"
            or (method == "Runtime.consoleAPICalled" and params.get("type") == "error")
            or (method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error"))


def describe(event):
    params = event.get("params", {})
    if event["method"] == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return f"exception: {details.get('text')} {details.get('exception', {}).get('description', '')}"
    if event["method"] == "Runtime.consoleAPICalled":
        args = params.get("args", [])
        return "console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in args)
    entry = params["entry"]
    return f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"

