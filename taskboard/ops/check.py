"""`tasks check`: every file and every invariant, and the repairs that have one
right answer. Cycles and unreadable files are reported, never guessed at."""

from __future__ import annotations

import errno
import json
import re

from ..core import graph
from ..core.errors import Corrupt
from ..core.fields import MAX_ID, OPEN, parse_json
from ..core.model import (
    ARCHIVE_FOLDER,
    EXTENSION_KEYS,
    archive_file_name,
    board_file_id,
    encode,
    family_form,
    file_name,
    problems_of,
    text_problems,
    unparsable,
)
from ..core.outcome import Event, Problem
from ..disk.store import Store, read_bytes, settled_bytes

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from .change import Change

_LOOKS_LIKE_TASK = re.compile(r"task_.*\.json")


def run_check(store: Store, change: Change | None = None) -> list[Problem]:
    """All problems on the board; with a `change` (under the write lock) the fixable
    ones are repaired in one all-or-nothing write and marked fixed."""
    problems: list[Problem] = []
    archived: set[int] = set()
    shadowed: dict[int, dict] = {}
    records = _read_records(store, problems, archived, shadowed)
    settled = _one_place(records, shadowed, archived, problems, change)
    problems += _parked(records)
    if change is not None:  # a repair of an archived task leaves it there while it stays closed
        change.archived |= archived
        change.stay |= archived
    fixes: dict[int, dict] = {}  # id -> edited copy of the record

    def fixed_copy(task_id: int) -> dict:
        if task_id not in fixes:
            fixes[task_id] = json.loads(json.dumps(records[task_id]))
        return fixes[task_id]

    for problem in problems:
        if problem.rule == "family-form" and change is not None and problem.task in records:
            fixed_copy(problem.task)
    for task_id, record in sorted(records.items()):
        name = file_name(task_id)
        missing = [key for key in EXTENSION_KEYS if key not in record]
        if missing and change is not None:  # cosmetic: a plain s12 record is sound, --fix completes it
            problems.append(
                Problem(
                    name, task_id, "keys", f"#{task_id} lacks {', '.join(missing)}; a rewrite adds them", fixable=True
                )
            )
            fixed_copy(task_id)
    # a task whose file is damaged is not missing: edges to it stay (its file is reported)
    unreadable = (set(store.task_ids()) | set(store.archived_ids())) - set(records)
    _check_edges(records, problems, fixed_copy, unreadable)
    _bring_back(records, archived, problems, fixed_copy, change)
    successors: dict[int, list[int]] = {tid: [] for tid, r in records.items() if r["status"] != "deleted"}
    for blocker, dependent in graph.edges(records.values()):
        successors[blocker].append(dependent)
    for cycle in graph.find_cycles(successors):
        problems.append(
            Problem(
                file_name(cycle[0]),
                cycle[0],
                "cycle",
                f"the edges form the cycle {graph.format_cycle(cycle)}; remove one of them by hand",
            )
        )
    if change is not None:  # layout is cosmetic: reported only where --fix rewrites it
        _check_format(store, records, fixes, problems, fixed_copy, archived)
    problems.extend(_journal_problems(store))
    problems.extend(_place_problems(store))
    if change is not None and any(problem.reason == "state-folder" for problem in problems):
        from ..disk.state import State

        State(str(store.root)).ensure_folder()
    if change is not None and (fixes or settled):
        for copy in fixes.values():
            change.rewrite(copy)  # even unchanged content: a re-layout or added keys do not change encode()
        change.commit(_repairs(set(fixes) | set(settled), problems))
    for problem in problems:
        problem.fixed = problem.fixable and change is not None
    return problems


def _bring_back(records: dict[int, dict], archived: set[int], problems: list[Problem], fixed_copy, change) -> None:
    """The archived tasks that belong with the open work, reported; a repair brings them back."""
    for task_id in _archived_in_use(records, archived, problems):
        fixed_copy(task_id)
        if change is not None:
            change.stay.discard(task_id)


