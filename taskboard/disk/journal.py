"""The journal: what was done on the board, by whom and when, kept apart from the plan.

`.tasks/journal/<actor-slug>.jsonl` holds one JSON object per line,
`{"at", "actor", "task", "event", ...particulars, "eid"}`. It is committed with the
board and only ever appended to (O_APPEND, fsynced): a write costs O(1) whatever the
journal's length, and no file is ever rewritten. One file per actor ("shard"), so
branches by different actors never touch the same file, merge driver or not; the
board's `.gitattributes` marks the shards `merge=union` so that two branches of one
actor merge with every line of both kept.

Writers never read the journal. An operation's events travel in its Outcome; the store
appends their lines in the same all-or-nothing change as its task files (its intent
carries the lines; recovery appends each one that is missing, found by its unique
`eid` at the file's tail, so a replay never doubles a line). Only `log`, `get` for
people and `check` read the journal, and `log --limit` reads it backwards from the end.
"""

from __future__ import annotations

import os

from ..core.fields import dumps, loads

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path
    from typing import Any

    from ..core.outcome import Event

JOURNAL_DIR = "journal"
SUFFIX = ".jsonl"
RESERVED = ("at", "actor", "task", "event", "eid")
# keys of an event's particulars that name other tasks it concerns
RELATED_KEYS = ("blocker", "dependent", "tasks", "from", "to", "seed")

_SLUG_HEAD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_SLUG_CHARS = _SLUG_HEAD | frozenset("._-")
_MAX_SLUG = 60
_CHUNK = 1 << 16
_MAX_LINE = 1 << 22  # 4 MiB: far beyond any entry we write (a note is at most 64 Ki characters)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MARKERS = (b"<<<<<<< ", b"=======", b">>>>>>> ", b"||||||| ")


# -- who ---------------------------------------------------------------------------------


def login_name() -> str:
    """The user's login name, as getpass.getuser() finds it, without importing getpass
    (or spawning anything): the environment, else the password database."""
    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        name = os.environ.get(key, "").strip()
        if name:
            return name
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def actor_of(caller: str) -> str:
    """Who a change is journaled as: the caller's name (`--as`, TASKS_OWNER), else the login name."""
    return caller or login_name()


def shard_name(actor: str) -> str:
    """The actor's journal file, relative to the board: `journal/<slug>.jsonl`. The slug
    keeps the safe lowercase characters of the name; when that changed the name (case,
    spaces, slashes, other scripts) a short hash of the name follows, so two actors
    whose names differ never share a file by accident."""
    slug = _safe(actor.lower()).strip("-.")[:_MAX_SLUG].strip("-.")
    if slug != actor:
        import zlib  # built in, and ~0.1 ms; hashlib costs ~2 ms of start-up

        slug = f"{slug or 'actor'}-{zlib.crc32(actor.encode('utf-8', 'surrogatepass')):08x}"
    return f"{JOURNAL_DIR}/{slug}{SUFFIX}"


def is_shard_name(name: str) -> bool:
    """Whether a name relative to the board is a journal shard this module would write."""
    folder, _, base = name.partition("/")
    stem = base[: -len(SUFFIX)]
    return (
        folder == JOURNAL_DIR
        and base.endswith(SUFFIX)
        and 0 < len(stem) <= 80
        and stem[0] in _SLUG_HEAD
        and _SLUG_CHARS.issuperset(stem)
    )


def _safe(text: str) -> str:
    """The text with each run of characters outside [a-z0-9._-] as one `-`."""
    if _SLUG_CHARS.issuperset(text):
        return text
    slug: list[str] = []
    in_run = False
    for char in text:
        if char in _SLUG_CHARS:
            slug.append(char)
        elif not in_run:
            slug.append("-")
        in_run = char not in _SLUG_CHARS
    return "".join(slug)


# -- writing -------------------------------------------------------------------------------


