"""The record's plain vocabulary, which needs nothing else of the package: the status
names, the bounds a value of the record keeps (ids, priorities, nesting, failures that
make a task stuck), the readers of what a task keeps in its metadata, and the strict
reading and writing of JSON every task file goes through.

A leaf: it imports nothing of the package, so the disk and the graph can speak of a
record without the model's checks and words (taskboard.core.model) below them. Nothing
here refuses input: that is the model's (its errors name the rule broken).
"""

from __future__ import annotations

import _json  # the json package's C half: `import json` brings `re` and `enum`, ~7 ms of every start-up
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

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # a moment as the record keeps it: 2026-11-29T18:03:11Z, UTC


def now() -> str:
    return time.strftime(TIME_FORMAT, time.gmtime())


# Every digit as 0: a moment's shape is then one string, compared in C (no pattern to compile).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
MOMENT_SHAPE = b"0000-00-00T00:00:00Z"


def shape(text: str) -> bytes:
    """The text with every ASCII digit as 0 (anything not ASCII as ?): compare with
    MOMENT_SHAPE (or a run of them) to tell a moment in the record's form."""
    return text.encode("ascii", "replace").translate(_DIGITS_AS_ZERO)


def is_moment(value: Any) -> bool:
    """Whether the value is a moment in the record's form (2026-11-29T18:03:11Z)."""
    return type(value) is str and len(value) == 20 and shape(value) == MOMENT_SHAPE


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
    return value if is_moment(value) else None


def waits(record: Record, at: str | None = None) -> bool:
    """Whether the task is kept out of ready until its `after` time (decided now: the
    record's form compares as text)."""
    value = _meta_value(record, "after")
    return is_moment(value) and value > (at or now())


# -- JSON, read strictly and written in the record's layout ----------------------------------
#
# Built on `_json`, the C half of the json package, which is all the json package runs
# when it can: `import json` also imports `re` (and `enum`) for its pure-Python fallback,
# ~7 ms of a command that costs ~40. Output is byte for byte what json.dumps writes with the
# same settings (tests/test_fields.py holds both to it); the json package is imported only
# on the way to an error, for JSONDecodeError's message.


def parse_json(data: bytes) -> Any:
    """A task file's JSON, strictly: UTF-8, no NaN or Infinity (nor 1e999), which JSON
    does not have, and no lone surrogate escape (`"\\ud800"`, half a character, which
    no UTF-8 output can carry); every failure is a ValueError (or RecursionError)."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):  # as json.loads says it
        raise _decode_error("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value = parse_json_value(text)
    if _may_hold_surrogate(text) and not _is_utf8(dumps(value)):
        raise LoneSurrogate("holds a lone surrogate escape such as \\ud800 (half a character), which is not text")
    return value


def parse_json_value(text: str) -> Any:
    """JSON text as a value, strictly: no NaN or Infinity (nor 1e999, which parses as
    inf). Raises NonFinite for those, ValueError when it is not JSON (json.JSONDecodeError,
    with its words), RecursionError."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _SCAN(text, start)
    except StopIteration as stop:
        raise _decode_error("Expecting value", text, stop.value) from None
    except SystemError:  # the scanner words a flaw with json.decoder's error, found only once imported
        import json.decoder  # noqa: F401  # the way to an error pays for it

        value, end = _SCAN(text, start)  # the same flaw again, now raised as JSONDecodeError
    if end != len(text.rstrip(_WHITESPACE)):
        raise _decode_error("Extra data", text, len(text) - len(text[end:].lstrip(_WHITESPACE)))
    return value


def loads(data: str | bytes) -> Any:
    """parse_json_value of text or of UTF-8 bytes (a UnicodeDecodeError is a ValueError):
    for the board's own files, which hold no NaN either."""
    return parse_json_value(data.decode("utf-8") if isinstance(data, bytes) else data)


def dumps(value: Any, *, sort_keys: bool = False, ascii: bool = False, finite: bool = False, indent: int = 0) -> str:
    """`json.dumps(value, ensure_ascii=ascii, sort_keys=sort_keys, allow_nan=not finite,
    indent=indent or None)`: UTF-8 text unless `ascii`; `finite` refuses NaN and Infinity
    (ValueError); TypeError for what JSON cannot hold."""
    encode = _json.make_encoder(  # per call: its `markers` (the circle check) must start empty
        {},
        _unserializable,
        _json.encode_basestring_ascii if ascii else _json.encode_basestring,
        None,
        ": ",
        ", " if not indent else ",",
        sort_keys,
        False,
        not finite,
    )
    if not indent:
        return "".join(encode(value, 0))
    try:
        return _indented(value, encode, sort_keys, " " * indent, "\n")
    except _NotPlain:  # a key JSON writes as text (a number, true, null): the json package's rules
        import json

        return json.dumps(value, ensure_ascii=ascii, sort_keys=sort_keys, allow_nan=not finite, indent=indent)


def _indented(value: Any, encode: Any, sort_keys: bool, step: str, margin: str) -> str:
    """json.dumps's layout with an indent: one member per line, `[]` and `{}` when empty."""
    inner = margin + step
    if isinstance(value, dict) and value:
        members = []
        for key, item in sorted(value.items()) if sort_keys else value.items():
            if type(key) is not str:
                raise _NotPlain
            members.append(inner + "".join(encode(key, 0)) + ": " + _indented(item, encode, sort_keys, step, inner))
        return "{" + ",".join(members) + margin + "}"
    if isinstance(value, (list, tuple)) and value:
        return "[" + ",".join(inner + _indented(item, encode, sort_keys, step, inner) for item in value) + margin + "]"
    return "".join(encode(value, 0))


class _NotPlain(Exception):
    """A value dumps leaves to the json package."""


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


def _may_hold_surrogate(text: str) -> bool:
    """Whether the text has a \\uD800 to \\uDFFF escape: a surrogate in a parsed value can
    only come from one (UTF-8 decoding refuses encoded ones). A \\u after an escaped
    backslash counts too: this only says where to look closer."""
    at = text.find("\\u")
    while at >= 0:
        if text[at + 2 : at + 4].lower() in _SURROGATE_HEADS:
            return True
        at = text.find("\\u", at + 2)
    return False


_SURROGATE_HEADS = frozenset("d" + digit for digit in "89abcdef")


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
    if not -_LARGEST <= value <= _LARGEST:  # NaN compares false too
        raise NonFinite(text)
    return value


_LARGEST = float.fromhex("0x1.fffffffffffffp+1023")


def _refuse_constant(name: str) -> Any:
    raise NonFinite(name)


def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _decode_error(message: str, text: str, at: int) -> ValueError:
    from json import JSONDecodeError  # the way to an error pays for the json package

    return JSONDecodeError(message, text, at)


class _Strict:
    """What the C scanner reads of a json.JSONDecoder, given as the class itself (its
    functions are then plain functions): strings without raw control characters, and a
    number too big for a float or a NaN refused."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = _finite_float
    parse_int = int
    parse_constant = _refuse_constant


# One scanner for every file: building one per call is a third of `list`'s parsing.
_SCAN = _json.make_scanner(_Strict)  # type: ignore[arg-type]  # the stub wants a JSONDecoder; any object with these attributes does
_WHITESPACE = " \t\n\r"
