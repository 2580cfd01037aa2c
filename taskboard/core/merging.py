"""Three-way merges of task records and of whole boards, matched by `uid`. Pure: no git,
no files, no clock; every rule is symmetric, so the result does not depend on which side
is "ours" (git swaps the sides during a rebase).

- `merge_record`: one task changed on two sides, field by field against the ancestor.
- `merge_file`: what git's merge driver does for one `task_N.json`. The records of the
  three versions are matched by uid; when both branches created a different task #N,
  both are kept: one stays #N, the other is parked in the same file under PENDING_KEY
  (a driver may write only its own file) until the board can give it a free id.
- `merge_boards`: the whole board, exactly. Each side's edges are translated to uids
  first, so an edge follows its task wherever the task ends up; parked tasks get their
  ids; `repair` then restores what only the whole board can see (a completion on one
  side unblocks the other side's new dependent; a deletion drops the other side's edges).
- `settle_pending`: the same for a board whose parked tasks came without the commits
  they were merged from (a merge commit pulled from a clone that never finished it).
"""

from __future__ import annotations

import json

from . import graph
from .fields import OPEN, Record, parse_json
from .model import EDGE_KEYS, encode, family_form, problems_of, unparsable

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

PENDING_KEY = "pendingRenumber"  # in task_N.json: other tasks a merge left at #N, each {"side", "task"}
SIDES = ("ours", "theirs")
_ABSENT = object()  # a key one version does not have


class Unmergeable(Exception):
    """A version git handed over cannot be read as task records: a person must decide."""


class BoardMerge:
    """A merged board by id, the renumbering it did, and what a person should hear."""

    def __init__(self, records: dict[int, Record]):
        self.records = records
        self.moved: list[tuple[str, int, int]] = []  # (uid, id on its branch, new id)
        self.notes: list[str] = []


def live_kept(live: Record, archived: Record) -> bool:
    """One task found both live and archived (`task_N.json` and `archive/task_N.json`,
    left by a sync or a copy made before DESIGN §11's rule held): whether the live copy is
    the one kept. The live one when it is open (open work never lives in the archive),
    else the newer by `updatedAt`, the live one on a tie. The same rule for every reader
    that meets both: `check --fix`, a sync, the merge of committed boards."""
    if live.get("status") in OPEN:
        return True
    return str(live.get("updatedAt", "")) >= str(archived.get("updatedAt", ""))


# -- one record ------------------------------------------------------------------------


def merge_record(base: Record | None, ours: Record, theirs: Record) -> Record:
    """One task changed on two sides (base None: both added it). A field changed on one
    side takes that side; changed on both to different values, the side with the later
    `updatedAt` wins, equal times the side whose record reads greater as JSON (a rule that
    ignores which side is ours). Status and owner are one field (the claim). Edge lists
    merge as sets, `metadata` key by key, unknown keys like any field; a deletion wins and
    leaves no edges; `updatedAt` is the later one."""
    if ours is theirs or _text(ours) == _text(theirs):
        return ours
    if base is not None and _text(base) == _text(ours):
        return theirs
    if base is not None and _text(base) == _text(theirs):
        return ours
    theirs_wins = _wins(theirs, ours)
    first, second = (theirs, ours) if theirs_wins else (ours, theirs)
    old = base if base is not None else {}
    merged: dict[str, Any] = {}
    # status and owner are one claim: a release on one side and a takeover on the other
    # must not make "pending, owned by the taker"; the pair comes whole from one side
    claim_side = ours if _pick(_claim(old), _claim(ours), _claim(theirs), theirs_wins) == _claim(ours) else theirs
    for key in dict.fromkeys([*old, *first, *second]):
        b, o, t = old.get(key, _ABSENT), ours.get(key, _ABSENT), theirs.get(key, _ABSENT)
        value: Any
        if key in CLAIM_KEYS:
            value = claim_side.get(key, _ABSENT)
        elif key in EDGE_KEYS:
            value = _merge_set(b, o, t)
        elif key == "metadata" and all(isinstance(v, dict) or v is _ABSENT for v in (b, o, t)):
            value = _merge_mapping(b, o, t, theirs_wins)
        elif key == "updatedAt" and isinstance(o, str) and isinstance(t, str):
            value = max(o, t)
        elif key == "id" and isinstance(o, int) and isinstance(t, int) and o != t != b != o:
            value = max(o, t)  # moved to two new ids: the higher one, so no id is ever given twice
        else:
            value = _pick(b, o, t, theirs_wins)
        if value is not _ABSENT:
            merged[key] = value
    if "deleted" in (ours.get("status"), theirs.get("status")):
        merged.update(status="deleted", blockedBy=[], blocks=[])
    return merged