def _archived_in_use(records: dict[int, dict], archived: set[int], problems: list[Problem]) -> list[int]:
    """Archived tasks that belong with the open work (DESIGN §11): one that says it is
    open (a hand edit, a merge that reopened it), or one an open task names. Reported;
    the repair brings each back. Their ids."""
    open_ids = {task_id for task_id, record in records.items() if record["status"] in OPEN}
    named = {other for task_id in open_ids for other in records[task_id]["blocks"] + records[task_id]["blockedBy"]}
    found = []
    for task_id in sorted(archived):
        record = records[task_id]
        name = archive_file_name(task_id)
        if record["status"] in OPEN:
            what = record["status"].replace("_", " ")
            message = f"#{task_id} is archived ({name}) but {what}; archived tasks are closed, a repair brings it back"
            problems.append(Problem(name, task_id, "archived-open", message, fixable=True))
        elif task_id in named:
            message = f"#{task_id} is archived ({name}) but an open task names it; a repair brings it back"
            problems.append(Problem(name, task_id, "archived-linked", message, fixable=True))
        else:
            continue
        found.append(task_id)
    return found


def _one_place(
    records: dict[int, dict], shadowed: dict[int, dict], archived: set[int], problems: list[Problem], change
) -> list[int]:
    """A task both live and archived (the same uid in `task_N.json` and
    `archive/task_N.json`, left by an older sync or a copy by hand): reported; the copy
    merging.live_kept keeps is the one read (the live one if open, else the newer by
    `updatedAt`), and a repair removes the other. Their ids."""
    from ..core.merging import live_kept

    for task_id, other in sorted(shadowed.items()):
        live, shelved = file_name(task_id), archive_file_name(task_id)
        if live_kept(records[task_id], other):
            why = "it is open" if records[task_id]["status"] in OPEN else "it is the newer or as new"
            kept, gone = "live", shelved
        else:
            why = f"both are {records[task_id]['status']}, the archived one is newer"
            kept, gone = "archived", live
            records[task_id] = other
            archived.add(task_id)
        what = f"#{task_id} is both live ({live}) and archived ({shelved})"
        if change is None:
            message = f"{what}; a repair keeps the {kept} one ({why}) and removes {gone}"
        else:
            message = f"{what}: kept the {kept} one ({why}), removed {gone}"
            change.discard.append(gone)
        problems.append(Problem(gone, task_id, "duplicate-id", message, fixable=True))
    return sorted(shadowed)


def _board_names(store: Store) -> list[str]:
    """The board folder's names, then the archive folder's (as `archive/NAME`), sorted so
    that a live file comes after an archived one of the same id (the live one is read)."""
    import os

    try:
        archived = [f"{ARCHIVE_FOLDER}/{name}" for name in os.listdir(store.archive_dir)]
    except (FileNotFoundError, NotADirectoryError):
        archived = []
    return sorted(archived) + sorted(name for name in store.names() if name != ARCHIVE_FOLDER)


def _note_place(archived: set[int], task_id: int, name: str) -> None:
    """Whether the record read last for an id came from the archive (a live one wins)."""
    if name.startswith(ARCHIVE_FOLDER + "/"):
        archived.add(task_id)
    else:
        archived.discard(task_id)


def _shadow(records: dict[int, dict], archived: set[int], shadowed: dict[int, dict], record: dict) -> None:
    """A live record read after an archived one of the same task: the archived copy is shadowed."""
    task_id = record["id"]
    if task_id in archived and task_id in records and records[task_id].get("uid") == record.get("uid"):
        shadowed[task_id] = records[task_id]


