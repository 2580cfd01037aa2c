"""The task record: its keys, statuses, validation and its one canonical encoding.

Records are plain dicts so that keys this version does not know survive a
rewrite untouched and a 10 000-task listing costs no object construction.
"""

from __future__ import annotations

import json
import math
import os
import re
import time

from .errors import Corrupt, UsageError

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

Record = dict  # a task record: the JSON object, keys in the contract's order

STATUSES = ("pending", "in_progress", "completed", "deleted")
OPEN = frozenset(("pending", "in_progress"))
S12_KEYS = ("id", "subject", "description", "status", "blockedBy", "blocks", "owner")
EXTENSION_KEYS = ("uid", "metadata", "createdAt", "updatedAt")
KEY_ORDER = S12_KEYS + EXTENSION_KEYS
EDGE_KEYS = ("blockedBy", "blocks")
MARKERS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "deleted": "[-]"}

MAX_ID = 2**63 - 1
MAX_SUBJECT = 500
MAX_OWNER = 200
MAX_DESCRIPTION = 65536
MAX_META_DEPTH = 100  # well below the JSON parser's recursion limit, so every record reads back

_FILE_NAME = re.compile(r"task_([1-9][0-9]*)\.json")
_UID = re.compile(r"[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)
# C0 controls and DEL; newlines and tabs are allowed in descriptions only.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TYPES = {
    "id": int,
    "subject": str,
    "description": str,
    "status": str,
    "blockedBy": list,
    "blocks": list,
    "owner": str,
    "uid": str,
    "metadata": dict,
    "createdAt": str,
    "updatedAt": str,
}


def file_name(task_id: int) -> str:
    return f"task_{task_id}.json"


def id_from_file_name(name: str) -> int | None:
    """The id a board file name stands for, or None when it is not a task file."""
    match = _FILE_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


_FILE_NAME_LINES = re.compile(r"^task_([1-9][0-9]*)\.json$", re.MULTILINE)


def ids_from_file_names(names: list[str]) -> list[int]:
    """The ids among a folder's names (unordered), as id_from_file_name would find them
    one by one; a single regex pass over the names one per line takes half the time,
    which is most of `create`'s extra cost on a 10 000-task board."""
    listing = "\n".join(names)
    if listing.count("\n") != max(len(names) - 1, 0):  # a name holds a newline: go one by one
        return [task_id for task_id in map(id_from_file_name, names) if task_id is not None]
    return list(map(int, _FILE_NAME_LINES.findall(listing)))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_uid() -> str:
    return os.urandom(6).hex()


def parse_id(text: str) -> int:
    """A task id typed by a user: a positive decimal integer, optionally written `#7`."""
    raw = text.strip()
    raw = raw[1:] if raw.startswith("#") else raw
    if not raw.isascii() or not raw.isdigit() or raw.startswith("0") or len(raw) > 19:
        raise UsageError(f"{text!r} is not a task id (a positive whole number such as 7)")
    value = int(raw)
    if value > MAX_ID:
        raise UsageError(f"{text!r} is not a task id (at most {MAX_ID})")
    return value


def check_subject(subject: str) -> str:
    _utf8(subject, "the subject")
    if not subject.strip():
        raise UsageError("the subject is empty; say in a few words what the task is")
    if len(subject) > MAX_SUBJECT:
        raise UsageError(f"the subject is {len(subject)} characters long; at most {MAX_SUBJECT} are allowed")
    if _CONTROL.search(subject):
        raise UsageError("the subject contains a control character (newline, tab, escape...); keep it on one line")
    return subject


def check_description(text: str) -> str:
    _utf8(text, "the description")
    if len(text) > MAX_DESCRIPTION:
        raise UsageError(f"the description is {len(text)} characters long; at most {MAX_DESCRIPTION} are allowed")
    if _CONTROL_IN_TEXT.search(text):
        raise UsageError("the description contains a control character other than newline or tab")
    return text


def check_owner(owner: str) -> str:
    _utf8(owner, "the owner name")
    if len(owner) > MAX_OWNER:
        raise UsageError(f"the owner name is {len(owner)} characters long; at most {MAX_OWNER} are allowed")
    if _CONTROL.search(owner) or owner != owner.strip():
        raise UsageError(f"the owner name {owner!r} has control characters or surrounding spaces")
    return owner


def check_status(status: str) -> str:
    if status not in STATUSES:
        raise UsageError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    return status


