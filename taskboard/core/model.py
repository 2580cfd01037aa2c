"""The task record: its fields (declared once, in FIELDS), statuses, validation, the
one canonical encoding, and `Patch`, one change to a record's fields.

Records are plain dicts so that keys this version does not know survive a
rewrite untouched and a 10 000-task listing costs no object construction.
No message here names a command-line flag: front ends word their own hints.
"""

from __future__ import annotations

import os
import time

from .errors import Corrupt, Refused, UsageError
from .fields import (
    DEFAULT_PRIORITY,
    MAX_ID,
    MAX_META_DEPTH,
    MOMENT_SHAPE,
    PRIORITIES,
    STATUSES,
    TIME_FORMAT,
    LoneSurrogate,
    Record,
    dumps,
    is_moment,
    json_depth,
    labels_of,
    parse_json,
    shape,
)

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable
    from typing import Any

EDGE_KEYS = ("blockedBy", "blocks")
MARKERS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "deleted": "[-]"}

MAX_SUBJECT = 500
MAX_OWNER = 200
MAX_DESCRIPTION = 65536
MAX_FILE_BYTES = 16 << 20  # a task file: what no hand-typed plan comes near, and a bound on every read


class Unprintable:
    """A pattern of characters outside printable ASCII, compiled when first used on text
    that has any: a class of wide Unicode ranges costs ~0.5 ms to compile and `re` ~5 ms
    to import, which every start-up paid, and most text is printable ASCII, which such a
    pattern never matches."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.pattern)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        if text.isascii() and text.isprintable():
            return None
        return self.compiled().search(text)

    def sub(self, replace: Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled().sub(replace, text)


# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: none in a one-line
# text. A description may hold newlines, tabs (and carriage returns, of CRLF text), nothing else.
_CONTROL = Unprintable("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_IN_TEXT = Unprintable("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def file_name(task_id: int) -> str:
    return f"task_{task_id}.json"


def id_from_file_name(name: str) -> int | None:
    """The id a board file name stands for, or None when it is not a task file (a
    number above the id ceiling never counts: no command could name that task)."""
    return decimal_id(name[5:-5]) if name.startswith("task_") and name.endswith(".json") else None


def decimal_id(text: str) -> int | None:
    """The id a decimal written without a leading zero stands for ([1-9][0-9]{0,18} up to
    MAX_ID), else None."""
    if 0 < len(text) <= 19 and text.isdigit() and text.isascii() and text[0] != "0":
        task_id = int(text)
        return task_id if task_id <= MAX_ID else None
    return None


ARCHIVE_FOLDER = "archive"  # in the board folder: closed tasks moved aside (DESIGN §11), one file each


def archive_file_name(task_id: int) -> str:
    """An archived task's file, relative to the board folder."""
    return f"{ARCHIVE_FOLDER}/task_{task_id}.json"


def board_file_id(name: str) -> int | None:
    """The id a task file of the board stands for, live (`task_N.json`) or archived
    (`archive/task_N.json`); None for anything else."""
    if name.startswith(ARCHIVE_FOLDER + "/"):
        name = name[len(ARCHIVE_FOLDER) + 1 :]
    return id_from_file_name(name)


def ids_from_file_names(names: list[str]) -> list[int]:
    """The ids among a folder's names (unordered), as id_from_file_name would find them
    one by one, in one comprehension of C-level string tests (faster than a regex pass
    over the names joined, and no `re` to import)."""
    return [
        task_id
        for name in names
        if name[:5] == "task_" and name[-5:] == ".json" and (task_id := decimal_id(name[5:-5])) is not None
    ]


def check_file_size(task_id: int, size: int) -> None:
    """A task file is at most MAX_FILE_BYTES: a reader refuses a larger one as damaged,
    so no change may write one."""
    if size > MAX_FILE_BYTES:
        raise UsageError(
            f"#{task_id} would take {size} bytes; a task file holds at most {MAX_FILE_BYTES >> 20} MiB "
            "(keep large data out of metadata)",
            "too-large",
        )