CLAIM_KEYS = ("status", "owner")


def _claim(record: Record | dict) -> list[str]:
    """A record's status and owner, as exact text (either may be absent)."""
    return [_text(record.get(key, _ABSENT)) for key in CLAIM_KEYS]


def _text(value: Any) -> str:
    """Exact JSON text: 1, 1.0 and true differ, as they do in a file."""
    return "\x00absent" if value is _ABSENT else json.dumps(value, ensure_ascii=False)


def _wins(theirs: Record, ours: Record) -> bool:
    """Does theirs win a field both sides changed? The later updatedAt, then the greater JSON."""
    return (str(theirs.get("updatedAt", "")), json.dumps(theirs, sort_keys=True, ensure_ascii=False)) > (
        str(ours.get("updatedAt", "")),
        json.dumps(ours, sort_keys=True, ensure_ascii=False),
    )


def _pick(b: Any, o: Any, t: Any, theirs_wins: bool) -> Any:
    text_o, text_t = _text(o), _text(t)
    if text_o == text_t:
        return o
    text_b = _text(b)
    if text_b == text_o:
        return t
    if text_b == text_t:
        return o
    return t if theirs_wins else o


def _merge_set(b: Any, o: Any, t: Any) -> list:
    """Both sides' additions and removals: kept where both have it or one side added it."""
    base = set(b) if isinstance(b, list) else set()
    mine = set(o) if isinstance(o, list) else set()
    other = set(t) if isinstance(t, list) else set()
    return sorted((mine & other) | (mine - base) | (other - base), key=_edge_order)


def _edge_order(item: Any) -> tuple:
    return (isinstance(item, str), item)


def _merge_mapping(b: Any, o: Any, t: Any, theirs_wins: bool) -> dict:
    old = b if isinstance(b, dict) else {}
    mine = o if isinstance(o, dict) else {}
    other = t if isinstance(t, dict) else {}
    first, second = (other, mine) if theirs_wins else (mine, other)
    merged = {}
    for key in dict.fromkeys([*old, *first, *second]):
        value = _pick(old.get(key, _ABSENT), mine.get(key, _ABSENT), other.get(key, _ABSENT), theirs_wins)
        if value is not _ABSENT:
            merged[key] = value
    return merged


# -- one file (the merge driver) --------------------------------------------------------------