def stamp() -> str:
    """When an event happened: UTC, ISO 8601 with milliseconds (changes are serialised by
    the board lock, so on one machine the times order every shard's lines as they were
    written; a second's precision would leave two actors' events in one second unordered)."""
    import time

    seconds = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def check_writable(root: str | Path, names: Iterable[str]) -> None:
    """Refuse, before anything is written, to append through something that is not ours:
    a journal folder or shard that is a link (git can commit one), a file or a folder in
    the wrong place. Raises Corrupt naming it."""
    import stat

    from ..core.errors import Corrupt

    for name in names:
        for path, kind, what in ((JOURNAL_DIR, stat.S_ISDIR, "a folder"), (name, stat.S_ISREG, "a regular file")):
            try:
                mode = os.lstat(os.path.join(root, path)).st_mode
            except (FileNotFoundError, NotADirectoryError):
                break
            if not kind(mode):
                link = " (a symbolic link)" if stat.S_ISLNK(mode) else ""
                raise Corrupt(f"{path}: should be {what}{link}; move it away so the journal can be written", path)


def new_eid() -> str:
    return os.urandom(8).hex()


def entries(events: Iterable[Event], actor: str, at: str, uids: dict[int, Any] | None = None) -> list[dict[str, Any]]:
    """The journal entries of an operation's events: `at`, `actor`, `task`, `event`, the
    event's particulars, the task's `uid` when `uids` knows it (so the entry follows its
    task when a merge gives it another id), and a fresh `eid`."""
    found = []
    for event in events:
        entry: dict[str, Any] = {"at": at, "actor": actor, "task": event.task, "event": event.what}
        entry.update((key, value) for key, value in event.data.items() if key not in RESERVED)
        uid = (uids or {}).get(event.task)
        if isinstance(uid, str) and "uid" not in entry:
            entry["uid"] = uid
        entry["eid"] = new_eid()
        found.append(entry)
    return found


def encode(entry_list: Iterable[dict[str, Any]]) -> bytes:
    """Entries as journal lines: one JSON object per line (JSON escapes every newline)."""
    return "".join(dumps(entry) + "\n" for entry in entry_list).encode("utf-8")


def append(root: str | Path, name: str, data: bytes, replay: bool = False, sync: bool = True) -> None:
    """Append lines to a shard, durably, under the board lock. Never follows a link: the
    journal folder and the shard are opened with O_NOFOLLOW, so a link committed in their
    place cannot make us write outside the board.

    `replay` (recovery of an interrupted change): append only the lines whose eid is not
    yet at the file's tail, and first cut off a torn last line (the start of one of these
    very lines, written by the killed process). `sync=False` leaves the fsync of the
    shard and of a new shard's name to the caller (the store syncs a change's files
    together)."""
    folder, _, base = name.partition("/")
    try:
        dir_fd = os.open(os.path.join(root, folder), _DIR_FLAGS)
    except FileNotFoundError:
        os.mkdir(os.path.join(root, folder))
        dir_fd = os.open(os.path.join(root, folder), _DIR_FLAGS)
    try:
        if replay:
            data = _missing(dir_fd, base, data)
            if not data:
                return
        try:
            fd = os.open(base, _APPEND_FLAGS & ~os.O_CREAT, dir_fd=dir_fd)
            created = False
        except FileNotFoundError:
            fd = os.open(base, _APPEND_FLAGS, 0o666, dir_fd=dir_fd)
            created = True
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":  # a hand edit lost the last newline
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if created and sync:
            os.fsync(dir_fd)  # a new shard's name is durable too
    finally:
        os.close(dir_fd)