def _read_records(
    store: Store, problems: list[Problem], archived: set[int], shadowed: dict[int, dict]
) -> dict[int, dict]:
    """Every sound record by id (a live file wins over an archived one of the same id: the
    archived copy of the same task goes to `shadowed`, for _one_place)."""
    records: dict[int, dict] = {}
    claimed: dict[int, list[str]] = {}
    for name in _board_names(store):
        task_id = board_file_id(name)
        if task_id is None:
            if _LOOKS_LIKE_TASK.fullmatch(name):
                problems.append(
                    Problem(
                        name,
                        None,
                        "file-name",
                        f"{name} is not named task_<id>.json with a plain id from 1 to {MAX_ID}, "
                        "so the board ignores it",
                    )
                )
            elif name.startswith(".") and name.endswith(".tmp"):
                problems.append(Problem(name, None, "scratch", f"{name} looks like a leftover temporary file"))
            continue
        try:
            raw = read_bytes(store.root / name)
        except OSError as exc:
            rule = "symlink" if exc.errno == errno.ELOOP else "unreadable"
            problems.append(Problem(name, task_id, rule, f"{name} cannot be read: {exc.strerror}"))
            continue
        try:
            record = _parsed(store, name, raw)  # as strict as every other reader of the board
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason, why = unparsable(raw, exc)
            hint = "; repair it by hand (in a clone, git diff shows what changed since the last commit)"
            problems.append(Problem(name, task_id, "json", f"{name}: {why}{hint}", reason=reason))
            continue
        record, family = family_form(record)
        found = problems_of(record, name)
        for rule, message in found:
            problems.append(Problem(name, task_id, rule, f"{name}: {message}"))
        problems += _family_notice(name, task_id, family, bool(found))
        if isinstance(record, dict) and isinstance(record.get("id"), int):
            claimed.setdefault(record["id"], []).append(name)
        if not found:
            _shadow(records, archived, shadowed, record)
            records[task_id] = record
            _note_place(archived, task_id, name)
            # readable, and shown escaped everywhere, but not what input allows: said, never guessed at
            for rule, message in text_problems(record):
                problems.append(Problem(name, task_id, rule, f"{name}: {message}"))
            problems += _metadata_problems(name, task_id, record)
    for task_id, files in claimed.items():
        if len(files) > 1 and not (task_id in shadowed and len(files) == 2):
            problems.append(
                Problem(files[0], task_id, "duplicate-id", f"id {task_id} is claimed by {', '.join(files)}")
            )
    return records


