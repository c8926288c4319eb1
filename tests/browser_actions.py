"""Loads a page in headless Chromium, waits until a JavaScript condition holds, does what the
browser tests ask of it as a person would (a mouse click, a key press on the focused element),
and prints the page's DOM after each step, steps apart by a line of its own.

  browser_actions.py URL WIDTHxHEIGHT READY STEP...

READY is a JavaScript expression; a STEP is `click:SELECTOR` (a real mouse press and release in
the element's middle), `key:SELECTOR:KEY` (the element focused, then KEY, such as Enter, pressed
and released), `wait:EXPRESSION`, `eval:EXPRESSION` (its value as JSON is printed for that step
instead of the DOM: what the page computed, such as an element's colour or place) or
`shot:PATH` (a PNG of what the window shows, written to PATH). The browser is driven through
the DevTools protocol on a pipe (--remote-debugging-pipe), so nothing listens on a port. Exit 1
with a line on stderr when a wait runs past its deadline or the browser goes away."""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 60
SEPARATOR = "\n----- step -----\n"


class Browser:
    def __init__(self, width, height):
        self.profile = tempfile.mkdtemp(prefix="browser-actions-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # The protocol's pipe is fds 3 (commands in) and 4 (answers out) of the browser.
        def fds():
            # Moved out of the way first: either may be 3 or 4 already.
            high_r, high_w = os.dup(to_browser_r) + 100, os.dup(from_browser_w) + 100
            os.dup2(to_browser_r, high_r)
            os.dup2(from_browser_w, high_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)
        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe", f"--window-size={width},{height}",
             f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def close(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise RuntimeError("the browser did not answer in time")
            chunk = os.read(self.from_browser, 65536)
            if not chunk:
                raise RuntimeError("the browser went away")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=True):
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            command["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + DEADLINE_S
        while True:
            answer = self._message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression):
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                if self.evaluate(f"Boolean({expression})"):
                    return
            except RuntimeError:
                pass  # the page between documents (navigating): asked again
            if time.monotonic() > deadline:
                raise RuntimeError(f"never true: {expression}")
            time.sleep(0.1)

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        self.call("Page.navigate", {"url": url})

    def click(self, selector):
        box = self.evaluate(
            "(() => { const e = document.querySelector(%s); e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()" % json.dumps(selector))
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path):
        # What the window shows, as a person sees it (an eval: step may scroll first).
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        with open(path, "wb") as out:
            out.write(base64.b64decode(shot["data"]))

    def key(self, selector, key):
        self.evaluate("document.querySelector(%s).focus()" % json.dumps(selector))
        codes = {"Enter": 13, " ": 32}
        text = {"Enter": "\r", " ": " "}.get(key, "")
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": text,
                                             "windowsVirtualKeyCode": codes.get(key, 0)})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key,
                                             "windowsVirtualKeyCode": codes.get(key, 0)})


def main():
    url, size, ready, *steps = sys.argv[1:]
    width, height = (int(n) for n in size.split("x"))
    browser = Browser(width, height)
    try:
        browser.open(url)
        browser.wait(ready)
        pages = [browser.evaluate("document.documentElement.outerHTML")]
        for step in steps:
            kind, _, argument = step.partition(":")
            if kind == "click":
                browser.click(argument)
            elif kind == "key":
                selector, _, key = argument.rpartition(":")
                browser.key(selector, key)
            elif kind == "wait":
                browser.wait(argument)
            elif kind == "eval":
                pages.append(json.dumps(browser.evaluate(argument)))
                continue
            elif kind == "shot":
                browser.screenshot(argument)
            else:
                raise RuntimeError(f"unknown step {step!r}")
            pages.append(browser.evaluate("document.documentElement.outerHTML"))
        sys.stdout.write(SEPARATOR.join(pages))
    except RuntimeError as problem:
        print(f"browser_actions: {problem}", file=sys.stderr)
        return 1
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