def _missing(dir_fd: int, base: str, data: bytes) -> bytes:
    """The lines of `data` not yet in the shard, after cutting a torn tail that is the
    start of one of them. Only the tail is read: what an interrupted change wrote is the
    last thing in the file (no other change ran since, recovery comes first)."""
    try:
        fd = os.open(base, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return data
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - len(data) - _CHUNK)
        tail = os.pread(fd, size - start, start)
        lines = data.splitlines(keepends=True)
        if tail and not tail.endswith(b"\n"):
            torn = tail[tail.rfind(b"\n") + 1 :]
            if any(line.startswith(torn) for line in lines):
                os.ftruncate(fd, size - len(torn))
                tail = tail[: len(tail) - len(torn)]
        return b"".join(line for line in lines if (eid := _eid_of(line)) is not None and eid not in tail)
    finally:
        os.close(fd)


def _eid_of(line: bytes) -> bytes | None:
    """How a line's eid reads in the file; None for a line that is no entry of ours."""
    try:
        eid = loads(line)["eid"]
    except (ValueError, KeyError, TypeError):
        return None
    return dumps({"eid": eid}, ascii=True)[1:-1].encode() if isinstance(eid, str) else None


# -- reading -------------------------------------------------------------------------------


class Damage:
    """A journal line `log` skips and `check` reports: the shard (relative to the board),
    its line number (0 when read backwards and unknown), and what is wrong with it."""

    __slots__ = ("file", "line", "message", "reason")

    def __init__(self, file: str, line: int, message: str, reason: str = ""):
        self.file, self.line, self.message, self.reason = file, line, message, reason


def shards(root: Path) -> list[str]:
    """The journal shards on the board, by name relative to it, sorted."""
    try:
        names = os.listdir(os.path.join(root, JOURNAL_DIR))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(f"{JOURNAL_DIR}/{base}" for base in names if base.endswith(SUFFIX))


def parse_line(line: bytes) -> dict[str, Any] | str:
    """One journal line as an entry, or why it is not one."""
    if line.startswith(_MARKERS):
        return "a git conflict marker from an unfinished merge; delete the marker lines, keep both sides' lines"
    entry, why = _decode(line)
    if why:
        return why
    if not isinstance(entry, dict):
        return "not a JSON object"
    for key, kind in (("at", str), ("actor", str), ("event", str)):
        if not isinstance(entry.get(key), kind):
            return f"{key!r} should be a string"
    task = entry.get("task")
    if not isinstance(task, int) or isinstance(task, bool) or task <= 0:
        return "'task' should be a positive task id"
    return entry


def _decode(line: bytes) -> tuple[Any, str]:
    """A line's JSON, as strict as a task file's (no NaN, no half a character, at most
    the nesting a value may have), or why not."""
    from ..core.fields import MAX_META_DEPTH, LoneSurrogate, json_depth, parse_json

    too_deep = f"nested too deeply (a value may nest at most {MAX_META_DEPTH} levels)"
    try:
        entry = parse_json(line)
    except LoneSurrogate as exc:
        return None, str(exc)
    except RecursionError:
        return None, too_deep
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"not valid JSON ({str(exc).splitlines()[0][:80]})"
    return (None, too_deep) if json_depth(entry) > MAX_META_DEPTH + 1 else (entry, "")


def concerns(entry: dict[str, Any], task_id: int, uid: str | None = None) -> bool:
    """Whether an entry concerns a task: it is the entry's task (by `uid` when both know
    it: a task a merge renumbered keeps its events, and the one that had its old id
    does not take them), or the event names it (an edge's other end, the tasks a
    cascade reopened, a renumbering's old id)."""
    if uid is not None and isinstance(entry.get("uid"), str):
        if entry["uid"] == uid:
            return True
    elif entry.get("task") == task_id:
        return True
    for key in RELATED_KEYS:
        value = entry.get(key)
        if value == task_id or (isinstance(value, list) and task_id in value):
            return True
    return False