def refuse_past_ceiling(last: int) -> None:
    """Ids stop at 2^63-1 (what every command can name): past it, no new task."""
    if last > MAX_ID:
        raise Refused(f"no ids left: #{MAX_ID} is the highest id a task can have, and it is taken", "no-ids")


def max_id_of(names: list[str]) -> int:
    """The highest id among a folder's names (0 when none is a task file), parsing only
    the longest names: an id has no leading zero, so a longer task file name always holds
    a higher id. A third of the time of parsing every name of a 100 000-task board."""
    lengths = sorted(set(map(len, names)), reverse=True)
    for length in lengths:
        found = ids_from_file_names([name for name in names if len(name) == length])
        if found:
            return max(found)
    return 0


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


# Words people and agents type for a status (DESIGN §7); the record keeps the contract's names.
STATUS_WORDS = {"done": "completed", "in-progress": "in_progress", "todo": "pending"}
# What a listing may filter on besides the statuses: the two states of an open task.
STATES_TO_FILTER = ("ready", "blocked")


def parse_status(text: str, states: bool = False) -> str:
    """A status as typed: the contract's name or its word (`done`, `in-progress`, `todo`);
    with `states`, also `ready` or `blocked` (what a listing filters on)."""
    status = STATUS_WORDS.get(text, text) if isinstance(text, str) else text
    if status in STATUSES or (states and status in STATES_TO_FILTER):
        return status
    words = [*STATUSES, *STATUS_WORDS] + (list(STATES_TO_FILTER) if states else [])
    raise UsageError(f"unknown status {text!r}; use one of {', '.join(words)}", "status")


# -- priority and labels (kept in metadata; DESIGN §7) -----------------------------------

MAX_LABEL = 100


def check_priority(value: Any) -> int:
    if type(value) is not int or value not in PRIORITIES:
        raise UsageError(f"the priority must be a whole number from 0 (most urgent) to 4, not {value!r}", "priority")
    return value


def parse_priority(text: str) -> int:
    """A priority as typed: one digit from 0 to 4."""
    if len(text) == 1 and text in "01234":
        return int(text)
    raise UsageError(f"the priority must be a whole number from 0 (most urgent) to 4, not {text!r}", "priority")


def check_label(label: Any) -> str:
    if not isinstance(label, str):
        raise UsageError(f"a label must be text, not {label!r}", "label")
    _utf8(label, "a label")
    if not label.strip():
        raise UsageError("a label is empty; name it in a word or two", "label")
    if len(label) > MAX_LABEL:
        raise UsageError(f"the label {label[:40]!r}… is {len(label)} characters long; at most {MAX_LABEL}", "label")
    if _CONTROL.search(label) or label != label.strip():
        raise UsageError(f"the label {label!r} has control characters or surrounding spaces", "label")
    return label


def _usable_label(label: str) -> bool:
    """Whether a label written by hand is one input would take: a label update keeps those
    and drops the rest (`check` reports them), so it never writes back a bad label."""
    try:
        check_label(label)
    except UsageError:
        return False
    return True


def check_labels(value: Any) -> list[str]:
    """Labels as the record keeps them: sorted, unique, each a usable label."""
    if not isinstance(value, list):
        raise UsageError(f"labels must be a list of text, not {value!r}", "label")
    return sorted({check_label(label) for label in value})


def check_limit(limit: Any) -> int:
    """How many a listing may show at most (`--limit N`): a whole number of at least 1."""
    if type(limit) is not int or limit < 1:
        raise UsageError(f"the limit must be a whole number of at least 1, not {limit!r}", "limit")
    return limit


def parse_limit(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 19):
        raise UsageError(f"the limit must be a whole number of at least 1, not {text!r}", "limit")
    return check_limit(int(text))


