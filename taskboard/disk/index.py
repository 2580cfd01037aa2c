"""A cache beside the board, in `<board>/.cache/` (ignored by git): what reading every
task file would give, so that reading open work costs what the open work costs and
not what years of completed history cost. The files stay the truth:

- Every use checks it against the files. The floor of that check is one `lstat` of
  every task file (an edit in place changes nothing else). When the board folder
  itself is unchanged (no file added, removed or renamed) the names come from the
  cache and that loop is the whole check; so they do when every change since was a
  change through `tasks` that recorded the names it put in place, with a watch on the
  folder proving nobody else added or removed one meanwhile (cache.record_moves), or
  a hand edit that a reader listed the folder for and recorded likewise (a file
  renamed over a task file: _step); otherwise the folder is listed too. A listing
  that is the last one to the letter takes its names from a memo of it
  (cache.known_listing) instead of parsing 100 000 names.
- An entry is the file's inode and ctime when it was read. Any write, truncate,
  rename, link or chmod sets the ctime of the file it touches to the current time, so
  a file whose (inode, ctime) is unchanged holds the bytes that were read, with one
  exception: two changes within one tick of the file system's clock share a ctime.
  So an entry is kept only for a file whose ctime was already older than RACY_NS when
  the check began (git's "racily clean" rule); a newer file is read again on every use
  until it has aged. The folder's own key follows the same rule. What this rests on:
  a clock that does not jump back, on a local file system.
- It is never the source of truth for a change: writers read the files under the
  board lock. Deleting it loses nothing; a damaged one (checksum, shape) is rebuilt
  silently; it is written whole to a temporary file and renamed into place, so a
  kill -9 at any instant leaves the old one, the new one, or a stray temporary file
  that the next writer of the cache removes. Processes that write it at once each
  write a cache that is right for what they checked; the last rename wins.

Two files: `index` holds every file's key and status and the open records in full
(what `ready`, `list --status pending` and `claim` need: a blocker that is not open
does not block, so a closed task needs no more than its status); `history` holds the
closed (completed and deleted) records as JSON text, read only to show history.
"""

from __future__ import annotations

import gc
import marshal
import os
import sys
import time
from bisect import bisect_left

from ..core.errors import Corrupt, NotFound
from ..core.fields import OPEN, dumps, loads, priority_of, when_of
from ..core.model import id_from_file_name, ids_from_file_names
from .cache import (
    ARCHIVE_NAME,
    HISTORY_NAME,
    INDEX_NAME,
    KINDS,
    MAX_STEPS,
    OPEN_COLUMNS,
    UNSURE,
    Cache,
    folder_key,
    known_listing,
    moved_names,
    record_moves,
    remember_listing,
)

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable, Iterable

    Keys = array | memoryview  # a cache's saved keys are read-only views of its bytes (_array)
    from typing import Protocol

    from ..core.fields import Record

    class Files(Protocol):
        """What a snapshot needs of the store that reads it (taskboard.disk.store.Store is
        one; the index sits below it and names it not): the board folder, its task ids
        (the store's usage error for a board path that is a file), one task read by the
        store's rules for damaged files (and, for a cold read, one read with its file's
        key when the file is plainly sound), and where to leave how many files it listed."""

        path: str
        listed: int

        def task_ids(self) -> list[int]: ...

        def read(self, task_id: int) -> Record: ...

        def read_keyed(self, task_id: int) -> tuple[Record, int, int] | None: ...

    class Shelf(Files, Protocol):
        """What archive_entries needs besides: the archive folder, its ids (the store's
        error for a folder it cannot use), and one archived task read by the store's rules."""

        archive_dir: str

        def archived_ids(self) -> list[int]: ...

        def read_archived(self, task_id: int) -> Record: ...


NO_IDS, NO_INODES = memoryview(b"").cast("q"), memoryview(b"").cast("Q")


def _array(code: str, items: Iterable[int] | bytes = ()) -> array:
    """array.array(code, items), imported here: `array` imports `collections` (~1.9 ms of
    every command), and a read that finds nothing changed works on the cache's own keys,
    memoryviews of its bytes (Cache.load_index), so only a read that finds a change pays."""
    from array import array

    return array(code, items)


SAVE_PER = 1000  # entries: a save of the index costs about what reading one file per SAVE_PER entries again does
RACY_NS = 2_000_000_000  # a clock tick plus the coarsest usual timestamp (1 s: ext3, HFS+), with room
STATUS_OF = {kind: status for status, kind in KINDS.items()}
OPEN_KINDS = frozenset((KINDS["pending"], KINDS["in_progress"]))
CLOSED = frozenset(("completed", "deleted"))
CLOSED_KINDS = frozenset((KINDS["completed"], KINDS["deleted"]))


