"""The version of a task a page showed, and the versions shown lately.

Every form about a task carries the version its page showed (a digest of the record);
taskboard.web.actions compares it under the board lock and refuses a form sent from an
older version, saying what changed since when `Shown` still knows the version.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from ..core.fields import Record


def version_of(record: Record, text: str | None = None) -> str:
    """The version of a task a page showed: a digest of the record as compact JSON
    (`text`, when the cache beside the board holds it already)."""
    if text is None:
        text = json.dumps(record, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class Shown:
    """The versions of tasks the pages showed lately (version → record), so that a
    refused form can say what changed since. Bounded: the oldest are forgotten."""

    def __init__(self, size: int = 20_000):
        import threading

        self.size = size
        self.records: OrderedDict[str, Record] = OrderedDict()
        self.lock = threading.Lock()  # pages are rendered on worker threads

    def remember(self, record: Record, text: str | None = None) -> str:
        version = version_of(record, text)
        with self.lock:
            self.records[version] = record
            self.records.move_to_end(version)
            while len(self.records) > self.size:
                self.records.popitem(last=False)
        return version

    def get(self, version: str) -> Record | None:
        with self.lock:
            return self.records.get(version)