# -- parents and time (kept in metadata; DESIGN §14) -------------------------------------


def check_parent(value: Any) -> int:
    """A parent: the id of another task (the child blocks it)."""
    if type(value) is not int or not 0 < value <= MAX_ID:
        raise UsageError(f"the parent must be a task id (a positive whole number), not {value!r}", "parent")
    return value


def check_when(value: Any) -> str:
    """A moment as the record keeps it (`after`, `due`): a UTC time like 2026-11-29T18:03:11Z."""
    if not is_moment(value):
        raise UsageError(f"a time must be UTC like 2026-11-29T18:03:11Z, not {value!r}", "when")
    return value


_SPAN_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def span_seconds(text: str) -> int | None:
    """`45m`, `2h`, `3d`, `1w` as seconds; None when the text is no such span."""
    text = text.strip()
    count, unit = text[:-1], text[-1:]
    if unit in _SPAN_SECONDS and 0 < len(count) <= 6 and count.isdigit() and count.isascii():
        return int(count) * _SPAN_SECONDS[unit]
    return None


def parse_when(text: str, at: float | None = None) -> str:
    """A moment as typed (`--after`, `--due`): `2h`, `3d`, `45m`, `1w` from now, an ISO
    date (midnight UTC) or an ISO date and time (UTC unless it names an offset); the
    record's form (second precision, `Z`)."""
    raw = text.strip()
    span = span_seconds(raw)
    moment = time.time() if at is None else at
    if span is not None:
        return time.strftime(TIME_FORMAT, time.gmtime(moment + span))
    from datetime import datetime, timezone

    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise UsageError(
            f"{text!r} is not a time: give 2h, 3d (from now), a date 2026-12-24 or a time 2026-12-24T09:00 (UTC)",
            "when",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).strftime(TIME_FORMAT)