class Snapshot:
    """The board as its files say it is now: every task's status, the open records in
    full (and after `load_history` the closed ones as text), and the files that could
    not be read. Positions run over the task files in id order."""

    def __init__(self) -> None:
        self.ids: Keys = NO_IDS
        self.names: list[str] = []
        self.kinds = bytearray()  # KINDS of a trusted entry, UNSURE otherwise
        self.ctimes: Keys = NO_IDS
        self.inodes: Keys = NO_INODES
        self._open: dict[int, Record] | None = {}  # None: still the index's bytes (columns)
        self.open_text: dict[int, str] = {}  # dumps(record), ready to print
        self.columns: dict | None = None  # the index's open tasks, when the snapshot took them
        self._reader: tuple[Callable[[int], Record], Callable[[], None]] | None = None  # should its records fail
        # while the records are the index's bytes: its entries that no longer hold, and
        # the open records read this time (from files changed since the index was saved)
        self._dropped: set[int] = set()
        self._fresh: dict[int, Record] = {}
        self.recent: dict[int, str] = {}  # status of each readable file read this time and not trusted
        self.closed_text: dict[int, str] | None = None  # filled by load_history
        self.damaged: dict[int, Corrupt] = {}
        self.folder_key: tuple | None = None

    @property
    def open(self) -> dict[int, Record]:
        """The open records in full by id. Taken whole from the index they stay its bytes
        until a command asks for them here (`ready` and `list --status` need no more than
        open_facts and the texts): then decoded and checked, and should they fail the
        check (a forged index), read from their files, and the index written again."""
        if self._open is None:
            assert self.columns is not None
            dropped = self._dropped
            found = _decoded(self.columns)
            if found is None:
                assert self._reader is not None
                read, drop = self._reader
                found = {task_id: read(task_id) for task_id in self.columns["open_ids"] if task_id not in dropped}
                self.columns = None
                drop()  # the next command lists the folder and writes the index again
            for task_id in dropped:
                found.pop(task_id, None)
            found.update(self._fresh)
            self._open, self._dropped, self._fresh = found, set(), {}
        return self._open

    def take_columns(
        self, columns: dict, read: Callable[[int], Record], drop: Callable[[], None], dropped: Iterable[int] = ()
    ) -> None:
        """The index's open tasks, taken whole but for the `dropped` ones (their files are
        as the index saw them); `read`: the store's, for records the index fails to hold;
        `drop`: removes the index. Only the columns are held: the index passed whole also
        holds its ids, names, kinds and folder key, which _index_payload would write over
        this snapshot's (an index no read could load)."""
        self._open, self._reader = None, (read, drop)
        self.columns = {key: columns[key] for key in OPEN_COLUMNS}
        self.open_text = dict(zip(columns["open_ids"], columns["texts"], strict=True))
        for task_id in dropped:
            self.forget_open(task_id)

    def forget_open(self, task_id: int) -> None:
        """This task's open record and text are no longer known (its file is read again)."""
        if self.open_text.pop(task_id, None) is None:
            return
        if self._open is None:
            self._dropped.add(task_id)
            self._fresh.pop(task_id, None)
        else:
            self._open.pop(task_id, None)

    def keep_open(self, task_id: int, record: Record, text: str) -> None:
        """An open record read from its file, and its compact JSON."""
        if self._open is None:
            self._dropped.add(task_id)  # the index's entry, if any, is not this one
            self._fresh[task_id] = record
        else:
            self._open[task_id] = record
        self.open_text[task_id] = text

    def _column(self, task_id: int) -> int | None:
        """The position of a task in the held columns, when they still tell it; else None."""
        columns = self.columns
        if self._open is not None or columns is None or task_id in self._dropped:
            return None
        open_ids = columns["open_ids"]
        at = bisect_left(open_ids, task_id)
        return at if at < len(open_ids) and open_ids[at] == task_id else None

    def open_status(self, task_id: int) -> str | None:
        """The status of an open task; None when it is not open (or not readable). No
        record is decoded for it."""
        if self._open is not None:
            record = self._open.get(task_id)
            return None if record is None else record["status"]
        record = self._fresh.get(task_id)
        if record is not None:
            return record["status"]
        at = self._column(task_id)
        return None if at is None else STATUS_OF[self.columns["open_kinds"][at]]  # type: ignore[index]

    def open_record(self, task_id: int) -> Record:
        """One open record (KeyError when the task is not open). While the records are the
        index's bytes it is decoded alone, from its text (`claim` tries a few in ready
        order); a text that is not the task the columns tell (a forged index) is caught:
        the index is removed (written again by the next command) and the records decoded,
        or read from their files (Snapshot.open)."""
        if self._open is not None:
            return self._open[task_id]
        record = self._fresh.get(task_id)
        if record is not None:
            return record
        at = self._column(task_id)
        if at is None:
            raise KeyError(task_id)
        assert self.columns is not None and self._reader is not None
        try:
            record = loads(self.open_text[task_id])
        except Exception:  # planted text with a right checksum
            record = None
        status = STATUS_OF[self.columns["open_kinds"][at]]
        if type(record) is not dict or record.get("id") != task_id or record.get("status") != status:
            self._reader[1]()  # the index is dropped: the next command lists the folder and writes it again
            return self.open[task_id]
        return record

    def open_facts(self) -> Iterable[tuple[int, str, tuple, int, str, str | None]]:
        """(id, status, blockers, priority, due time or `~`, after time or None) of each
        open task in id order: what `ready` decides and orders by (core.graph.ready_ids),
        from the index's columns while the records are not decoded."""
        columns = self.columns
        if self._open is None and columns is not None:
            facts = zip(
                columns["open_ids"],
                [STATUS_OF[kind] for kind in columns["open_kinds"]],
                columns["blocked"],
                columns["priority"],
                columns["due"],
                columns["after"],
                strict=True,
            )
            if not self._dropped:
                return facts
            dropped, fresh = self._dropped, self._fresh  # a few files changed since the index was saved
            kept = [fact for fact in facts if fact[0] not in dropped]
            return sorted(kept + [(task_id, *_facts_of(record)) for task_id, record in fresh.items()])
        opened = self.open
        return [(task_id, *_facts_of(opened[task_id])) for task_id in sorted(opened)]

    # -- what commands ask -----------------------------------------------------------

    def statuses(self) -> Iterable[tuple[int, str]]:
        """(id, status) of every readable task, in id order."""
        recent = self.recent
        for task_id, kind in zip(self.ids, self.kinds, strict=True):
            if kind != UNSURE:
                yield task_id, STATUS_OF[kind]
            elif task_id in recent:
                yield task_id, recent[task_id]

    def status(self, task_id: int) -> str | None:
        """The task's status; None when it is missing or unreadable."""
        found = self.open_status(task_id)
        if found is not None:
            return found
        if task_id in self.recent:
            return self.recent[task_id]
        at = bisect_left(self.ids, task_id)
        if at < len(self.ids) and self.ids[at] == task_id and self.kinds[at] != UNSURE:
            return STATUS_OF[self.kinds[at]]
        return None

    def lookup(self, task_id: int) -> Record | None:
        """What the graph rules need of a blocker: its record when open, else a stand-in
        that is not open (or None when there is no such task). An unreadable task counts
        as open: nothing is called ready on a guess."""
        record = self.open.get(task_id)
        if record is not None:
            return record
        if task_id in self.damaged:
            return _UNKNOWN
        return _CLOSED  # finished, deleted or missing: none of them blocks

    def count(self, status: str) -> int:
        return self.kinds.count(KINDS[status]) + sum(1 for found in self.recent.values() if found == status)

    def text(self, task_id: int) -> str:
        """The record as compact JSON, exactly as `dumps(record)`."""
        found = self.open_text.get(task_id)
        if found is None:
            assert self.closed_text is not None, "closed records need the history"
            found = self.closed_text[task_id]
        return found

    def json_array(self, task_ids: list[int]) -> str:
        """These records as a JSON array, as `json.dumps(records, ensure_ascii=False)` writes it."""
        opened, closed = self.open_text, self.closed_text
        if closed is None:
            return "[" + ", ".join([opened[task_id] for task_id in task_ids]) + "]"
        return "[" + ", ".join([opened.get(task_id) or closed[task_id] for task_id in task_ids]) + "]"

    def record(self, task_id: int) -> Record:
        found = self.open.get(task_id)
        return found if found is not None else loads(self.text(task_id))


