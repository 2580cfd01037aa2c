"""`make browser-picture`: docs/browser.png, the board page of the sample board as headless
Chromium shows it (the distribution's `chromium` and `chromium-driver`, through selenium).
The sample board is copied first: serving it refreshes the cache beside it.

    .venv/bin/python bench/picture.py [--board .tasks.example] [--out docs/browser.png]
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default=".tasks.example")
    parser.add_argument("--out", default="docs/browser.png")
    parser.add_argument("--width", type=int, default=1280)
    options = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    scratch = Path(tempfile.mkdtemp(prefix="tasks-picture-"))
    board = scratch / ".tasks"
    shutil.copytree(options.board, board, ignore=shutil.ignore_patterns(".cache", ".lock", ".scratch"))
    server = subprocess.Popen(
        [sys.executable, "-m", "taskboard", "--dir", str(board), "--as", "alice", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    found = re.search(r"http://127\.0\.0\.1:\d+/", server.stderr.readline())
    assert found, "tasks serve did not start"
    chrome = webdriver.ChromeOptions()
    for flag in (*FLAGS, f"--user-data-dir={scratch / 'profile'}", f"--window-size={options.width},900"):
        chrome.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=chrome)
    try:
        driver.get(found.group(0))
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(options.width, height)
        driver.save_screenshot(options.out)
    finally:
        driver.quit()
        server.send_signal(signal.SIGINT)
        server.wait(10)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