def _utf8(text: str, what: str) -> str:
    """Text that UTF-8 can hold: no lone surrogates (undecodable bytes on the command
    line, or JSON escapes of half a character)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 text (it holds an undecodable byte or half a character)") from None
    return text


# acceptance gates (taskboard.gates): what a task keeps in metadata.gate / metadata.accept
MAX_COMMAND = 4096


def check_gate(value: Any) -> str:
    """A gate command: one line of text (the shell runs it), at most MAX_COMMAND characters."""
    if not isinstance(value, str):
        raise UsageError(f"a gate must be a shell command as text, not {value!r}", "gate")
    if not value.strip():
        raise UsageError("the gate command is empty (to remove the gate, give it as empty)", "gate")
    if len(value) > MAX_COMMAND:
        raise UsageError(f"the gate command is {len(value)} characters long; at most {MAX_COMMAND} are allowed", "gate")
    if any((ord(char) < 32 and char != "\t") or 127 <= ord(char) <= 159 for char in value):
        raise UsageError("the gate command contains a control character; keep it on one line", "gate")
    return _utf8(value, "the gate command")


def check_accept(value: Any) -> str:
    """What "done" means, for people: text like a description."""
    if not isinstance(value, str):
        raise UsageError(f"the acceptance text must be text, not {value!r}", "accept")
    try:
        return check_description(value)
    except UsageError as exc:
        raise UsageError(exc.message.replace("the description", "the acceptance text"), "accept") from None


def check_metadata(metadata: dict) -> dict:
    """Metadata a caller gives: string keys one can print, values JSON can hold, finite,
    in UTF-8, at most MAX_META_DEPTH deep; the keys META_FIELDS declare pass their own
    check too (a `priority` of 7 is refused however it is given). Returns it normalised
    (labels sorted and unique)."""
    metadata = dict(metadata)
    for key, value in metadata.items():
        if not isinstance(key, str) or not key.strip() or _CONTROL.search(key):
            raise UsageError(f"the metadata key {key!r} is empty or unprintable (a control character)")
        _utf8(key, "a metadata key")
        if value is REMOVE:
            continue
        if json_depth(value) > MAX_META_DEPTH:
            raise UsageError(
                f"metadata {key}: the value is nested too deeply; at most {MAX_META_DEPTH} levels are allowed"
            )
        try:
            text = dumps(value, finite=True)
        except (TypeError, ValueError):
            raise UsageError(f"metadata {key}: the value is not JSON with finite numbers") from None
        _utf8(text, f"metadata {key}")
        if key in _IN_METADATA:
            metadata[key] = FIELD[key].check(value)  # type: ignore[misc]  # META_FIELDS have a check
    return metadata


REMOVE = object()  # a metadata value that removes its key


class Field:
    """One key of the record: its JSON type, the value a new record gets (`default`,
    given the time of the change), whether every file must have it (`required`: the
    s12 keys; the others are extensions a rewrite adds), what makes a value of the
    right type unusable in a file (`flaw`: the (rule, message) of `check`, or None),
    and, when a caller may set it in a Patch, the check its new value must pass
    (`check`, raising UsageError). A metadata field with `help` (what its value means,
    in words) gets a text flag of its own name on `create` and `update` (`--NAME TEXT`;
    "" removes it), with nothing more to write: taskboard.cli.parser reads META_FIELDS."""

    __slots__ = ("check", "default", "flaw", "help", "kind", "name", "required")

    def __init__(
        self,
        name: str,
        kind: type,
        default: Callable[[str], Any],
        required: bool = False,
        check: Callable[[Any], Any] | None = None,
        flaw: Callable[[Any], tuple[str, str] | None] | None = None,
        help: str = "",
    ):
        self.name, self.kind, self.default, self.required = name, kind, default, required
        self.check, self.flaw, self.help = check, flaw, help

    @property
    def editable(self) -> bool:
        return self.check is not None


def _given(stamp: str) -> Any:
    raise TypeError("a new record is given this field")  # id and subject: create passes them


def _id_flaw(value: int) -> tuple[str, str] | None:
    return None if 0 < value <= MAX_ID else ("type", f"'id' should be a positive integer, at most {MAX_ID}")


def _status_flaw(value: str) -> tuple[str, str] | None:
    return None if value in STATUSES else ("status", f"unknown status {value!r}")


def _ids_flaw(key: str) -> Callable[[list], tuple[str, str] | None]:
    def flaw(value: list) -> tuple[str, str] | None:
        sound = all(_is_a(item, int) and 0 < item <= MAX_ID for item in value)
        return None if sound else ("type", f"{key!r} should list task ids (whole numbers from 1 to {MAX_ID})")

    return flaw


def _uid_flaw(value: str) -> tuple[str, str] | None:
    return None if len(value) == 12 and _HEX.issuperset(value) else ("type", "'uid' should be 12 lowercase hex digits")


def _time_flaw(key: str) -> Callable[[str], tuple[str, str] | None]:
    def flaw(value: str) -> tuple[str, str] | None:
        return None if is_moment(value) else ("type", f"{key!r} should be a UTC time like 2026-11-29T18:03:11Z")

    return flaw


# The record's keys, in the contract's order (DESIGN §1): encoding, validation, `check`,
# new records and Patch all read this table. Record-level data of later features
# (priority, labels, accept, gate) lives in `metadata`: declare it in META_FIELDS.
FIELDS = (
    Field("id", int, _given, required=True, flaw=_id_flaw),
    Field("subject", str, _given, required=True, check=check_subject),
    Field("description", str, lambda stamp: "", required=True, check=check_description),
    Field("status", str, lambda stamp: "pending", required=True, check=parse_status, flaw=_status_flaw),
    Field("blockedBy", list, lambda stamp: [], required=True, flaw=_ids_flaw("blockedBy")),
    Field("blocks", list, lambda stamp: [], required=True, flaw=_ids_flaw("blocks")),
    Field("owner", str, lambda stamp: "", required=True, check=check_owner),
    Field("uid", str, lambda stamp: new_uid(), flaw=_uid_flaw),
    Field("metadata", dict, lambda stamp: {}, check=check_metadata),
    Field("createdAt", str, lambda stamp: stamp, flaw=_time_flaw("createdAt")),
    Field("updatedAt", str, lambda stamp: stamp, flaw=_time_flaw("updatedAt")),
)
# Keys of `metadata` with a meaning of their own: a Patch (and create) sets them by name,
# the change stores them in the record's metadata, and `--meta KEY=VALUE` passes the same check.
META_FIELDS: tuple[Field, ...] = (
    Field("priority", int, lambda stamp: DEFAULT_PRIORITY, check=check_priority),
    Field("labels", list, lambda stamp: [], check=check_labels),
    Field("accept", str, lambda stamp: "", check=check_accept),
    Field("gate", str, lambda stamp: "", check=check_gate),
    Field("parent", int, lambda stamp: None, check=check_parent),
    Field("after", str, lambda stamp: None, check=check_when),
    Field("due", str, lambda stamp: None, check=check_when),
)


FIELD = {field.name: field for field in FIELDS + META_FIELDS}
KEY_ORDER = tuple(field.name for field in FIELDS)
S12_KEYS = tuple(field.name for field in FIELDS if field.required)
EXTENSION_KEYS = tuple(field.name for field in FIELDS if not field.required)
EDITABLE = frozenset(field.name for field in FIELDS + META_FIELDS if field.editable) - {"metadata"}
_IN_METADATA = frozenset(field.name for field in META_FIELDS)


# What `--fields` may keep of a record (DESIGN §14): its keys, and a parent's progress (`get`).
SHOWN_FIELDS = (*KEY_ORDER, "progress")


def parse_fields(text: Any) -> tuple[str, ...]:
    """`--fields id,subject,status` (or a list of names): the record keys to keep."""
    names = text.split(",") if isinstance(text, str) else text
    if not isinstance(names, list | tuple) or not all(isinstance(name, str) for name in names):
        raise UsageError(f"fields must name record keys, such as id,subject,status, not {text!r}", "fields")
    wanted = [name.strip() for name in names if name.strip()]
    unknown = [name for name in wanted if name not in SHOWN_FIELDS]
    if unknown or not wanted:
        what = f"no record key {unknown[0]!r}" if unknown else "no field named"
        raise UsageError(f"{what}; fields are some of {','.join(SHOWN_FIELDS)}", "fields")
    return tuple(name for name in SHOWN_FIELDS if name in wanted)


def pick(record: Record, fields: tuple[str, ...] | None) -> Record:
    """The record with only these keys (all of it when None), in the record's order."""
    return record if fields is None else {name: record[name] for name in fields if name in record}