_UNKNOWN = {"status": "in_progress"}
_CLOSED = None


def _facts_of(record: Record) -> tuple[str, tuple, int, str, str | None]:
    """What `ready` asks of an open record (Snapshot.open_facts), as the index keeps it."""
    return (
        record["status"],
        tuple(record["blockedBy"]),
        priority_of(record),
        when_of(record, "due") or "~",
        when_of(record, "after"),
    )


def _decoded(columns: dict) -> dict[int, Record] | None:
    """The index's open records by id, when its bytes hold one sound record per entry
    (a dict with the entry's id and status); else None."""
    try:
        records = marshal.loads(columns["records"])
    except Exception:  # planted bytes with a right checksum: no records
        return None
    open_ids, kinds = columns["open_ids"], columns["open_kinds"]
    if type(records) is not tuple or len(records) != len(open_ids):
        return None
    for record, task_id, kind in zip(records, open_ids, kinds, strict=True):
        if type(record) is not dict or record.get("id") != task_id or record.get("status") != STATUS_OF[kind]:
            return None
    return dict(zip(open_ids, records, strict=True))


# -- checking the cache against the files -------------------------------------------------


def snapshot(store: Files, history: bool = False) -> Snapshot:
    """The board now, taken from the cache where the files show it still holds. The
    caller holds the board lock (shared or exclusive): no change through `tasks` is
    half done meanwhile. Saves what it had to read, when that can be trusted later."""
    collecting = gc.isenabled()
    gc.disable()  # 100 000 entries make no cycles; the collector would walk them a few hundred times
    try:
        return _snapshot(store, history)
    finally:
        if collecting:
            gc.enable()


