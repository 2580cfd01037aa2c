"""The change feed of `tasks serve`: the board's own watch mechanism (taskboard.watch:
inotify on Linux, else a poll twice a second) over the board folder, its journal and
archive and the runtime state folder, on one thread. Any writer (the command line, MCP,
another page, a hand edit, a checkout or pull) moves the generation on, and every open
page's Server-Sent Events stream (taskboard.web.server.events) says so at once.
"""

from __future__ import annotations

import asyncio
import threading

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any


class Feed:
    """A generation number that moves on whenever something under the board changes,
    and a way for the event loop to wait for the next one."""

    def __init__(self, folders: Any):
        self.folders = folders  # () -> the folders to watch (those that exist now)
        self.generation = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiters: set[asyncio.Future] = set()
        self.stopped = threading.Event()
        self.closing = False  # the server is stopping: every open feed ends
        self.thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.thread = threading.Thread(target=self._watch, name="tasks-serve-watch", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def close(self) -> None:
        """End every open feed now (the server is stopping: it need not wait for them)."""
        self.closing = True
        self.stopped.set()
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._wake)

    def _watch(self) -> None:
        from ..disk.watch import watcher_for

        while not self.stopped.is_set():
            folders = self.folders()
            watcher = watcher_for(folders)
            try:
                watcher.arm()
                while not self.stopped.is_set():
                    if watcher.wait(0.5):
                        self.bump()
                    if self.folders() != folders:  # a folder came or went (the first write, an archive)
                        self.bump()
                        break
            finally:
                watcher.close()

    def bump(self) -> None:
        self.generation += 1
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.waiters.clear()

    async def after(self, seen: int, timeout: float) -> int:
        """The generation once it is past `seen`, or as it is after `timeout` seconds."""
        if self.generation != seen:
            return self.generation
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.add(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            self.waiters.discard(waiter)
        return self.generation
