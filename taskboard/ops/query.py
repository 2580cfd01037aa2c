"""What a command reads: the board as its files say it is now, through the cache beside
it (a `Listing`), and the filters of a selection (a `Query`), checked once, before the
board is read, by the front end that takes them (the command line, the tools, the page).
"""

from __future__ import annotations

from ..core import graph
from ..core.errors import UsageError
from ..core.fields import OPEN, labels_of, loads, parent_of, priority_of, when_of
from ..core.model import FIELD, check_label, check_limit, parse_status
from ..disk.index import snapshot

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

    from ..core.fields import Record
    from ..core.outcome import Note
    from ..disk.index import Snapshot
    from ..disk.store import Store


def read(store: Store, history: bool = True, archive: bool = False) -> Listing:
    """The board as its files say it is now, through the cache beside it
    (taskboard.disk.index). Without `history` only the open records come in full:
    what costs the open work, not the years of finished work. With `archive` the
    archived tasks too (marked `"archived": true`), checked against their files through
    a cache of their own that nothing about open work opens: what `list --all` and
    `graph --all` show."""
    with store.reading() as notes:
        shot = snapshot(store, history=history or archive)
        if archive:
            from ..disk.index import add_archive, archive_entries

            add_archive(shot, *archive_entries(store))
    if not shot.ids:  # an empty board, or a Claude Code task list without its mark (DESIGN §13)
        store.refuse_claude_list(store.names())
    return Listing(shot, notes, str(store.path))


class Listing:
    """The board as one command reads it, from the cache beside it (taskboard.index):
    every readable task's status, the open records in full, the closed ones when the
    command asked for history, the damage met on the way, and a lookup for the graph
    rules (an unreadable blocker counts as open: nothing is called ready on a guess);
    `notes`: what reading it first recovered."""

    def __init__(self, shot: Snapshot, notes: list[Note] | None = None, root: str | None = None):
        self.shot = shot
        self.root = root  # the board folder, where the cache keeps what a listing learnt
        self.damaged = [shot.damaged[task_id] for task_id in sorted(shot.damaged)]
        self.lookup = shot.lookup
        self.notes = notes or []
        self._records: list[Record] | None = None

    @property
    def records(self) -> list[Record]:
        """Every readable record in id order (of a listing read with history)."""
        if self._records is None:
            self._records = [self.shot.record(task_id) for task_id, _ in self.shot.statuses()]
        return self._records

    def progress(self) -> dict[int, tuple[int, int]]:
        """Each parent's (completed children, children) over every task the listing holds
        (graph.progress): closed children count only in a listing with history, which
        also tells `get` which tasks are parents (cache.remember_parents)."""
        shot = self.shot
        found = list(shot.open.values())
        if shot.closed_text is not None:  # a closed task names its parent in its text: parse only those
            found += [loads(text) for text in shot.closed_text.values() if '"parent": ' in text]
        counted = graph.progress(found)
        if shot.closed_text is not None and self.root is not None:
            from ..disk.cache import remember_parents

            remember_parents(self.root, counted, whole=True)
        return counted

    @property
    def open_records(self) -> list[Record]:
        """The pending and in-progress records in id order (of any listing)."""
        return [self.shot.open[task_id] for task_id in sorted(self.shot.open)]

    def record(self, task_id: int) -> Record:
        return self.shot.record(task_id)

    def json_array(self, task_ids: list[int]) -> str:
        """These records as one JSON array, exactly as `json.dumps(records, ensure_ascii=False)`
        writes it, from the JSON text the cache keeps (no record decoded or encoded)."""
        return self.shot.json_array(task_ids)

    def tally(self, held: Collection[int] = ()) -> dict[str, int]:
        """How many tasks are in each state (as taskboard.core.states.counts gives over every
        record; `held`: the tasks `ready` leaves out, counted blocked), counted without
        reading the closed records."""
        from ..core.states import STATES, state

        found = dict.fromkeys(STATES, 0)
        for record in self.shot.open.values():
            found[state(record, self.lookup, held)] += 1
        found["completed"] = self.shot.count("completed")
        found["deleted"] = self.shot.count("deleted")
        found["tasks"] = sum(found[key] for key in STATES if key != "deleted")
        return found


class Query:
    """The filters of `list`, `ready`, task_list and the page, every usage error raised
    when it is made (before the board is read): `statuses` (any of them; `ready` and
    `blocked` name the two states of an open task), `owner`, `ready`/`blocked`,
    `include_deleted`, every one of `labels`, `priority` (exact; unset counts as 2), `grep`
    (subject or description, case-insensitive), `parent` (its children), `overdue` (open
    and past its due time), `limit` (how many to show: the front end pages)."""

    def __init__(
        self,
        statuses: Iterable[str] = (),
        owner: str | None = None,
        ready: bool = False,
        blocked: bool = False,
        include_deleted: bool = False,
        labels: Iterable[str] = (),
        priority: int | None = None,
        grep: str | None = None,
        parent: int | None = None,
        overdue: bool = False,
        limit: int | None = None,
    ):
        if ready and blocked:
            raise UsageError("ready and blocked exclude each other; ask for one", "ready-and-blocked")
        parsed = {parse_status(status, states=True) for status in statuses}
        if priority is not None:
            FIELD["priority"].check(priority)  # type: ignore[misc]
        if limit is not None:
            check_limit(limit)
        if grep is not None:
            check_grep(grep)
        self.statuses = parsed - {"ready", "blocked"}  # the contract's names
        self.states = parsed & {"ready", "blocked"}
        self.labels = [check_label(label) for label in labels]
        self.needle = None if grep is None else grep.casefold()
        self.owner, self.ready, self.blocked, self.include_deleted = owner, ready, blocked, include_deleted
        self.priority, self.parent, self.overdue, self.limit = priority, parent, overdue, limit

    @property
    def open_only(self) -> bool:
        """Whether only open tasks can pass: then a listing without history answers."""
        wanted = self.statuses
        return self.ready or self.blocked or self.overdue or bool((wanted or self.states) and wanted <= OPEN)

    @property
    def by_field(self) -> bool:
        """Whether a record's fields are asked about (not only its status or state)."""
        fields = (self.owner, self.priority, self.needle, self.parent)
        return any(value is not None for value in fields) or bool(self.labels) or self.overdue

    def fields_pass(self, record: Record, late: str | None) -> bool:
        """Whether a record passes the filters on its fields; `late`: the time now, when
        only open tasks due before it pass (`overdue`)."""
        needle, labels = self.needle, self.labels
        return (
            (self.parent is None or parent_of(record) == self.parent)
            and (late is None or (record["status"] in OPEN and (when_of(record, "due") or "~") < late))
            and (self.owner is None or record["owner"] == self.owner)
            and (not labels or set(labels).issubset(labels_of(record)))
            and (self.priority is None or priority_of(record) == self.priority)
            and (needle is None or needle in f"{record['subject']}\n{record['description']}".casefold())
        )


def check_grep(text: str) -> str:
    if not isinstance(text, str) or not text:
        raise UsageError("the text to search for is empty", "grep")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the text to search for is not valid UTF-8 text", "grep") from None
    return text


def page(items: list, limit: int | None, last: bool = False) -> tuple[list, int]:
    """At most `limit` of `items` (the first ones, or with `last` the last ones), and how
    many there were in all: what `--limit N` shows of `list`, `ready` and `log`."""
    if limit is None or limit >= len(items):
        return items, len(items)
    return (items[len(items) - limit :] if last else items[:limit]), len(items)