def new_record(task_id: int, subject: str, description: str, owner: str, metadata: dict, stamp: str) -> Record:
    given = {"id": task_id, "subject": subject, "description": description, "owner": owner, "metadata": metadata}
    return {field.name: given[field.name] if field.name in given else field.default(stamp) for field in FIELDS}


def fill_defaults(record: Record, stamp: str) -> None:
    """A hand-written record gains the extension keys the first time it is rewritten
    (encode puts every key in the contract's order)."""
    for field in FIELDS:
        if not field.required and field.name not in record:
            record[field.name] = field.default(stamp)


class Patch:
    """One change to a task: new values for fields (by name: `Patch(status="completed")`),
    metadata keys to set (a value of REMOVE drops the key), and edges to add or remove.
    Fields not named stay as they are; `None` means "not named"."""

    def __init__(
        self,
        *,
        metadata: dict | None = None,
        add_blocked_by: Iterable[int] = (),
        add_blocks: Iterable[int] = (),
        remove_blocked_by: Iterable[int] = (),
        remove_blocks: Iterable[int] = (),
        add_labels: Iterable[str] = (),
        remove_labels: Iterable[str] = (),
        **values: Any,
    ):
        unknown = sorted(set(values) - EDITABLE)
        if unknown:
            raise TypeError(f"a Patch cannot set {', '.join(unknown)}")
        self.values = {name: value for name, value in values.items() if value is not None}
        self.metadata = dict(metadata or {})
        self.add_blocked_by, self.add_blocks = sorted(set(add_blocked_by)), sorted(set(add_blocks))
        self.remove_blocked_by, self.remove_blocks = sorted(set(remove_blocked_by)), sorted(set(remove_blocks))
        self.add_labels, self.remove_labels = list(add_labels), list(remove_labels)

    def __getattr__(self, name: str) -> Any:
        if name in EDITABLE:
            return self.__dict__["values"].get(name)
        raise AttributeError(name)

    def edges(self) -> list[int]:
        """Every task the patch names in an edge to add or remove."""
        return self.add_blocked_by + self.add_blocks + self.remove_blocked_by + self.remove_blocks

    def is_empty(self) -> bool:
        return not (self.values or self.metadata or self.edges() or self.add_labels or self.remove_labels)

    def check(self) -> None:
        """Every usage error the patch holds, before any file is read; values are kept
        as the record will hold them (labels sorted and unique)."""
        for name, value in self.values.items():
            self.values[name] = FIELD[name].check(value)  # type: ignore[misc]  # EDITABLE fields have a check
        self.metadata = check_metadata(self.metadata)
        self.add_labels, self.remove_labels = check_labels(self.add_labels), check_labels(self.remove_labels)
        twice = sorted(set(self.add_labels) & set(self.remove_labels))
        if twice:
            raise UsageError(
                f"the change both adds and removes the label {twice[0]!r}; say one",
                "label-add-and-remove",
                label=twice[0],
            )
        for added, removed, key in (
            (self.add_blocked_by, self.remove_blocked_by, "blockedBy"),
            (self.add_blocks, self.remove_blocks, "blocks"),
        ):
            both = sorted(set(added) & set(removed))
            if both:
                raise UsageError(
                    f"the change both adds and removes {ids_text(both)} in {key}; say one",
                    "add-and-remove",
                    key=key,
                    ids=both,
                )
        if self.status == "deleted" and self.edges():
            raise UsageError("deleting a task removes every edge of it; change no edge with it", "delete-with-edges")

    def apply(self, record: Record) -> list[str]:
        """Set the named fields and metadata keys (not status, owner or edges: the
        board's rules move those); the fields this changed."""
        changed = []
        for name, value in self.values.items():
            if name in ("status", "owner") or name in _IN_METADATA:
                continue
            if record.get(name) != value:
                record[name] = value
                changed.append(name)
        metadata = {name: value for name, value in self.values.items() if name in _IN_METADATA}
        metadata.update(self.metadata)
        if self.add_labels or self.remove_labels:
            labels = metadata.get("labels", labels_of(record))
            labels = [] if labels is REMOVE else [label for label in labels if _usable_label(label)]
            metadata["labels"] = sorted((set(labels) | set(self.add_labels)) - set(self.remove_labels))
        if metadata.get("labels") == []:  # no labels left: the key goes, as `--meta labels=` would do
            metadata["labels"] = REMOVE
        if metadata:
            merged = dict(record.get("metadata", {}))
            for key, value in metadata.items():
                if value is REMOVE:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            if merged != record.get("metadata", {}):
                record["metadata"] = merged
                changed.append("metadata")
        return changed


