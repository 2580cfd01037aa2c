"""`make browser-picture`: docs/browser.png, the board page of the sample board as headless
Chromium shows it (the distribution's `chromium` and `chromium-driver`, through selenium).
The sample board is copied first: serving it refreshes the cache beside it.

    .venv/bin/python bench/picture.py [--board .tasks.example] [--out docs/browser.png]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the tests' own helpers
from served import Served, chromium


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default=".tasks.example")
    parser.add_argument("--out", default="docs/browser.png")
    parser.add_argument("--width", type=int, default=1280)
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tasks-picture-"))
    board = scratch / ".tasks"
    shutil.copytree(options.board, board, ignore=shutil.ignore_patterns(".cache", ".lock", ".scratch"))
    server = Served(board, caller="alice")
    driver = chromium(scratch / "profile", options.width, 900, "--hide-scrollbars")
    try:
        driver.get(server.url + "/")
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(options.width, height)
        driver.save_screenshot(options.out)
    finally:
        driver.quit()
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