def parse_meta(item: str) -> tuple[str, Any]:
    """`KEY=VALUE`: VALUE as JSON when it is valid JSON, else the text; `KEY=` yields REMOVE."""
    key, sep, value = item.partition("=")
    if not sep:
        raise UsageError(f"--meta {item!r} has no '='; write KEY=VALUE (or KEY= to remove the key)")
    _utf8(item, "--meta")
    if not key.strip() or _CONTROL.search(key):
        raise UsageError(f"--meta {item!r} has an empty or unprintable key")
    if value == "":
        return key, REMOVE
    try:
        # 1e999 parses as inf, which would be written as the non-JSON `Infinity`
        parsed = json.loads(value, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NonFinite:
        raise UsageError(f"--meta {key}: {value[:80]!r} is not a finite number; JSON has no NaN or Infinity") from None
    except RecursionError:
        raise _too_deep(key) from None
    except ValueError:
        return key, value
    if _depth(parsed) > MAX_META_DEPTH:
        raise _too_deep(key)
    _utf8(json.dumps(parsed, ensure_ascii=False), f"--meta {key}")  # a "\ud800" escape decodes to no character
    return key, parsed


def _utf8(text: str, what: str) -> str:
    """Text that UTF-8 can hold: no lone surrogates (undecodable bytes on the command
    line, or JSON escapes of half a character)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 text (it holds an undecodable byte or half a character)") from None
    return text


def _too_deep(key: str) -> UsageError:
    return UsageError(f"--meta {key}: the value is nested too deeply; at most {MAX_META_DEPTH} levels are allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in a JSON value (iterative: no recursion limit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_json(data: bytes) -> Any:
    """A task file's JSON, strictly: UTF-8, and no NaN or Infinity (nor 1e999), which
    JSON does not have; every failure is a ValueError (or RecursionError)."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT_JSON.decode(text)


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


# One decoder for every file: json.loads with hooks builds a new one per call (a third of `list`'s parsing).
_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


REMOVE = object()


def new_record(task_id: int, subject: str, description: str, owner: str, metadata: dict, stamp: str) -> Record:
    return {
        "id": task_id,
        "subject": subject,
        "description": description,
        "status": "pending",
        "blockedBy": [],
        "blocks": [],
        "owner": owner,
        "uid": new_uid(),
        "metadata": metadata,
        "createdAt": stamp,
        "updatedAt": stamp,
    }


def encode(record: Record) -> bytes:
    """The one byte form of a record: known keys in order, then unknown ones, id lists sorted."""
    ordered = {key: record[key] for key in KEY_ORDER if key in record}
    for key in EDGE_KEYS:
        if key in ordered:
            ordered[key] = sorted(set(ordered[key]))
    for key, value in record.items():
        if key not in ordered:
            ordered[key] = value
    return (json.dumps(ordered, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def unparsable(data: bytes, exc: Exception) -> str:
    """Why a task file does not parse, in words a person can act on."""
    if data.startswith(b"<<<<<<< ") or b"\n<<<<<<< " in data:
        return "has git conflict markers from an unfinished merge; keep one side, then run tasks check --fix"
    return f"not valid JSON ({_short(exc)})"


def decode(data: bytes, name: str) -> Record:
    """Parse and validate one task file; any flaw raises Corrupt naming the file and the rule."""
    try:
        record = parse_json(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Corrupt(f"{name}: {unparsable(data, exc)}", name, "json") from None
    if _plainly_sound(record, name):
        return record
    problems = problems_of(record, name)
    if problems:
        rule, message = problems[0]
        raise Corrupt(f"{name}: {message}", name, rule)
    return record


_STATUS_SET = frozenset(STATUSES)
_HEX = frozenset("0123456789abcdef")


def _plainly_sound(record: Any, name: str) -> bool:
    """The common case of problems_of(...) == [], decided in a few µs: reading 10 000
    records spends most of its Python time here. False means "look closer", not "bad"."""
    if type(record) is not dict:
        return False
    get = record.get
    task_id, status = get("id"), get("status")
    if (
        type(task_id) is not int
        or task_id <= 0
        or type(status) is not str
        or status not in _STATUS_SET
        or name != f"task_{task_id}.json"
    ):
        return False
    if not (type(get("subject")) is str and type(get("description")) is str and type(get("owner")) is str):
        return False
    for key in EDGE_KEYS:
        ids = get(key)
        if type(ids) is not list or (ids and (set(map(type, ids)) != _JUST_INT or min(ids) <= 0)):
            return False
    uid, metadata = get("uid", "0" * 12), get("metadata", {})
    if type(uid) is not str or len(uid) != 12 or not _HEX.issuperset(uid) or type(metadata) is not dict:
        return False
    created, updated = get("createdAt", _SOME_TIME), get("updatedAt", _SOME_TIME)
    return type(created) is str and type(updated) is str and _TWO_TIMES.fullmatch(created + updated) is not None


_JUST_INT = {int}
_SOME_TIME = "2026-11-29T18:03:11Z"
_TWO_TIMES = re.compile(r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ){2}", re.ASCII)


def problems_of(record: Any, name: str) -> list[tuple[str, str]]:
    """Every flaw that makes a parsed record unusable, as (rule, message); empty when sound."""
    if not isinstance(record, dict):
        return [("object", f"the record is a JSON {type(record).__name__}, not an object")]
    problems = []
    for key in S12_KEYS:
        if key not in record:
            problems.append(("keys", f"the key {key!r} is missing"))
    for key, kind in _TYPES.items():
        if key in record and not _is_a(record[key], kind):
            problems.append(("type", f"{key!r} should be a JSON {_JSON_NAMES[kind]}"))
    if problems:
        return problems
    if record["id"] <= 0:
        problems.append(("type", "'id' should be a positive integer"))
    elif id_from_file_name(name) not in (None, record["id"]):
        problems.append(("id-mismatch", f"the file name says #{id_from_file_name(name)} but 'id' is {record['id']}"))
    if record["status"] not in STATUSES:
        problems.append(("status", f"unknown status {record['status']!r}"))
    for key in EDGE_KEYS:
        if not all(_is_a(item, int) and item > 0 for item in record[key]):
            problems.append(("type", f"{key!r} should list positive task ids"))
    if "uid" in record and not _UID.fullmatch(record["uid"]):
        problems.append(("type", "'uid' should be 12 lowercase hex digits"))
    for key in ("createdAt", "updatedAt"):
        if key in record and not _TIME.fullmatch(record[key]):
            problems.append(("type", f"{key!r} should be a UTC time like 2026-11-29T18:03:11Z"))
    return problems


_JSON_NAMES = {int: "integer", str: "string", list: "array", dict: "object"}


def _is_a(value: Any, kind: type) -> bool:
    # `type(...) is` first: parsed JSON has exact types, and this runs ~15 times per record
    return type(value) is kind or (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))


def _short(exc: Exception) -> str:
    return str(exc).split("\n")[0][:120]


def is_open(record: Record) -> bool:
    return record["status"] in OPEN


def ref(record: Record) -> str:
    return f"#{record['id']}"