def ids_text(ids: Iterable[int]) -> str:
    """`#1, #3`: tasks named in a message."""
    return ", ".join(f"#{task_id}" for task_id in ids)


def encode(record: Record) -> bytes:
    """The one byte form of a record: known keys in order, then unknown ones, id lists sorted."""
    ordered = {key: record[key] for key in KEY_ORDER if key in record}
    for key in EDGE_KEYS:
        if key in ordered:
            ordered[key] = sorted(set(ordered[key]))
    for key, value in record.items():
        if key not in ordered:
            ordered[key] = value
    return (dumps(ordered, indent=2) + "\n").encode("utf-8")


CONFLICT_MARKERS = "has git conflict markers from an unfinished merge"


def unparsable(data: bytes, exc: Exception) -> tuple[str, str]:
    """Why a task file does not parse: (reason, words a person can act on); the reason
    is "conflict-markers" for an unfinished merge (front ends add how to repair it)."""
    if data.startswith(b"<<<<<<< ") or b"\n<<<<<<< " in data:
        return "conflict-markers", f"{CONFLICT_MARKERS}; keep one side of each conflict"
    if isinstance(exc, LoneSurrogate):
        return "", str(exc)
    if isinstance(exc, RecursionError):
        return "", f"is nested too deeply to read (a value may nest at most {MAX_META_DEPTH} levels)"
    return "", f"not valid JSON ({_short(exc)})"