def read_version(data: bytes, name: str, label: str) -> list[tuple[str | None, Record]]:
    """The records one version of a task file holds: the task itself, then any task a
    merge parked there, each with the side it came from (None for the task itself).
    Anything that is not a sound record raises Unmergeable naming the version and rule."""
    try:
        record = parse_json(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unmergeable(f"{label}: {unparsable(data, exc)}") from None
    if isinstance(record, dict) and PENDING_KEY in record:
        record = dict(record)
        parked = record.pop(PENDING_KEY)
    else:
        parked = []
    entries: list[tuple[str | None, Any]] = [(None, record)]
    if not isinstance(parked, list):
        raise Unmergeable(f"{label}: {PENDING_KEY!r} should be a list of parked tasks")
    for item in parked:
        if not (isinstance(item, dict) and item.get("side") in SIDES and isinstance(item.get("task"), dict)):
            raise Unmergeable(f"{label}: {PENDING_KEY!r} holds an entry that is not {{'side', 'task'}}")
        entries.append((item["side"], item["task"]))
    entries = [(side, family_form(entry)[0]) for side, entry in entries]  # as meant (DESIGN §13)
    for _side, entry in entries:
        problems = problems_of(entry, name)
        if problems:
            raise Unmergeable(f"{label}: {problems[0][1]}")
    return entries


def merge_file(base: bytes, ours: bytes, theirs: bytes, name: str) -> bytes:
    """The merge driver's answer for one task file (base empty: both sides added it).
    Records are matched by uid; two different tasks at one id are both kept, the one
    that keeps the id chosen by `_keeper`, the other parked under PENDING_KEY with the
    side it came from. Raises Unmergeable when a version is damaged."""
    versions = [
        read_version(data, name, label) if (data or label != "base") else []
        for data, label in ((base, "base"), (ours, "ours"), (theirs, "theirs"))
    ]
    sides = [_FileSide(entries) for entries in versions]
    old, mine, other = sides
    merged: dict[str, Record] = {}
    labels: dict[str, str] = {}
    for key in dict.fromkeys([*mine.by_key, *other.by_key]):
        b, o, t = old.by_key.get(key), mine.by_key.get(key), other.by_key.get(key)
        if o is None or t is None:
            present = o if o is not None else t
            assert present is not None
            if b is not None and _text(b) == _text(present):
                continue  # gone from one side's file, unchanged on the other: it left this file
            merged[key] = present
        else:
            merged[key] = merge_record(b, o, t)
        labels[key] = mine.label.get(key) or other.label.get(key) or ("ours" if t is None else "theirs")
    if not merged:
        raise Unmergeable("neither side keeps a task in this file")
    task_id = next(iter(merged.values()))["id"]
    keeper = min(merged, key=lambda key: _keeper_rank(key, merged[key], old.main))
    record = dict(merged[keeper])
    parked = [key for key in merged if key != keeper]
    if parked:
        parked.sort(key=lambda key: (str(merged[key].get("createdAt", "")), key))
        record[PENDING_KEY] = [{"side": labels[key], "task": _canonical(merged[key])} for key in parked]
    record["id"] = task_id
    return encode(record)


class _FileSide:
    """The records of one version of one task file, by identity."""

    def __init__(self, entries: list[tuple[str | None, Record]]):
        self.by_key: dict[str, Record] = {}
        self.label: dict[str, str] = {}
        self.main: str | None = None
        for side, record in entries:
            key = _identity(record)
            self.by_key.setdefault(key, record)
            if side is None:
                self.main = key
            else:
                self.label.setdefault(key, side)


def _identity(record: Record) -> str:
    uid = record.get("uid")
    return uid if isinstance(uid, str) else f"#{record['id']}"


def _keeper_rank(key: str, record: Record, held_before: str | None) -> tuple:
    """Who keeps an id two tasks want: the one that held it in the common ancestor, else
    the one created first, else the smaller uid. The same whichever side is ours."""
    return (key != held_before, str(record.get("createdAt", "")), key)


def _canonical(record: Record) -> dict:
    """A record as encode() would write it (parked tasks are nested, so not encoded alone)."""
    return json.loads(encode({key: value for key, value in record.items() if key != PENDING_KEY}))


# -- the whole board --------------------------------------------------------------------------


class _Side:
    """One version of a board: every record by identity (its uid), the identity each id
    names there, and every edge as a pair of identities. A parked task is a record at its
    file's id, but the id names the file's own task."""

    def __init__(self, entries: Iterable[Record], base: _Side | None = None):
        self.by_key: dict[str, Record] = {}
        self.at: dict[int, str] = {}
        self.label: dict[str, str] = {}
        self.duplicates: list[str] = []
        for entry in entries:
            main, parked = entry, None
            if PENDING_KEY in entry:
                main = dict(entry)
                parked = main.pop(PENDING_KEY)
            self._add(main, base, None)
            for item in parked if isinstance(parked, list) else ():
                if isinstance(item, dict) and isinstance(item.get("task"), dict):
                    self._add(item["task"], base, item.get("side") if item.get("side") in SIDES else "theirs")

    def _add(self, record: Record, base: _Side | None, side: str | None) -> None:
        task_id = record["id"]
        key = _identity(record)
        if base is not None and key not in base.by_key and base.at.get(task_id, "").startswith("#"):
            key = base.at[task_id]  # a hand-written record without uid got one on its first rewrite
        if key in self.by_key:  # one task in two files (a move one side made, a change the other)
            self.duplicates.append(key)
            if side is None:
                self.at.setdefault(task_id, key)
            return
        self.by_key[key] = record
        if side is None:
            self.at.setdefault(task_id, key)
        else:
            self.label[key] = side

    def ids(self) -> set[int]:
        return {record["id"] for record in self.by_key.values()}

    def name(self, task_id: int) -> str:
        return self.at.get(task_id, f"?{task_id}")

    def translated(self, key: str) -> Record | None:
        """The record with its edges as identities (`?N` for an id nothing holds here)."""
        record = self.by_key.get(key)
        if record is None:
            return None
        copy = dict(record)
        for edge in EDGE_KEYS:
            if isinstance(copy.get(edge), list):
                copy[edge] = sorted({self.name(i) for i in copy[edge]})
        return copy

    def pairs(self, skip: set[str]) -> set[tuple[str, str]]:
        """Every edge (blocker, dependent) that either end's list states, but for the
        records in `skip` (unchanged everywhere: their partners' lists state their edges)."""
        found = set()
        for key, record in self.by_key.items():
            if key in skip:
                continue
            found |= {(key, self.name(i)) for i in record.get("blocks", ())}
            found |= {(self.name(i), key) for i in record.get("blockedBy", ())}
        return found


def merge_boards(
    base: Iterable[Record], ours: Iterable[Record], theirs: Iterable[Record], published: bool = False
) -> BoardMerge:
    """Three versions of a board merged exactly. Tasks are matched by uid and merged with
    `merge_record`; the edges are one relation of (blocker, dependent) pairs of uids,
    merged as a set (an edge one side added is kept, one a side removed goes), so every
    edge follows its task when the task is renumbered. A deleted task loses every edge;
    `blockedBy` lists an edge's blocker only while it is open (a completion on one side
    unblocks the other side's new dependents). Tasks that want one id: one keeps it
    (`_keeper_rank`), the others move to fresh ids above every id either side used.
    `published`: theirs is what a remote already holds (sync), so a task at an id there
    keeps it, and the one of ours that was not pushed yet moves (DESIGN §8)."""
    old = _Side(base)
    mine, other = _Side(ours, old), _Side(theirs, old)
    merged: dict[str, Record] = {}
    notes: list[str] = []
    # A task the same on all three sides stays as it is, unless a change next to it that did
    # not touch it on its side touches it now (a blocker reopened on one side while the
    # other added a history edge to it): its lists are checked against the derived ones.
    quiet = {
        key
        for key, record in mine.by_key.items()
        if same(record, other.by_key.get(key, _ABSENT)) and same(record, old.by_key.get(key, _ABSENT))
    }
    for key in dict.fromkeys([*mine.by_key, *other.by_key]):
        if key in quiet:
            merged[key] = mine.by_key[key]
            continue
        b, o, t = old.translated(key), mine.translated(key), other.translated(key)
        if o is None or t is None:
            present = o if o is not None else t
            assert present is not None
            if b is not None and _text(b) == _text(present):
                continue  # its file was removed on one side and it is unchanged on the other
            if b is not None:
                notes.append(f"#{present['id']} was removed on one side but changed on the other; it is kept")
            merged[key] = present
        else:
            merged[key] = merge_record(b, o, t)
    for side in (mine, other):
        notes += [f"uid {key} is in two files on one side; the first one was kept" for key in side.duplicates]
    base_pairs, our_pairs, their_pairs = old.pairs(quiet), mine.pairs(quiet), other.pairs(quiet)
    pairs = (our_pairs & their_pairs) | (our_pairs - base_pairs) | (their_pairs - base_pairs)
    final = _place(merged, old, [mine, other], other if published else None)
    result = BoardMerge({})
    result.moved = sorted(
        ((key, record["id"], final[key]) for key, record in merged.items() if final[key] != record["id"]),
        key=lambda move: move[2],
    )
    result.records, derived = _derive(merged, pairs, final, quiet, old.at)
    result.notes = sorted(notes) + [f"#{old_id} (uid {uid}) became #{new}" for uid, old_id, new in result.moved]
    result.notes += derived
    return result


def _place(merged: dict[str, Record], old: _Side, sides: list[_Side], published: _Side | None) -> dict[str, int]:
    """The final id of every task: the id it merged to, unless another task keeps that id
    (the one at that id on the `published` side, when there is one)."""
    wanted: dict[int, list[str]] = {}
    for key, record in merged.items():
        wanted.setdefault(record["id"], []).append(key)
    used = set(wanted) | old.ids()
    for side in sides:
        used |= side.ids()
    fresh = max(used, default=0)
    final: dict[str, int] = {}
    movers: list[str] = []
    for task_id, keys in wanted.items():
        held = old.at.get(task_id)
        if published is not None and published.at.get(task_id) in keys:
            held = held if held in keys else published.at.get(task_id)
        keeper = min(keys, key=lambda key: _keeper_rank(key, merged[key], held))
        final[keeper] = task_id
        movers += [key for key in keys if key != keeper]
    for key in sorted(movers, key=lambda key: (str(merged[key].get("createdAt", "")), key)):
        fresh += 1
        final[key] = fresh
    return final


def same(a: Any, b: Any) -> bool:
    """Equal as JSON, exactly (1, 1.0 and true differ; so does key order): the fast way
    to tell an unchanged record, which is most of a large board."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if kind is list:
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def _derive(
    records: dict,
    pairs: set[tuple],
    final: dict,
    quiet: frozenset | set = frozenset(),
    names: dict[int, str] | None = None,
) -> tuple[dict[int, Record], list[str]]:
    """The board by final id with both lists written from one edge relation: `blocks`
    holds every edge of a live task (a completed one's as history), `blockedBy` those whose
    blocker is open; a deleted task has none and is named by none; an edge to a task that
    does not exist is dropped. A record whose lists changed beyond its own merge takes the
    later `updatedAt` of itself and the tasks that changed them, so every clone agrees."""
    notes: list[str] = []
    live = {key for key, record in records.items() if record.get("status") != "deleted"}
    blocks: dict = {key: set() for key in records}
    blocked: dict = {key: set() for key in records}
    dropped: dict = {}
    if quiet:  # a quiet task's own lists state edges no other pair may (a history edge): read them too
        pairs = pairs | _quiet_pairs(records, quiet, names or {})
    for blocker, dependent in pairs:
        if blocker in live and dependent in live:
            blocks[blocker].add(dependent)
            if records[blocker].get("status") in OPEN:
                blocked[dependent].add(blocker)
        else:
            for end, far in ((blocker, dependent), (dependent, blocker)):
                if end in live and far not in records:
                    dropped.setdefault(end, set()).add(far)
    out: dict[int, Record] = {}
    for key, record in records.items():
        if key in quiet and _lists_hold(record, blocks[key], blocked[key], final):
            out[final[key]] = record  # unchanged, and no change next to it (a reopened blocker) touches it
            continue
        new = dict(record)
        new["id"] = final[key]
        new["blocks"] = sorted(final[k] for k in blocks[key])
        new["blockedBy"] = sorted(final[k] for k in blocked[key])
        causes = (blocks[key] ^ set(record.get("blocks", ()))) | (blocked[key] ^ set(record.get("blockedBy", ())))
        later = [str(records[k].get("updatedAt", "")) for k in causes if k in records]
        if later and max(later) > str(new.get("updatedAt", "")):
            new["updatedAt"] = max(later)
        out[new["id"]] = new
        if key in dropped:
            notes.append(f"#{new['id']} lost its edge(s) to tasks that do not exist")
    cycles = graph.find_cycles({task_id: list(record["blocks"]) for task_id, record in out.items()})
    notes += [f"the merge closed the cycle {graph.format_cycle(cycle)}; remove one of its edges" for cycle in cycles]
    return out, notes


def _quiet_pairs(records: dict, quiet: frozenset | set, names: dict[int, str]) -> set[tuple]:
    """The edges quiet tasks' own lists state, their ids read as the ancestor's (a task the
    same on every side names the tasks it named there)."""
    found = set()
    for key in quiet:
        record = records[key]
        found |= {(key, names[i]) for i in record.get("blocks", ()) if names.get(i) in records}
        found |= {(names[i], key) for i in record.get("blockedBy", ()) if names.get(i) in records}
    return found


def _lists_hold(record: Record, blocks: set, blocked: set, final: dict) -> bool:
    return record.get("blocks") == sorted(final[k] for k in blocks) and record.get("blockedBy") == sorted(
        final[k] for k in blocked
    )


def settle_pending(entries: Iterable[Record]) -> BoardMerge:
    """Give every parked task a free id when the commits it was merged from are not at
    hand. The twins at a shared id (the file's task and the ones parked beside it) list
    their neighbours as on their own branch, so their edges are exact: an id that is
    itself shared resolves to the twin from the same side. Any other task's mention of a
    shared id is ambiguous and left out; the twins' own lists restore those edges. Only a
    completed task's history edge to a shared id that no twin explains cannot be rebuilt:
    it stays on the id, and a note says so. A task git left in two files (one side moved
    it, the other changed it) is merged from both, each version's edges read on its own
    side, and keeps the higher id."""
    placed, main_of, at = _unpack(entries)
    result = BoardMerge({})
    versions: dict[str, list[tuple[int, str | None, Record]]] = {}
    for file_id, label, record in placed:
        versions.setdefault(_identity(record), []).append((file_id, label, record))
    records: dict[str, Record] = {}
    final: dict[str, int] = {}
    parked_only = []
    for key, found in versions.items():
        merged = found[0][2]
        for _, _, version in found[1:]:
            merged = merge_record(None, merged, version)
        homes = [file_id for file_id, _, _ in found if main_of.get(file_id) == key]
        records[key] = merged
        if homes:
            final[key] = max(homes)
            if len(found) > 1:
                result.notes.append(f"uid {key} was in {len(found)} files after the merge; it keeps #{final[key]}")
        else:
            parked_only.append(key)
    fresh = max((file_id for file_id, _, _ in placed), default=0)
    for key in sorted(parked_only, key=lambda k: (str(records[k].get("createdAt", "")), k)):
        fresh += 1
        final[key] = fresh
        result.moved.append((key, versions[key][0][0], fresh))
    pairs = _pairs_of_versions(versions, main_of, at, result)
    result.records, derived = _derive(records, pairs, final)
    result.notes += [f"#{old_id} (uid {uid}) became #{new}" for uid, old_id, new in result.moved] + derived
    return result


def _pairs_of_versions(
    versions: dict[str, list[tuple[int, str | None, Record]]],
    main_of: dict[int, str],
    at: dict[int, dict[str, str]],
    result: BoardMerge,
) -> set[tuple[str, str]]:
    """The edges the records of a board with parked tasks state, as pairs of identities:
    a twin's (a task at a shared id, or in two files) read on its own side, any other
    task's mention of a shared id left to the twins' lists unless it is history (_history)."""

    def resolve(task_id: int, label: str | None) -> str:
        if task_id in at and label is not None and label in at[task_id]:
            return at[task_id][label]
        return main_of.get(task_id, f"?{task_id}")

    twins = {key for key, found in versions.items() if len(found) > 1 or any(f in at for f, _, _ in found)}
    # A blocker's `blocks` is the record of its edges (a completed one keeps them as history);
    # a dependent's `blockedBy` follows from it. So a `blockedBy` mention that no version of
    # the blocker backs was removed on the blocker's side while the other side re-derived it
    # (one side drops a completed task's edge, the other reopens the task): it goes, as the
    # exact merge drops it. A blocker that is not on the board keeps the mention, to be named.
    backed = {
        (key, task_id)
        for key, found in versions.items()
        for _, _, version in found
        for task_id in version.get("blocks", ())
        if isinstance(task_id, int)
    }
    ids_of: dict[str, set[int]] = {}
    for key, found in versions.items():
        ids_of[key] = {file_id for file_id, _, _ in found}
    pairs: set[tuple[str, str]] = set()
    for key, found in versions.items():
        for _file_id, label, version in found:
            for edge in EDGE_KEYS:
                for task_id in version.get(edge, ()):
                    if not isinstance(task_id, int):
                        continue
                    if edge == "blockedBy":
                        blocker = resolve(task_id, label if key in twins else None)
                        if blocker in versions and not any((blocker, i) in backed for i in ids_of[key]):
                            continue
                    if (
                        key not in twins
                        and task_id in at
                        and not _history(version, edge, task_id, at, versions, result)
                    ):
                        continue  # the twins' own lists say which of them it meant
                    other = resolve(task_id, label if key in twins else None)
                    pairs.add((key, other) if edge == "blocks" else (other, key))
    return pairs


def _unpack(
    entries: Iterable[Record],
) -> tuple[list[tuple[int, str | None, Record]], dict[int, str], dict[int, dict[str, str]]]:
    """Every record of a board whose files may hold parked tasks, with the file it is in and
    the side it came from (a file's own task: the side opposite its parked ones); which task
    each file holds; and, for each shared id, which task each side had there."""
    placed: list[tuple[int, str | None, Record]] = []
    main_of: dict[int, str] = {}  # file id -> identity of the file's own task
    at: dict[int, dict[str, str]] = {}  # shared id -> side label -> identity
    for entry in entries:
        main = {key: value for key, value in entry.items() if key != PENDING_KEY}
        parked = [item for item in entry.get(PENDING_KEY, []) if isinstance(item, dict)]
        labels = {item.get("side") for item in parked} & set(SIDES)
        main_side = ("theirs" if "ours" in labels else "ours") if len(labels) == 1 else None
        placed.append((main["id"], main_side, main))
        main_of[main["id"]] = _identity(main)
        for item in parked:
            if isinstance(item.get("task"), dict) and item.get("side") in SIDES:
                placed.append((main["id"], item["side"], item["task"]))
                at.setdefault(main["id"], {}).setdefault(item["side"], _identity(item["task"]))
        if main_side is not None:
            at[main["id"]].setdefault(main_side, main_of[main["id"]])

    return placed, main_of, at


def _history(record: Record, edge: str, task_id: int, at: dict, versions: dict, result: BoardMerge) -> bool:
    """Whether a task's mention of an id two tasks shared must stay on the id: a history
    edge (a completed task's, which its dependent's list does not show) that no twin
    explains. Notes the mentions nothing can attribute."""
    reverse = "blockedBy" if edge == "blocks" else "blocks"
    twins = at[task_id].values()
    explained = [t for t in twins if any(record["id"] in v[2].get(reverse, ()) for v in versions.get(t, ()))]
    history = edge == "blocks" and (not explained or record.get("status") == "completed")
    if history and len(explained) < len(twins):
        result.notes.append(
            f"#{record['id']} lists #{task_id} in blocks, where a merge put two tasks; "
            f"nothing says which one its history edge meant{'' if explained else f' (kept on #{task_id})'}"
        )
    return history and not explained


def repair(records: dict[int, Record]) -> tuple[dict[int, Record], list[str]]:
    """A board whose lists may disagree (a merge git made file by file, a hand edit) with
    DESIGN §2 restored: both lists written again from the edges either list states, as
    `check --fix` would (a constraint is never dropped), a completed blocker out of
    `blockedBy`, a deleted task unlinked. Cycles are named, not broken."""
    pairs = {(task_id, other) for task_id, record in records.items() for other in record.get("blocks", ())}
    pairs |= {(other, task_id) for task_id, record in records.items() for other in record.get("blockedBy", ())}
    return _derive(records, pairs, {task_id: task_id for task_id in records})
