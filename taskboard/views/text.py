"""User text made safe to show. A task file can hold anything a hand edit or a merge
put there; before any of it reaches a terminal (plain text, rich views, messages on
stderr, SVG) every character a terminal may act on is shown escaped, so text can
neither move the cursor, set the title, clear the screen, nor forge a line.

One rule, one place: views and messages call `shown`; machine output (`--json`)
goes through `json_text`, which keeps the data and escapes the same characters.
"""

from __future__ import annotations

import os
import sys

from ..core.fields import dumps
from ..core.model import Unprintable

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    import re
    from typing import Any

# C0 (newline and tab included), DEL, C1 (U+0085 NEL, U+009B CSI...), the Unicode line
# and paragraph separators, the bidi embeddings, overrides and isolates that can make a
# line read other than it is ("Trojan Source"), and lone surrogates (half a character,
# which no output can encode: shown as its escape, never a crash).
_RANGES = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
UNSAFE = Unprintable(f"[\x00-\x1f{_RANGES}]")
# Where text may span lines (a description), newlines and tabs stay.
_UNSAFE_IN_LINES = Unprintable(f"\r(?!\n)|[\x00-\x08\x0b-\x0c\x0e-\x1f{_RANGES}]")
# What JSON output escapes beyond what json.dumps already does (C0, quote, backslash).
_UNSAFE_IN_JSON = Unprintable(f"[{_RANGES}]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")


def shown(text: str) -> str:
    """One line of user text as a terminal may print it: `\\x1b`, `\\u009b`, `\\n`."""
    return UNSAFE.sub(_escape, text) if UNSAFE.search(text) else text


def shown_lines(text: str) -> str:
    """Text that may span lines (a description): newlines and tabs kept, the rest escaped."""
    return _UNSAFE_IN_LINES.sub(_escape, text) if _UNSAFE_IN_LINES.search(text) else text


def json_text(document: Any) -> str:
    """A JSON document on one line; the same data, with no raw control character in it."""
    return json_safe(dumps(document))


def json_safe(text: str) -> str:
    """JSON text with DEL, C1 and the characters `shown` escapes written as `\\u` escapes:
    the same data for any JSON reader (outside strings JSON text is plain ASCII)."""
    if not (text.isascii() and "\x7f" not in text) and _UNSAFE_IN_JSON.search(text):  # JSON text: ASCII is safe
        text = _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def shown_value(value: Any, lines: bool = False) -> Any:
    """A JSON value (metadata, runtime facts) with every string in it, keys included,
    made safe; with `lines`, strings keep their newlines and tabs."""
    if isinstance(value, str):
        return shown_lines(value) if lines else shown(value)
    if isinstance(value, list):
        return [shown_value(item, lines) for item in value]
    if isinstance(value, dict):
        return {shown(key) if isinstance(key, str) else key: shown_value(item, lines) for key, item in value.items()}
    return value


_PLAIN_KEYS = frozenset(("id", "status", "blockedBy", "blocks", "uid", "createdAt", "updatedAt"))


ARCHIVED_MARK = " (archived)"  # after the subject of a task read from the archive folder (DESIGN §11)


def shown_record(record: dict) -> dict:
    """The record as people see it: every text in it made safe, and an archived task's
    subject marked so (every view of it says so). The record itself when nothing needs
    escaping or marking (the common case costs a few regex searches)."""
    if record.get("archived") is True and isinstance(record.get("subject"), str):
        marked = {**record, "subject": record["subject"] + ARCHIVED_MARK}
        return shown_record({key: value for key, value in marked.items() if key != "archived"})
    if not _needs_escaping(record):
        return record
    copy = {}
    for key, value in record.items():
        if key in _PLAIN_KEYS:
            copy[key] = value
        elif key == "description" and isinstance(value, str):
            copy[key] = shown_lines(value)
        else:
            copy[shown(key)] = shown_value(value)
    return copy


def _needs_escaping(record: dict) -> bool:
    for key, value in record.items():
        if key in _PLAIN_KEYS:
            continue
        if UNSAFE.search(key):
            return True
        if isinstance(value, str):
            if (_UNSAFE_IN_LINES if key == "description" else UNSAFE).search(value):
                return True
        elif value and isinstance(value, (dict, list)) and _any_unsafe(value):
            return True
    return False


def _any_unsafe(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if UNSAFE.search(item):
                return True
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if UNSAFE.search(key):
                    return True
                pending.append(child)
    return False


def write(stream: Any, text: str) -> None:
    """Text out as UTF-8 whatever the locale, flushed: a script reads a subject back intact.
    A stream that takes nothing more (stdout on a full disk, /dev/full) is named, no bug."""
    try:
        if hasattr(stream, "buffer"):
            stream.buffer.write(text.encode("utf-8"))
        else:
            stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        from ..core.errors import Corrupt

        which = "standard error" if stream is sys.stderr else "standard output"
        reason = (exc.strerror or str(exc)).lower()
        message = f"{which}: cannot be written ({reason}); a change made is still made"
        raise Corrupt(message, which, "output", why=reason) from None


def terminal_width(stream: Any) -> int | None:
    """The columns of the terminal `stream` writes to; None when it is no terminal."""
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None
