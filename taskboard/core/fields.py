"""The record's plain vocabulary, which needs nothing else of the package: the status
names, the bounds a value of the record keeps (ids, priorities, nesting, failures that
make a task stuck), the readers of what a task keeps in its metadata, and the strict
reading of JSON every task file goes through.

A leaf: it imports nothing of the package, so the disk and the graph can speak of a
record without the model's checks and words (taskboard.core.model) below them. Nothing
here refuses input: that is the model's (its errors name the rule broken).
"""

from __future__ import annotations

import json
import math
import re
import time

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

Record = dict  # a task record: the JSON object, keys in the contract's order

STATUSES = ("pending", "in_progress", "completed", "deleted")
OPEN = frozenset(("pending", "in_progress"))

MAX_ID = 2**63 - 1
STUCK_AFTER = 3  # failed attempts that make a task stuck (DESIGN §7)
MAX_META_DEPTH = 100  # a value's nesting, on input and on reading: well below the JSON parser's recursion limit

UTC_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)  # a moment as the record keeps it


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- what a task keeps in metadata (DESIGN §7, §14), read as the board uses it ----------

PRIORITIES = range(5)  # 0 most urgent … 4
DEFAULT_PRIORITY = 2  # what an unset (or unusable) priority counts as


def _meta_value(record: Record, key: str) -> Any:
    metadata = record.get("metadata")
    return metadata.get(key) if type(metadata) is dict else None


def priority_of(record: Record) -> int:
    """The task's priority for ordering: metadata.priority when it is one (0 to 4), else 2
    (unset, or a value written by hand that is none)."""
    value = record.get("metadata", {}).get("priority") if type(record.get("metadata")) is dict else None
    return value if type(value) is int and value in PRIORITIES else DEFAULT_PRIORITY


def labels_of(record: Record) -> list[str]:
    """The task's labels: metadata.labels, what of it is text."""
    metadata = record.get("metadata")
    value = metadata.get("labels") if type(metadata) is dict else None
    return [label for label in value if isinstance(label, str)] if isinstance(value, list) else []


def parent_of(record: Record) -> int | None:
    """The task's parent (metadata.parent), when it names one."""
    value = _meta_value(record, "parent")
    return value if type(value) is int and 0 < value <= MAX_ID else None


def when_of(record: Record, key: str) -> str | None:
    """metadata.after or metadata.due, when it is a time in the record's form."""
    value = _meta_value(record, key)
    return value if type(value) is str and UTC_TIME.fullmatch(value) else None


def waits(record: Record, at: str | None = None) -> bool:
    """Whether the task is kept out of ready until its `after` time (decided now: the
    record's form compares as text)."""
    value = _meta_value(record, "after")
    return type(value) is str and value > (at or now()) and UTC_TIME.fullmatch(value) is not None


# -- JSON, read strictly ---------------------------------------------------------------------


def parse_json(data: bytes) -> Any:
    """A task file's JSON, strictly: UTF-8, no NaN or Infinity (nor 1e999), which JSON
    does not have, and no lone surrogate escape (`"\\ud800"`, half a character, which
    no UTF-8 output can carry); every failure is a ValueError (or RecursionError)."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value = _STRICT_JSON.decode(text)
    if _SURROGATE_ESCAPE.search(text) and not _is_utf8(json.dumps(value, ensure_ascii=False)):
        raise LoneSurrogate("holds a lone surrogate escape such as \\ud800 (half a character), which is not text")
    return value


def parse_json_value(text: str) -> Any:
    """JSON text as a value, strictly: no NaN or Infinity (nor 1e999, which parses as
    inf). Raises NonFinite for those, ValueError when it is not JSON, RecursionError."""
    return _STRICT_JSON.decode(text)


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a JSON value (iterative: no recursion limit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class LoneSurrogate(ValueError):
    """JSON text whose string escapes name half a character: valid JSON, but no text."""


class NonFinite(ValueError):
    """A number JSON cannot hold: NaN, Infinity, or one too big for a float."""


# A surrogate can only come from a \\uXXXX escape: UTF-8 decoding refuses encoded ones.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _is_utf8(text: str) -> bool:
    """Whether UTF-8 can carry the text: it refuses every surrogate (a pair of escapes
    that makes one character was joined by the parser), with no pattern to compile."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NonFinite(text)
    return value


def _refuse_constant(name: str) -> Any:
    raise NonFinite(name)


# One decoder for every file: json.loads with hooks builds a new one per call (a third of `list`'s parsing).
_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