def _parsed(store: Store, name: str, raw: bytes) -> object:
    """A task file's JSON; one that may be half written in place (empty or not JSON, and
    changed within the last second: DESIGN §13) is read again briefly first."""
    try:
        return parse_json(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        try:
            again = settled_bytes(f"{store.path}/{name}", raw, Corrupt(str(exc), name, "json"))
        except (Corrupt, OSError):
            raise exc from None
        return parse_json(again)


def _family_notice(name: str, task_id: int, family: list[str], damaged: bool) -> list[Problem]:
    """A record in a spelling of the s12 family (DESIGN §13), read as meant: said, never
    damage; --fix (and the next change of it) writes the canonical form."""
    if not family or damaged:
        return []
    return [
        Problem(
            name,
            task_id,
            "family-form",
            f"{name}: {'; '.join(family)} (as the s12 family writes it; read as meant, "
            "and the next change of it or a repair writes the canonical form)",
            fixable=True,
            notice=True,
        )
    ]


def _metadata_problems(name: str, task_id: int, record: dict) -> list[Problem]:
    """The keys of `metadata` with a meaning of their own (priority, labels, accept, gate)
    holding what input would have refused (written by hand or by another tool): named with
    the rule they break and what the views make of them until they are set again. Reported,
    never guessed at."""
    from ..core.errors import UsageError
    from ..core.model import FIELD, META_FIELDS

    metadata = record.get("metadata")
    found = []
    for key in (field.name for field in META_FIELDS):
        if not isinstance(metadata, dict) or key not in metadata:
            continue
        value = metadata[key]
        try:
            FIELD[key].check(value)  # type: ignore[misc]  # META_FIELDS have a check
            continue
        except UsageError as exc:
            why = exc.message
        shown = json.dumps(value, ensure_ascii=False)
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        if key == "priority":
            why = f"metadata.priority is {shown}, not a whole number from 0 to 4 (until it is set again it counts as 2)"
        elif key == "labels" and not isinstance(value, list):
            why = f"metadata.labels is {shown}, not a list of labels (until it is set again the task has none)"
        elif key == "labels":
            why = f"metadata.labels {shown}: {why} (until it is set again the views show the ones that are text)"
        elif not isinstance(value, str):
            why = f"metadata.{key} is {shown}, not text" + (
                " (no gate runs until it is set again)" if key == "gate" else ""
            )
        else:
            why = f"metadata.{key}: {why}"
        found.append(Problem(name, task_id, "metadata", f"{name}: {why}", reason=key))
    return found


def _check_edges(records: dict[int, dict], problems: list[Problem], fixed_copy, unreadable: set[int]) -> None:
    def report(task_id: int, rule: str, message: str) -> None:
        problems.append(Problem(file_name(task_id), task_id, rule, message, fixable=True))

    def drop(task_id: int, key: str, other: int) -> None:
        copy = fixed_copy(task_id)
        copy[key] = [x for x in copy[key] if x != other]

    def add(task_id: int, key: str, other: int) -> None:
        copy = fixed_copy(task_id)
        copy[key] = sorted(set(copy[key]) | {other})

    def dangling(task_id: int, key: str, other_id: int, relation: str) -> bool:
        """An edge to a missing or deleted task: reported and dropped; True if so.
        (An unreadable task is not missing: its edges stay, its file is reported.)"""
        other = records.get(other_id)
        if other_id in unreadable or (other is not None and other["status"] != "deleted"):
            return False
        what = "does not exist" if other is None else "is deleted"
        report(
            task_id,
            "missing-task" if other is None else "deleted-linked",
            f"#{task_id} {relation} #{other_id}, which {what}",
        )
        drop(task_id, key, other_id)
        return True

    for a_id, a in sorted(records.items()):
        if a["status"] == "deleted":
            if a["blocks"] or a["blockedBy"]:
                report(a_id, "deleted-linked", f"#{a_id} is deleted but still lists edges")
                fixed_copy(a_id).update(blocks=[], blockedBy=[])
            continue
        for b_id in sorted(set(a["blocks"])):
            if b_id in unreadable or dangling(a_id, "blocks", b_id, "blocks"):
                continue
            if a["status"] in OPEN and a_id not in records[b_id]["blockedBy"]:
                report(b_id, "one-sided-edge", f"#{a_id} blocks #{b_id} but #{b_id} does not list #{a_id} in blockedBy")
                add(b_id, "blockedBy", a_id)
        for blocker_id in sorted(set(a["blockedBy"])):
            if blocker_id in unreadable or dangling(a_id, "blockedBy", blocker_id, "is blocked by"):
                continue
            blocker = records[blocker_id]
            if a_id not in blocker["blocks"]:
                report(
                    blocker_id,
                    "one-sided-edge",
                    f"#{a_id} lists #{blocker_id} in blockedBy but #{blocker_id} does not block #{a_id}",
                )
                add(blocker_id, "blocks", a_id)
            if blocker["status"] == "completed":
                report(
                    a_id,
                    "completed-blocker",
                    f"#{a_id} still lists #{blocker_id} as a blocker, but #{blocker_id} is completed",
                )
                drop(a_id, "blockedBy", blocker_id)


def _check_format(
    store: Store, records: dict[int, dict], fixes: dict, problems: list[Problem], fixed_copy, archived: set[int]
) -> None:
    """Files whose bytes are not the canonical encoding (hand edits, merges)."""
    for task_id, record in sorted(records.items()):
        if task_id in fixes:
            continue  # rewritten by another fix anyway
        name = archive_file_name(task_id) if task_id in archived else file_name(task_id)
        try:
            if read_bytes(store.root / name) == encode(record):
                continue
        except OSError:
            continue
        problems.append(
            Problem(
                name,
                task_id,
                "format",
                f"{name} is not in the canonical layout (indent 2, key order, sorted ids, trailing newline)",
                fixable=True,
            )
        )
        fixed_copy(task_id)


def _journal_problems(store: Store) -> list[Problem]:
    """Damaged journal lines (hand edits, bad merges): named by file and line, never
    repaired (the journal is only appended to), skipped by `log`."""
    from ..disk.journal import damage

    found = []
    for flaw in damage(store.root):
        where = f"{flaw.file} line {flaw.line}" if flaw.line else flaw.file
        found.append(Problem(flaw.file, None, "journal", f"{where}: {flaw.message}", reason=flaw.reason))
    return found


def _place_problems(store: Store) -> list[Problem]:
    """The folders and files of the board's machinery that are of the wrong kind (a file
    where the journal folder belongs, a FIFO as the runtime state's lock, a folder as
    `.gitignore`): every change that needs one exits 6 naming it, and `check` says so
    before that happens, instead of calling the board sound."""
    import os
    import stat

    from ..disk.journal import JOURNAL_DIR
    from ..disk.state import LOCK_NAME, locate

    root = str(store.root)
    folder, shared = locate(root)
    chains = [
        [(os.path.join(root, JOURNAL_DIR), stat.S_ISDIR, "a folder", "journal", "the journal cannot be written")],
        *[
            [(os.path.join(root, name), stat.S_ISREG, "a regular file", "git-files", "git does not read it")]
            for name in (".gitignore", ".gitattributes")
        ],
        [
            *([(os.path.dirname(folder), stat.S_ISDIR, "a folder", "state", "")] if shared else []),
            (folder, stat.S_ISDIR, "a folder", "state", ""),
            (os.path.join(folder, LOCK_NAME), stat.S_ISREG, "a regular file", "state", ""),
        ],
    ]
    found = []
    for chain in chains:
        for path, kind, what, rule, why in chain:  # each place in a chain lies inside the one before
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                break  # not there yet: made when first needed
            if not kind(mode):
                link = " (a symbolic link)" if stat.S_ISLNK(mode) else ""
                name = os.path.relpath(path, root) if rule != "state" else path
                if rule == "state" and kind is stat.S_ISDIR:  # runtime debris: replaced when next needed
                    message = f"{name}: should be {what}{link}; a check with repairs, or the next claim, replaces it"
                    found.append(Problem(name, None, rule, message, reason="state-folder", fixable=True))
                    break
                said = why or "claims and completions cannot be recorded"
                found.append(
                    Problem(name, None, rule, f"{name}: should be {what}{link}; {said} until it is moved away")
                )
                break
    return found


def _parked(records: dict[int, dict]) -> list[Problem]:
    """Tasks a merge left beside another at one id (taskboard.merging); finishing the
    merge (taskboard.gitwire.settle) gives each a free id."""
    from ..core.merging import PENDING_KEY

    problems = []
    for task_id, record in sorted(records.items()):
        parked = record.get(PENDING_KEY)
        for item in parked if isinstance(parked, list) else []:
            uid = item.get("task", {}).get("uid", "?") if isinstance(item, dict) else "?"
            problems.append(
                Problem(
                    file_name(task_id),
                    task_id,
                    "parked-task",
                    f"a merge left a second task #{task_id} (uid {uid}) in {file_name(task_id)}; "
                    "finishing the merge gives it a free id",
                    fixable=True,
                )
            )
    return problems


def _repairs(fixes: set[int], problems: list[Problem]) -> list[Event]:
    """The journal's account of a `check --fix`: one `repaired` event per task rewritten
    (or whose second copy was removed), with the rules its problems broke."""
    events = []
    for task_id in sorted(fixes):
        rules = sorted({p.rule for p in problems if p.fixable and p.task == task_id})
        events.append(Event(task_id, "repaired", **({"rules": rules} if rules else {})))
    return events