def read(
    root: Path, task_id: int | None = None, limit: int | None = None, uid: str | None = None
) -> tuple[list[dict], list[Damage]]:
    """Entries oldest first (optionally only those concerning `task_id`, whose uid is
    `uid`; only the last `limit`), and the damaged lines passed over. With a limit each shard is read
    backwards from its end until it has given that many, so a long journal costs what
    the answer costs."""
    import heapq

    per_shard: list[list[dict]] = []
    damaged: list[Damage] = []
    for name in shards(root):
        found: list[dict] = []
        if limit is None:
            for number, line in _lines(root, name, damaged):
                entry = parse_line(line)
                if isinstance(entry, str):
                    damaged.append(Damage(name, number, entry))
                elif task_id is None or concerns(entry, task_id, uid):
                    found.append(entry)
        elif limit > 0:
            for line in _lines_backwards(root, name, damaged):
                entry = parse_line(line)
                if isinstance(entry, str):
                    damaged.append(Damage(name, 0, entry))
                elif task_id is None or concerns(entry, task_id, uid):
                    found.append(entry)
                    if len(found) >= limit:
                        break
            found.reverse()
        per_shard.append(found)
    # each shard is in the order it was written; merged by time (ties: shard order)
    merged = list(heapq.merge(*per_shard, key=lambda entry: entry["at"]))
    if limit is not None:
        merged = merged[-limit:] if limit > 0 else []
    return merged, damaged


def damage(root: Path) -> list[Damage]:
    """Every damaged line (and unreadable shard) of the journal, for `check`."""
    found: list[Damage] = []
    for name in shards(root):
        for number, line in _lines(root, name, found):
            why = parse_line(line)
            if isinstance(why, str):
                found.append(Damage(name, number, why))
    return found


def _open(root: Path, name: str, damaged: list[Damage]) -> int | None:
    try:
        fd = os.open(os.path.join(root, name), _READ_FLAGS)
    except OSError as exc:
        damaged.append(Damage(name, 0, f"cannot be read ({exc.strerror})", "unreadable"))
        return None
    if not _is_regular(fd):
        os.close(fd)
        damaged.append(Damage(name, 0, "is not a regular file", "unreadable"))
        return None
    return fd


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def _lines(root: Path, name: str, damaged: list[Damage]) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a shard from its start; blank lines skipped."""
    fd = _open(root, name, damaged)
    if fd is None:
        return
    try:
        rest, number, skipping = b"", 0, False
        while chunk := os.read(fd, _CHUNK):
            if skipping:  # the rest of a line too long to be an entry
                cut = chunk.find(b"\n")
                if cut < 0:
                    continue
                chunk, skipping, number = chunk[cut + 1 :], False, number + 1
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            for line in parts:
                number += 1
                if line.strip():
                    yield number, line
            if len(rest) > _MAX_LINE:  # no memory or time spent on a planted gigabyte without a newline
                damaged.append(Damage(name, number + 1, _too_long(), "too-long"))
                rest, skipping = b"", True
        if rest.strip():
            yield number + 1, rest
    finally:
        os.close(fd)


def _too_long() -> str:
    return f"a line longer than {_MAX_LINE >> 20} MiB, which no entry is"


def _lines_backwards(root: Path, name: str, damaged: list[Damage]) -> Iterator[bytes]:
    """The lines of a shard from its end, read in chunks; blank lines skipped."""
    fd = _open(root, name, damaged)
    if fd is None:
        return
    try:
        position, rest, skipping = os.fstat(fd).st_size, b"", False
        while position > 0:
            step = min(_CHUNK, position)
            position -= step
            block = os.pread(fd, step, position)
            if skipping:  # the start of a line too long to be an entry
                cut = block.rfind(b"\n")
                if cut < 0:
                    continue
                block, skipping = block[: cut + 1], False
            parts = (block + rest).split(b"\n")
            rest = parts[0]
            for line in reversed(parts[1:]):
                if line.strip():
                    yield line
            if len(rest) > _MAX_LINE:
                damaged.append(Damage(name, 0, _too_long(), "too-long"))
                rest, skipping = b"", True
        if rest.strip() and not skipping:
            yield rest
    finally:
        os.close(fd)
