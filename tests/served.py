"""`tasks serve` as a real process on a free loopback port, for the HTTP and browser tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

TASKS = [sys.executable, "-m", "taskboard"]


class Served:
    """A running `tasks --dir BOARD [--as NAME] serve --port 0`; its address from its first line."""

    def __init__(self, board: Path, caller: str | None = None, port: int = 0, env: dict | None = None):
        argv = [*TASKS, "--dir", str(board)]
        if caller:
            argv += ["--as", caller]
        argv += ["serve", "--port", str(port)]
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            text=True,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()  # `serving the board ... at http://127.0.0.1:PORT/`
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if found is None:
            self.stop()
            raise AssertionError(f"tasks serve did not start: {line!r}")
        self.port = int(found.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()


def tasks(board: Path, *args: str, caller: str | None = None) -> subprocess.CompletedProcess:
    """The command line as a real process, on the same board."""
    argv = [*TASKS, "--dir", str(board), *(["--as", caller] if caller else []), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


# -- a real browser ------------------------------------------------------------------------

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def chromium(profile: Path, width: int, height: int, *flags: str, console_log: bool = False):
    """The distribution's headless Chromium through chromium-driver (selenium), with its
    profile in `profile`, a window of width by height, and these flags more; with
    `console_log`, the browser's console kept for driver.get_log("browser")."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (*CHROMIUM_FLAGS, *flags, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