def decode(data: bytes, name: str) -> Record:
    """Parse and validate one task file; any flaw raises Corrupt naming the file and the rule."""
    try:
        record = parse_json(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason, why = unparsable(data, exc)
        raise Corrupt(f"{name}: {why}", name, "json", reason) from None
    if _plainly_sound(record, name):
        return record
    record = family_form(record)[0]
    problems = problems_of(record, name)
    if problems:
        rule, message = problems[0]
        raise Corrupt(f"{name}: {message}", name, rule)
    return record


# -- the family's spellings (DESIGN §13) ----------------------------------------------------

_FAMILY_EMPTY = {"description": "", "owner": "", "blockedBy": [], "blocks": []}


def _family_id(value: Any) -> Any:
    """An id as the family may write it: a decimal string ("3") is that id; anything else as it is."""
    task_id = decimal_id(value) if type(value) is str else None
    return value if task_id is None else task_id


def family_form(record: Any) -> tuple[Any, list[str]]:
    """A record as the s12 family writes it (the chapter's own code, its sibling chapters,
    scripts, agents with a file tool), read as the record it means: a missing `blocks`,
    `blockedBy`, `description` or `owner` is empty, `owner: null` is no owner, an id
    written as a decimal string is that id. Returns the record (a copy when anything was
    read that way, else the same object) and what was, for `check` to say; anything else
    is left as it is, for the validation to judge."""
    if type(record) is not dict:
        return record, []
    said: list[str] = []
    copy = dict(record)
    for key, empty in _FAMILY_EMPTY.items():
        if key not in copy:
            copy[key] = list(empty) if isinstance(empty, list) else empty
            said.append(f"no {key!r}")
        elif key == "owner" and copy[key] is None:
            copy[key] = ""
            said.append("'owner' is null")
    if type(copy.get("id")) is str and _family_id(copy["id"]) != copy["id"]:
        copy["id"] = int(copy["id"])
        said.append("'id' written as text")
    for key in EDGE_KEYS:
        ids = copy[key]
        if type(ids) is list and any(type(item) is str for item in ids):
            copy[key] = [_family_id(item) for item in ids]
            if copy[key] != ids and all(type(item) is not str for item in copy[key]):
                said.append(f"ids in {key!r} written as text")
            else:
                copy[key] = ids  # text that is no id: the validation names it
    if not said:
        return record, []
    ordered = {key: copy[key] for key in KEY_ORDER if key in copy}  # as every reader shows a record
    ordered.update((key, value) for key, value in copy.items() if key not in ordered)
    return ordered, said


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
    blocked_by, blocks = get("blockedBy"), get("blocks")  # EDGE_KEYS, both checked at once
    if type(blocked_by) is not list or type(blocks) is not list or not _plain_ids(blocked_by + blocks):
        return False
    uid, metadata = get("uid", "0" * 12), get("metadata", {})
    # strip leaves nothing of a text made of hex digits alone (in C, no set built)
    if type(uid) is not str or len(uid) != 12 or uid.strip(_HEX_DIGITS) or type(metadata) is not dict:
        return False
    created, updated = get("createdAt", _SOME_TIME), get("updatedAt", _SOME_TIME)
    return (
        type(created) is str
        and type(updated) is str
        and shape(created + updated) == _TWO_MOMENTS
        # keys this version does not know, or values nested deeply: the full check
        and _KEY_SET.issuperset(record)
        and not (
            metadata
            and not _FLAT.issuperset(map(type, metadata.values()))
            and json_depth(metadata) > MAX_META_DEPTH + 1
        )
    )


def _plain_ids(ids: list) -> bool:
    return not ids or (set(map(type, ids)) == _JUST_INT and min(ids) > 0 and max(ids) <= MAX_ID)


_JUST_INT = {int}
_HEX_DIGITS = "0123456789abcdef"
_FLAT = frozenset((str, int, float, bool, type(None)))  # values that nest nothing: depth 1, no walk
_KEY_SET = frozenset(KEY_ORDER)
_SOME_TIME = "2026-11-29T18:03:11Z"
_TWO_MOMENTS = MOMENT_SHAPE * 2


def problems_of(record: Any, name: str) -> list[tuple[str, str]]:
    """Every flaw that makes a parsed record unusable, as (rule, message); empty when sound."""
    if not isinstance(record, dict):
        return [("object", f"the record is a JSON {type(record).__name__}, not an object")]
    problems = []
    for key in S12_KEYS:
        if key not in record:
            problems.append(("keys", f"the key {key!r} is missing"))
    for field in FIELDS:
        if field.name in record and not _is_a(record[field.name], field.kind):
            problems.append(("type", f"{field.name!r} should be a JSON {_JSON_NAMES[field.kind]}"))
    if problems:
        return problems
    for field in FIELDS:
        flaw = field.flaw(record[field.name]) if field.flaw and field.name in record else None
        if flaw:
            problems.append(flaw)
        elif field.name == "id" and board_file_id(name) not in (None, record["id"]):
            problems.append(("id-mismatch", f"the file name says #{board_file_id(name)} but 'id' is {record['id']}"))
    for key, value in record.items():
        if key not in _KEY_SET or key == "metadata":
            # the limit metadata input sets for one value, here for each value of metadata and of an unknown key
            values = value.items() if key == "metadata" else [(key, value)]
            deep = [name for name, item in values if json_depth(item) > MAX_META_DEPTH]
            if deep:
                where = f"metadata {deep[0]!r}" if key == "metadata" else f"the key {key!r}"
                problems.append(("nesting", f"{where} is nested too deeply (at most {MAX_META_DEPTH} levels)"))
    return problems


def text_problems(record: Record) -> list[tuple[str, str]]:
    """Text a sound record holds that input would have refused: control characters (an
    escape code; a newline that would forge a line of `list`). Every view shows them
    escaped (taskboard.text); `check` reports them."""
    found = []
    for key, pattern in (("subject", _CONTROL), ("owner", _CONTROL), ("description", _CONTROL_IN_TEXT)):
        match = pattern.search(record[key])
        if match:
            found.append(("control-character", f"the {key} holds the control character U+{ord(match.group()):04X}"))
    metadata = record.get("metadata", {})
    for meta_key in metadata:
        match = _CONTROL.search(meta_key)
        if match:
            found.append(
                ("control-character", f"a metadata key holds the control character U+{ord(match.group()):04X}")
            )
            break
    return found


_JSON_NAMES = {int: "integer", str: "string", list: "array", dict: "object"}


def _is_a(value: Any, kind: type) -> bool:
    # `type(...) is` first: parsed JSON has exact types, and this runs ~15 times per record
    return type(value) is kind or (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))


def _short(exc: Exception) -> str:
    return str(exc).split("\n")[0][:120]