def _snapshot(store: Files, history: bool) -> Snapshot:
    began = time.time_ns()
    shot = Snapshot()
    try:
        folder = os.open(store.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return shot  # no board yet: an empty one
    except NotADirectoryError:
        store.task_ids()  # raises the store's usage error for a board path that is a file
        raise
    cache = Cache(store.path)
    try:
        old = cache.load_index()
        if old is None:  # made before the folder's key is taken: making it changes the board folder
            cache.make()
        shot.folder_key = folder_key(os.fstat(folder))
        if history:  # the closed records the check reads on its way are kept, not read a second time
            shot.closed_text = {}
        changed = _check(store, folder, shot, old, began - RACY_NS)
        store.listed = len(shot.ids)  # how large a board this is, for a writer (Store._moving)
        if history:
            changed_history = _load_history(store, folder, shot, cache.load_history(), began - RACY_NS)
    finally:
        os.close(folder)
    if changed:
        cache.save(INDEX_NAME, _index_payload(shot))
    if history and changed_history:
        cache.save(HISTORY_NAME, _history_payload(shot))
    return shot


def _check(store: Files, folder: int, shot: Snapshot, old: dict | None, trusted: int) -> bool:
    """Fill `shot` from the old index and the files; True when the index should be saved.
    `trusted`: a ctime before this is old enough that a later change gets another."""
    old = old or _EMPTY
    steps, by_hand = 0, False
    if old["folder"] is not None and shot.folder_key is not None and old["folder"] != shot.folder_key:
        followed = _followed(store, old, shot.folder_key)
        if followed is not None:
            old, steps, by_hand = followed
    if old["folder"] is not None and old["folder"] == shot.folder_key:
        names, lstat = old["names"], os.lstat
        try:  # the floor: one lstat per task file, keeping nothing but its ctime
            found = [lstat(name, dir_fd=folder).st_ctime_ns for name in names]
        except FileNotFoundError:  # a file went after the folder was looked at: list it again
            found = None
        if found is not None:
            # compared as lists: making an array of them costs three times what .tolist() does
            same = found == old["ctimes"].tolist()
            ctimes = old["ctimes"] if same else _array("q", found)
            shot.ids, shot.names, shot.inodes, shot.ctimes = old["ids"], names, old["inodes"], ctimes
            shot.kinds = bytearray(old["kinds"])
            _adopt_open(store, shot, old, shot.kinds, same=True)
            if same and UNSURE not in shot.kinds:
                return steps > MAX_STEPS // 2  # nothing changed since the cache was written
            stale = sorted(set(_changed(ctimes, old["ctimes"])).union(_unsure(shot.kinds)))
            shot.inodes = _array("Q", shot.inodes)  # the cache's keys are read-only views: kept apart
            if steps:  # a writer may have put a new inode in place: its key is taken again
                _refresh_inodes(folder, shot, stale)
            _reread(store, folder, shot, stale, trusted)
            # a hand edit is rare: once its files are old enough to keep, the index is written
            # (once) rather than have every later command read them again
            return steps > MAX_STEPS // 2 or _differs(shot, old, stale, worth=steps > 0 and not by_hand)
    # The folder changed (a file added, removed or renamed), or there is no usable index: list it.
    return _list(store, folder, shot, old, trusted)


def _list(store: Files, folder: int, shot: Snapshot, old: dict, trusted: int) -> bool:
    """_check when the folder must be listed: fill `shot` from the listing and the files;
    True when the index should be saved (else a step may carry the old one, _step)."""
    listed = os.listdir(folder)
    if old["ids"]:
        _matched(store, folder, shot, old, *_listed(store, old, listed), trusted)
    else:  # nothing to match (no cache, a damaged one, an empty board's): one pass over the files
        _read_every(store, folder, shot, _array("q", sorted(ids_from_file_names(listed))), trusted)
    if shot.folder_key is not None and folder_key(os.fstat(folder)) != shot.folder_key:
        # the folder changed while it was listed: the names are not the key's (a file copied
        # in between the key and the listing would be in an index, or a step, said to be
        # before it), so neither vouches for them
        shot.folder_key = None
    probed = False
    if shot.folder_key is not None and shot.folder_key[2] >= trusted:
        probed = Cache(store.path).fine_grained()
        if not probed:
            shot.folder_key = None  # changed too recently to vouch for the names next time
    if (
        shot.ids is old["ids"]  # the same names (_listed): files renamed over task files, or other files
        and old["folder"] is not None
        and shot.folder_key is not None
        and old["folder"] != shot.folder_key
        and not _differs(shot, {**old, "folder": shot.folder_key}, _changed_entries(shot, old), worth=True)
        and _step(store, shot, old, probed)
    ):
        return False  # the step carries the old index: not written
    return _differs(shot, old)


def _changed_entries(shot: Snapshot, old: dict) -> list[int]:
    """The positions whose entries are not the old index's (same ids): a file's key
    changed, or its entry is not kept (UNSURE)."""
    found = set(_changed(shot.ctimes, old["ctimes"], shot.inodes, old["inodes"]))
    return sorted(found.union(_changed(shot.kinds, old["kinds"]), _unsure(shot.kinds)))


def _step(store: Files, shot: Snapshot, old: dict, vouched: bool) -> bool:
    """After a listing that found the old index's names and no other task file (a file
    renamed over a task file by hand: an editor's save, a script's), record that step
    for the next reader (taskboard.disk.cache.record_moves: from the old index's folder
    key to the one taken before the listing, the task files whose key changed) instead
    of writing the whole index again (~40 ms at 100 000 tasks): the next reader follows
    it as it follows a writer's (_followed) and reads those files again. Sound for the
    reason a writer's step is: any change after the folder's key was taken gives the
    folder a new key (multigrain ctimes, probed), so a reader that finds this key finds
    the folder as this listing did. The index is written once reading the changed
    files again costs what writing it does (_differs `worth`) or the steps run long.
    False when the step could not be recorded (the index is written). The step names
    BY_HAND too: the command that follows it writes the index once those files are old
    enough to keep (a hand edit is rare; a writer's changes are not)."""
    changed = _changed(shot.ctimes, old["ctimes"], shot.inodes, old["inodes"])
    names = [BY_HAND, *(shot.names[i] for i in changed)]
    now = shot.folder_key
    return now is not None and record_moves(store.path, old["folder"], now, names, vouched=vouched)


def _listed(store: Files, old: dict, listed: list[str]) -> tuple[Keys, list[str]]:
    """The task files of a folder listing as (ids, names) in id order, found against the
    old index's names. The listing as the last reader that listed the folder saw it
    (cache.known_listing), when this one is the same to the letter and its task files
    were the old index's: the old index's ids and names (a file renamed over a task file
    by hand or by an editor leaves the same names, and ext4 the same order). Else, as a
    set, the listing is mostly the old names and a few others (creates add some above
    the highest id; swap files, the cache and the archive folder are no task files), so
    only those others are parsed. Parsing and sorting every name cost a 100 000-task
    board ~55 ms; the sets ~30 ms; the comparison ~3 ms."""
    names, ids = old["names"], old["ids"]
    listing = "\n".join(listed)
    known = known_listing(store.path)
    if known is not None and known[0] == listing and known[1] == "\n".join(names):
        return ids, names
    found = _parsed(old, listed)
    remember_listing(store.path, listing, "\n".join(found[1]))
    return found


def _parsed(old: dict, listed: list[str]) -> tuple[Keys, list[str]]:
    """_listed, by sets: the listing's names that are not the old index's, parsed."""
    names, ids = old["names"], old["ids"]
    present = set(listed)
    others = present.difference(names)
    added = sorted(ids_from_file_names(list(others)))
    if len(present) - len(others) == len(names):  # every old name is still listed
        if not added:
            return ids, names
        if added[0] > ids[-1]:  # files added above the highest id (creates)
            more = b"".join(_int64(task_id) for task_id in added)
            return _keys_with(ids, more), names + [f"task_{task_id}.json" for task_id in added]
    # files removed, or added below the highest id (a checkout, a restore): the whole listing
    found = _array("q", sorted(ids_from_file_names(listed)))
    return found, [f"task_{task_id}.json" for task_id in found]


def _matched(store: Files, folder: int, shot: Snapshot, old: dict, ids: Keys, names: list[str], trusted: int) -> None:
    """Fill `shot` from the listed files (ids and names in id order, _listed): one lstat
    per task file as on the floor, keeping its inode too, the old entries matched by id,
    and the files whose entries do not hold read again."""
    columns = _key_columns(names, folder)
    if columns is None:  # removed since the listing
        keys = _keys(names, folder)
        kept = [i for i, key in enumerate(keys) if key is not None]
        ids, names = _array("q", [ids[i] for i in kept]), [names[i] for i in kept]
        columns = _array("q", [keys[i][0] for i in kept]), _array("Q", [keys[i][1] for i in kept])  # type: ignore[index]
    shot.ids, shot.names = ids, names
    shot.ctimes, shot.inodes = columns
    shot.kinds = _matched_kinds(shot, old)
    if ids is old["ids"]:  # the old entries, those that changed now UNSURE: read again (and left out then)
        _adopt_open(store, shot, old, old["kinds"], same=True)
    else:
        _adopt_open(store, shot, old, shot.kinds)
    _reread(store, folder, shot, _unsure(shot.kinds), trusted)


# A name no file has, in a step a reader recorded for a hand edit (_step): no task file's
# name, so a follower (this one, or an older release) takes it for none.
BY_HAND = ""


def _followed(store: Files, old: dict, now: tuple) -> tuple[dict, int, bool] | None:
    """The old index carried along the changes recorded since its folder key
    (taskboard.disk.cache.moved_names: by writers, and by readers that listed the folder
    after a hand edit, _step), with the number of changes followed: a name put in place
    is a file the index has (replaced: read again, whatever its ctime says) or a new one
    above its highest id (a create), an entry to read. None when the folder must be
    listed instead. Also whether a step was a hand edit's (BY_HAND)."""
    found = moved_names(store.path, old["folder"], now)
    if found is None:
        return None
    moved, steps = found
    ids = old["ids"]
    top = ids[-1] if ids else 0
    added: dict[int, str] = {}
    replaced: list[int] = []
    for name in moved:
        task_id = id_from_file_name(name)
        if task_id is None:
            continue  # not a task file (a .gitignore written again)
        at = bisect_left(ids, task_id)
        if at < len(ids) and ids[at] == task_id:
            replaced.append(at)
            continue
        if task_id <= top:
            return None  # a file back below the highest id (a restore): listed, as before
        added[task_id] = name
    ctimes = _forgotten(old["ctimes"], replaced) if replaced else old["ctimes"]
    by_hand = BY_HAND in moved
    if not added:
        return {**old, "folder": now, "ctimes": ctimes}, steps, by_hand
    new = sorted(added)
    more = len(new)
    return (
        {
            **old,
            "folder": now,
            "ids": _keys_with(ids, b"".join(_int64(task_id) for task_id in new)),
            "names": old["names"] + [added[task_id] for task_id in new],
            "ctimes": _keys_with(ctimes, _int64(-1) * more),  # never a file's: read
            "inodes": _keys_with(old["inodes"], bytes(8 * more), unsigned=True),
            "kinds": old["kinds"] + bytearray([UNSURE]) * more,
        },
        steps,
        by_hand,
    )


def _forgotten(ctimes: Keys, positions: list[int]) -> memoryview:
    """The saved ctimes with -1 (never a file's) at these positions: their files are read
    again. (A file put in place by a rename has a new inode; its ctime is new too on every
    file system we know, but the inode is what proves it.)"""
    raw = bytearray(ctimes.tobytes())
    for at in positions:
        raw[8 * at : 8 * at + 8] = _int64(-1)
    return memoryview(raw).cast("q")


def _keys_with(keys: Keys, more: bytes, unsigned: bool = False) -> memoryview:
    """Saved keys with more after them, as a view like the cache's (a few new files: their
    bytes made one by one cost less than importing `array`)."""
    joined = memoryview(keys.tobytes() + more)
    return joined.cast("Q") if unsigned else joined.cast("q")


def _int64(number: int) -> bytes:
    return number.to_bytes(8, sys.byteorder, signed=True)


def _refresh_inodes(folder: int, shot: Snapshot, positions: list[int]) -> None:
    """The inodes of these files as they are now (a writer's rename gave them new ones)."""
    for i in positions:
        try:
            shot.inodes[i] = os.lstat(shot.names[i], dir_fd=folder).st_ino
        except OSError:
            shot.inodes[i] = 0  # gone: the read says so


def _matched_kinds(shot: Snapshot, old: dict) -> bytearray:
    """Each listed file's old kind where its entry (ctime and inode) still holds, UNSURE
    elsewhere: position by position when the ids are the old ones (one file renamed over
    another), or the old ones and new files above them (as creates leave them), else
    matched by id."""
    known = len(old["ids"])
    then_ctimes, then_inodes, then_kinds = old["ctimes"], old["inodes"], old["kinds"]
    if shot.ids == old["ids"]:
        kinds = bytearray(then_kinds)
        if shot.ctimes != then_ctimes or shot.inodes != then_inodes:
            for changed in _changed(shot.ctimes, then_ctimes, shot.inodes, then_inodes):
                kinds[changed] = UNSURE
        return kinds
    if len(shot.ids) > known and shot.ids[:known] == old["ids"]:
        kinds = bytearray(then_kinds) + bytearray([UNSURE]) * (len(shot.ids) - known)
        for changed in _changed(shot.ctimes[:known], then_ctimes, shot.inodes[:known], then_inodes):
            kinds[changed] = UNSURE
        return kinds
    at = {task_id: i for i, task_id in enumerate(old["ids"])}
    same = []
    for task_id, now, inode in zip(shot.ids, shot.ctimes, shot.inodes, strict=True):
        i = at.get(task_id)
        same.append(then_kinds[i] if i is not None and then_ctimes[i] == now and then_inodes[i] == inode else UNSURE)
    return bytearray(same)


_BLOCK = 512  # entries compared at once, as array slices (in C), before one by one


def _changed(
    now: Keys | bytearray, then: Keys | bytearray, now_too: Keys | None = None, then_too: Keys | None = None
) -> list[int]:
    """The positions where two arrays of one length differ (or a second pair does), found
    a block at a time: one edit among 100 000 entries costs 200 slice comparisons, not
    100 000 steps of Python."""
    found = []
    for start in range(0, len(now), _BLOCK):
        end = start + _BLOCK
        if now[start:end] != then[start:end] or (
            now_too is not None and then_too is not None and now_too[start:end] != then_too[start:end]
        ):
            found += [
                i
                for i in range(start, min(end, len(now)))
                if now[i] != then[i] or (now_too is not None and then_too is not None and now_too[i] != then_too[i])
            ]
    return found


def _unsure(kinds: bytearray) -> list[int]:
    """The positions of entries not kept (UNSURE), found by the bytearray's own search."""
    found, at = [], kinds.find(UNSURE)
    while at >= 0:
        found.append(at)
        at = kinds.find(UNSURE, at + 1)
    return found


_EMPTY: dict = {
    "folder": None,
    "ids": NO_IDS,
    "names": [],
    "ctimes": NO_IDS,
    "inodes": NO_INODES,
    "kinds": bytearray(),
    "open_ids": [],
    "open_kinds": b"",
    "texts": [],
    "records": marshal.dumps(()),
    "blocked": (),
    "priority": b"",
    "due": (),
    "after": (),
}


def _key_columns(names: list[str], folder: int) -> tuple[array, array] | None:
    """Each file's ctime and inode, as two arrays; None when one was removed meanwhile.
    (A loop that appends to two lists costs ~17 ms less at 100 000 files than making
    a tuple per file and taking the arrays from those.)"""
    ctimes: list[int] = []
    inodes: list[int] = []
    add_ctime, add_inode, lstat = ctimes.append, inodes.append, os.lstat
    try:
        for name in names:
            info = lstat(name, dir_fd=folder)
            add_ctime(info.st_ctime_ns)
            add_inode(info.st_ino)
    except FileNotFoundError:
        return None
    return _array("q", ctimes), _array("Q", inodes)


def _keys(names: list[str], folder: int) -> list[tuple[int, int] | None]:
    """Each file's (ctime, inode), None for one removed meanwhile; no stat result kept alive."""
    try:
        return [((info := os.lstat(name, dir_fd=folder)).st_ctime_ns, info.st_ino) for name in names]
    except FileNotFoundError:
        found: list[tuple[int, int] | None] = []
        for name in names:
            try:
                info = os.lstat(name, dir_fd=folder)
                found.append((info.st_ctime_ns, info.st_ino))
            except FileNotFoundError:
                found.append(None)
        return found


def _adopt_open(store: Files, shot: Snapshot, old: dict, kinds: bytearray, same: bool = False) -> None:
    """The old index's open records, for the files whose entries still hold: its columns
    are taken (Snapshot.take_columns) and its records stay bytes until a command asks for
    them (Snapshot.open), but for the entries that no longer hold, which are left out
    (the files changed since are read again: Snapshot.keep_open). `same`: the entries
    are the old index's own (same ids, same kinds): when the open ones are as many as the
    index keeps, none is left out."""
    open_ids = old["open_ids"]
    reader = (store.read, Cache(store.path).drop_index)
    if same and len(open_ids) == kinds.count(KINDS["pending"]) + kinds.count(KINDS["in_progress"]):
        shot.take_columns(old, *reader)
        return
    ids = shot.ids
    gone = []
    for task_id in open_ids:
        at = bisect_left(ids, task_id)
        if not (at < len(ids) and ids[at] == task_id and kinds[at] in OPEN_KINDS):
            gone.append(task_id)
    shot.take_columns(old, *reader, dropped=gone)


def _differs(shot: Snapshot, old: dict, positions: Iterable[int] | None = None, worth: bool = False) -> bool:
    """Whether the index as checked now tells the next command more than the old one: a
    folder it may vouch for, files that came or went, or an entry it may keep that the
    old one lacks. A file that is only newer is read again either way: saving the index
    for it would cost a busy board a save on every read. `worth`: the old index still
    names every file (the folder is as it saw it, or writers and readers said what was
    put in place since), so it is saved only once the entries it would read again cost
    about what the save does (one per SAVE_PER entries of the board): on a large board
    each write would otherwise cost the next reader a save of the whole index (reading
    a few files again costs little: the index's open columns are taken all the same,
    Snapshot.take_columns)."""
    if (shot.folder_key is not None and shot.folder_key != old["folder"]) or shot.ids != old["ids"]:
        return True
    kinds, ctimes, inodes = old["kinds"], old["ctimes"], old["inodes"]
    if positions is None:  # else only these can differ
        if shot.kinds == kinds and shot.ctimes == ctimes and shot.inodes == inodes:
            return False
        positions = set(_changed(shot.ctimes, ctimes, shot.inodes, inodes)).union(_changed(shot.kinds, kinds))
    new_kinds, new_ctimes, new_inodes = shot.kinds, shot.ctimes, shot.inodes
    better = (
        new_kinds[i] != UNSURE
        and (new_kinds[i] != kinds[i] or new_ctimes[i] != ctimes[i] or new_inodes[i] != inodes[i])
        for i in positions
    )
    if not worth:
        return any(better)
    return sum(better) * SAVE_PER >= len(shot.ids)  # each read again by every command while the old index stays


def _reread(store: Files, folder: int, shot: Snapshot, positions: list[int], trusted: int) -> None:
    """Read these files again through the store (its rules for damaged files apply);
    keep each entry only when the file is old enough to trust. The key (ctime and inode)
    came from the lstat loop before the read: a change during the read can leave the key
    stale, never the content."""
    for i in positions:
        task_id = shot.ids[i]
        shot.forget_open(task_id)
        for known in (shot.recent, shot.damaged):
            known.pop(task_id, None)
        shot.kinds[i] = UNSURE
        try:
            record = store.read(task_id)
        except NotFound:
            continue  # gone since the listing: shown as gone, checked again next time
        except Corrupt as exc:
            shot.damaged[task_id] = exc
            continue
        status = record["status"]
        if status in OPEN:
            shot.keep_open(task_id, record, dumps(record))
        elif shot.closed_text is not None:
            shot.closed_text[task_id] = dumps(record)
        if shot.ctimes[i] < trusted:
            shot.kinds[i] = KINDS[status]
        else:
            shot.recent[task_id] = status


def _read_every(store: Files, folder: int, shot: Snapshot, ids: array, trusted: int) -> None:
    """Fill `shot` with every listed file, each read once: its key (ctime, inode) comes
    from an fstat of the open file before the read (Files.read_keyed), which holds what
    the lstat loop's key would: a change during the read leaves the key stale, never the
    content. A file that is not plainly a sound record gets the lstat loop's key and the
    store's careful read (_reread); one removed since the listing is left out."""
    names, ctimes, inodes, kinds = [], _array("q"), _array("Q"), bytearray()
    kept_ids = _array("q")
    careful: list[int] = []
    opened, opened_text, recent, closed_text = shot.open, shot.open_text, shot.recent, shot.closed_text
    for task_id in ids:
        name = f"task_{task_id}.json"
        found = store.read_keyed(task_id)
        if found is None:
            try:
                info = os.lstat(name, dir_fd=folder)
            except FileNotFoundError:
                continue  # removed since the listing
            careful.append(len(kept_ids))
            ctime, inode, kind = info.st_ctime_ns, info.st_ino, UNSURE
        else:
            record, ctime, inode = found
            status = record["status"]
            if status in OPEN:
                opened[task_id] = record
                opened_text[task_id] = dumps(record)
            elif closed_text is not None:
                closed_text[task_id] = dumps(record)
            if ctime < trusted:
                kind = KINDS[status]
            else:
                kind = UNSURE
                recent[task_id] = status
        kept_ids.append(task_id)
        names.append(name)
        ctimes.append(ctime)
        inodes.append(inode)
        kinds.append(kind)
    shot.ids, shot.names, shot.ctimes, shot.inodes, shot.kinds = kept_ids, names, ctimes, inodes, kinds
    _reread(store, folder, shot, careful, trusted)


def _index_payload(shot: Snapshot) -> bytes:
    columns = shot.columns if shot._open is None and not shot._dropped else None  # the index's own, untouched
    if columns is None:
        kept = [task_id for task_id, kind in zip(shot.ids, shot.kinds, strict=True) if kind in OPEN_KINDS]
        records = [shot.open[task_id] for task_id in kept]
        facts = [_facts_of(record) for record in records]
        columns = {
            "open_ids": kept,
            "open_kinds": bytes(KINDS[fact[0]] for fact in facts),
            "texts": [shot.open_text[task_id] for task_id in kept],
            "records": marshal.dumps(tuple(records)),
            "blocked": tuple(fact[1] for fact in facts),
            "priority": bytes(fact[2] for fact in facts),
            "due": tuple(fact[3] for fact in facts),
            "after": tuple(fact[4] for fact in facts),
        }
    return marshal.dumps(
        {
            "folder": shot.folder_key,
            "ids": _array("q", shot.ids).tobytes(),
            "names": "\n".join(shot.names),
            "ctimes": _array("q", shot.ctimes).tobytes(),
            "inodes": _array("Q", shot.inodes).tobytes(),
            "kinds": bytes(shot.kinds),
            **columns,
            "open_ids": _array("q", columns["open_ids"]).tobytes(),
            "texts": "\n".join(columns["texts"]),  # compact JSON holds no raw newline
        }
    )


# -- history: the closed records in full -------------------------------------------------------


def load_history(store: Files, shot: Snapshot) -> None:
    """Fill `shot.closed_text` for every closed task (after `snapshot`)."""
    began = time.time_ns()
    cache = Cache(store.path)
    folder = os.open(store.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        changed = _load_history(store, folder, shot, cache.load_history(), began - RACY_NS)
    finally:
        os.close(folder)
    if changed:
        cache.save(HISTORY_NAME, _history_payload(shot))


def _load_history(store: Files, folder: int, shot: Snapshot, old: dict | None, trusted: int) -> bool:
    """Closed records from the history file where an entry's key is the file's key now,
    else from the file (those the check read already are taken as it read them); True
    when the history file should be saved."""
    fresh = shot.closed_text or {}
    texts: dict[int, str] = {}
    shot.closed_text = texts
    if shot.ids and old is not None:
        kinds, ids = shot.kinds, shot.ids
        closed = [i for i, kind in enumerate(kinds) if kind in CLOSED_KINDS]
        if (
            _array("q", [ids[i] for i in closed]) == old["ids"]
            and _array("q", [shot.ctimes[i] for i in closed]) == old["ctimes"]
            and _array("Q", [shot.inodes[i] for i in closed]) == old["inodes"]
        ):  # the common case: every closed file is as the history file last saw it
            texts.update(zip(old["ids"], old["texts"], strict=True))
        else:
            at = {task_id: i for i, task_id in enumerate(ids)}
            ctimes, inodes = shot.ctimes, shot.inodes
            for task_id, ctime, inode, text in zip(old["ids"], old["ctimes"], old["inodes"], old["texts"], strict=True):
                i = at.get(task_id)
                if (
                    i is not None
                    and ctimes[i] == ctime
                    and inodes[i] == inode
                    and kinds[i] not in OPEN_KINDS
                    and task_id not in shot.open
                    and task_id not in shot.damaged
                ):
                    texts[task_id] = text  # same inode, same ctime: the file still holds this text
    texts.update(fresh)
    missing = [
        i
        for i, (task_id, kind) in enumerate(zip(shot.ids, shot.kinds, strict=True))
        if task_id not in texts and (kind in CLOSED_KINDS or shot.recent.get(task_id) in CLOSED)
    ]
    if missing:
        _reread(store, folder, shot, missing, trusted)
    if old is None:
        return True
    kept = _history_positions(shot)
    ids = _array("q", [shot.ids[i] for i in kept])
    ctimes = _array("q", [shot.ctimes[i] for i in kept])
    inodes = _array("Q", [shot.inodes[i] for i in kept])
    if ids == old["ids"] and ctimes == old["ctimes"] and inodes == old["inodes"]:
        return False
    # saved only for an entry the old file lacks: one that is only newer is read again either way
    return bool(
        set(zip(ids, ctimes, inodes, strict=True)) - set(zip(old["ids"], old["ctimes"], old["inodes"], strict=True))
    )


def _history_positions(shot: Snapshot) -> list[int]:
    """The closed records the history file keeps: those read from files old enough to trust."""
    texts = shot.closed_text or {}
    return [
        i
        for i, (task_id, kind) in enumerate(zip(shot.ids, shot.kinds, strict=True))
        if kind in CLOSED_KINDS and task_id in texts
    ]


def _history_payload(shot: Snapshot) -> bytes:
    assert shot.closed_text is not None
    texts = shot.closed_text
    kept = _history_positions(shot)
    return marshal.dumps(
        {
            "ids": _array("q", [shot.ids[i] for i in kept]).tobytes(),
            "ctimes": _array("q", [shot.ctimes[i] for i in kept]).tobytes(),
            "inodes": _array("Q", [shot.inodes[i] for i in kept]).tobytes(),
            "texts": "\n".join(texts[shot.ids[i]] for i in kept),  # compact JSON holds no raw newline
        }
    )


def add_archive(shot: Snapshot, entries: list[tuple[int, str, str]], damaged: list[Corrupt]) -> None:
    """The archived tasks (archive_entries) put into a snapshot taken with history
    (DESIGN §11), each marked `"archived": true` in what is shown; a task with a live
    file keeps the live one."""
    assert shot.closed_text is not None, "the archive joins a snapshot with history"
    live = set(shot.ids)
    added: dict[int, int] = {}
    for task_id, status, text in entries:
        if task_id in live:
            continue
        shown = _marked(text)
        if status in OPEN:  # said so by hand or by a merge: `check` reports it
            shot.open[task_id] = loads(shown)
            shot.open_text[task_id] = shown
        else:
            shot.closed_text[task_id] = shown
        added[task_id] = KINDS[status]
    for exc in damaged:
        found = _damaged_id(exc)
        if found is not None and found not in live:
            shot.damaged[found] = exc
            added[found] = UNSURE
    if not added:
        return
    merged = sorted([(task_id, kind) for task_id, kind in zip(shot.ids, shot.kinds, strict=True)] + list(added.items()))
    shot.ids = _array("q", [task_id for task_id, _ in merged])
    shot.kinds = bytearray(kind for _, kind in merged)
    shot.ctimes = _array("q", bytes(8 * len(merged)))
    shot.inodes = _array("Q", bytes(8 * len(merged)))


def _marked(text: str) -> str:
    """A record's compact JSON with `"archived": true` added, exactly as
    `json.dumps({**record, "archived": True}, ensure_ascii=False)` writes it."""
    if '"archived"' in text:  # the file has a key of that name (kept untouched): let json place it
        return dumps({**loads(text), "archived": True})
    return text[:-1] + ', "archived": true}'


def archive_entries(store: Shelf) -> tuple[list[tuple[int, str, str]], list[Corrupt]]:
    """Every archived task as (id, status, compact JSON) in id order, and the damage met,
    for the commands about history (`list --all`, `graph --all`; nothing about open
    work calls this). Checked against the files as the index is: the `archive` file in
    the cache keeps each archived file's key (inode, ctime) with its record, and a file
    whose key changed (a hand edit inside the archive, a checkout) is read again; the
    names come from the cache while the archive folder's own key holds. Files too
    recent to trust are read on every use until they age."""
    began = time.time_ns()
    trusted = began - RACY_NS
    try:
        folder = os.open(store.archive_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    except OSError:
        store.archived_ids()  # raises the store's error for a folder it cannot use
        raise
    cache = Cache(store.path)
    old = cache.load_archive()
    try:
        key: tuple | None = folder_key(os.fstat(folder))
        if old is not None and old["folder"] is not None and old["folder"] == key:
            ids = old["ids"]
        else:
            ids = _array("q", sorted(ids_from_file_names(os.listdir(folder))))
        keys = _keys([f"task_{task_id}.json" for task_id in ids], folder)
    finally:
        os.close(folder)
    if key is not None and key[2] >= trusted:
        key = None  # changed too recently to vouch for the names next time
    entries, damaged, kept = _archived(store, ids, keys, old, trusted)
    if len(kept) != len(ids):
        key = None  # a file the cache does not keep: the folder is listed again next time
    saved = (_array("q", [e[0] for e in kept]), _array("q", [e[1] for e in kept]), _array("Q", [e[2] for e in kept]))
    if old is None or old["folder"] != key or saved != (old["ids"], old["ctimes"], old["inodes"]):
        cache.save(ARCHIVE_NAME, _archive_payload(key, kept, saved))
    return entries, damaged


def _archived(
    store: Shelf, ids: array, keys: list[tuple[int, int] | None], old: dict | None, trusted: int
) -> tuple[list[tuple[int, str, str]], list[Corrupt], list[tuple[int, int, int, int, str]]]:
    """The archived records: from the cache where a file's key still holds, else read.
    Also the entries the cache may keep (id, ctime, inode, kind, text)."""
    at = {task_id: i for i, task_id in enumerate(old["ids"])} if old is not None else {}
    entries: list[tuple[int, str, str]] = []
    damaged: list[Corrupt] = []
    kept: list[tuple[int, int, int, int, str]] = []
    for task_id, found in zip(ids, keys, strict=True):
        if found is None:
            continue  # gone since the listing
        ctime, inode = found
        i = at.get(task_id)
        if old is not None and i is not None and old["ctimes"][i] == ctime and old["inodes"][i] == inode:
            kind, text = old["kinds"][i], old["texts"][i]
        else:
            try:
                record = store.read_archived(task_id)
            except NotFound:
                continue
            except Corrupt as exc:
                damaged.append(exc)
                continue
            kind, text = KINDS[record["status"]], dumps(record)
        entries.append((task_id, STATUS_OF[kind], text))
        if ctime < trusted:
            kept.append((task_id, ctime, inode, kind, text))
    return entries, damaged, kept


def _archive_payload(key: tuple | None, kept: list[tuple[int, int, int, int, str]], saved: tuple) -> bytes:
    ids, ctimes, inodes = saved
    return marshal.dumps(
        {
            "folder": key,
            "ids": ids.tobytes(),
            "ctimes": ctimes.tobytes(),
            "inodes": inodes.tobytes(),
            "kinds": bytes(entry[3] for entry in kept),
            "texts": "\n".join(entry[4] for entry in kept),  # compact JSON holds no raw newline
        }
    )


def _damaged_id(exc: Corrupt) -> int | None:
    from ..core.model import board_file_id

    return board_file_id(exc.file or "")
