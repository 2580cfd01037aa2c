"""The commands' bodies, without click: each takes the Invocation and plain values,
calls one board operation, and prints its outcome (data on stdout, what happened on
stderr). cli.py parses the command line into these calls; the fast path in app.py
calls the commonest ones directly. No business rules here: those are the board's.
"""

from __future__ import annotations

import os
import sys

from ..core.errors import UsageError
from ..core.fields import priority_of
from ..views.text import json_safe, shown, shown_record, shown_value
from .invocation import Invocation, write

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..core.model import Patch
    from ..core.outcome import Outcome
    from ..ops.query import Listing, Query


class PeopleListing:
    """A listing as the views show it (what render reads of one: records, lookup, damage,
    notes): every text in it made safe (taskboard.text), so no task file can drive the
    terminal or forge a line. Records that need no escaping are the listing's own."""

    def __init__(self, listing: Any):
        self.listing = listing
        self.records = [shown_record(record) for record in listing.records]
        self._by_id = {record["id"]: record for record in self.records}
        self.damaged, self.notes = listing.damaged, listing.notes
        self.progress = listing.progress

    def lookup(self, task_id: int) -> Any:
        found = self._by_id.get(task_id)
        return found if found is not None else self.listing.lookup(task_id)

    def record(self, task_id: int) -> Any:
        found = self._by_id.get(task_id)
        return found if found is not None else shown_record(self.listing.record(task_id))


def for_people(listing: Any) -> Any:
    return PeopleListing(listing)


def _shown_records(records: list | None, people: PeopleListing) -> list | None:
    return None if records is None else [people.record(record["id"]) for record in records]


class _PeopleBoard:
    """A board whose listings are made safe to show, for the watch view (render reads it)."""

    def __init__(self, board: Any):
        self.board = board
        self.store = board.store

    def listing(self, history: bool = True) -> Any:
        return for_people(self.board.listing(history))


def damage(inv: Invocation, listing: Listing) -> None:
    """Name each damaged file on stderr; the command still showed the rest, then exits 6."""
    inv.notes(listing.notes)
    if listing.damaged:
        from ..views.messages import damage_error, error_text

        for exc in listing.damaged[:-1]:
            inv.warn(error_text(exc))
        raise damage_error(listing.damaged)


def init(inv: Invocation, remote: str | None = None) -> int:
    from ..git.run import GitError
    from ..git.wiring import find_repo, wire

    if remote is not None and find_repo(inv.board.store.root) is None:
        raise UsageError("claims through a remote need the board inside a git work tree", "no-git")
    created = inv.board.init()
    root = str(inv.board.store.root)
    try:
        wired = wire(inv.board.store.root)  # None outside a git work tree
    except (GitError, OSError) as exc:
        wired = None
        inv.warn(f"could not wire git for merging the board: {exc}")
    document: dict[str, Any] = {"board": root, "created": created, "git": wired}
    if remote is not None:
        from ..git import claimrefs as remotes

        document["remote"] = {"name": remote, "done": remotes.configure(inv.board.store, remote)}
    if inv.json:
        inv.data(document)
    else:
        write(
            sys.stderr, f"board ready at {shown(root)}" + (f" (created {', '.join(created)})" if created else "") + "\n"
        )
        for line in wired or ():
            write(sys.stderr, f"git: {shown(line)}\n")
        for line in document.get("remote", {}).get("done", ()):
            write(sys.stderr, f"remote: {line}\n")
    return 0


def create(inv: Invocation, subject: str, *given: Any, **fields: Any) -> int:
    """`tasks create`: what the board's create takes (taskboard.ops.board.Board.create)."""
    return inv.show_record(inv.board.create(subject, *given, **fields))


def runtime_facts(inv: Invocation, records: list) -> dict[int, dict]:
    """What the runtime state adds to these tasks for a person (leases, failed attempts,
    claims in other worktrees); nothing when it cannot be read: it never fails a view."""
    return shown_value(inv.board.facts(records), lines=True)  # names and notes: made safe to show


def plan_facts(inv: Invocation, listing: Any, records: list) -> dict[int, dict]:
    """The runtime facts of these tasks and every parent's progress (views.Notes reads both)."""
    from ..views.viewmodel import with_progress

    return with_progress(runtime_facts(inv, records), listing.progress())


def need_json(inv: Invocation, fields: tuple[str, ...] | None) -> None:
    """--fields shapes the JSON records: without --json it is a usage error."""
    if fields is not None and not inv.json:
        raise UsageError("--fields keeps keys of the JSON records; add --json", "fields")


def get(inv: Invocation, task_id: int, fields: tuple[str, ...] | None = None) -> int:
    """The record, or for a person the task with its neighbours; a parent's progress with it."""
    need_json(inv, fields)
    if inv.json:
        from ..core.model import pick

        outcome = inv.board.get(task_id)
        assert outcome.record is not None
        progress = inv.board.progress_of(outcome.record)
        if progress is None:
            inv.data(pick(outcome.record, fields))
        else:
            inv.data(pick({**outcome.record, "progress": _progress_document(progress)}, fields))
    else:
        outcome = inv.board.get(task_id, neighbours=True)
        assert outcome.record is not None
        from ..views.viewmodel import gate_fact

        # the task's recent events: the last few are shown, the last gate run is found among them
        history = inv.board.log(task_id, 50)
        facts = runtime_facts(inv, [outcome.record])
        fact = facts.setdefault(task_id, {})
        fact["events"] = shown_value(history.journaled, lines=True)
        progress = inv.board.listing(history=True).progress().get(task_id)  # a person's view: every child
        if progress is not None:
            fact["progress"] = progress
        gate = gate_fact(history.journaled)
        if gate is not None:
            fact["gate"] = shown_value(gate, lines=True)
        record = shown_record(outcome.record)  # every text made safe to show (taskboard.text)
        neighbours = {key: None if other is None else shown_record(other) for key, other in outcome.neighbours.items()}
        if inv.plain():  # as light as --json: the plain view needs no rich
            from ..views.plain import task_text

            inv.show(task_text(record, neighbours, facts, width=inv.width()))
        else:
            from ..views.render.task import show_task

            show_task(record, neighbours, plain=False, facts=facts)
        inv.report(history)
    inv.report(outcome)  # an interrupted change it finished is news, as for every command
    if outcome.damaged:  # a neighbour's damaged file: shown as such, then named (exit 6), as a listing does
        from ..views.messages import damage_error, error_text

        for exc in outcome.damaged[:-1]:
            inv.warn(error_text(exc))
        raise damage_error(outcome.damaged)
    return 0


def update(
    inv: Invocation,
    task_id: int,
    patch: Patch,
    force: bool = False,
    retry: bool = False,
    gate_timeout: float | None = None,
) -> int:
    return inv.show_record(inv.board.update(task_id, patch, force=force, retry=retry, gate_timeout=gate_timeout))


def delete(inv: Invocation, task_id: int, force: bool = False) -> int:
    return inv.show_record(inv.board.delete(task_id, force=force))


def done(inv: Invocation, task_id: int, note: str = "", force: bool = False, gate_timeout: float | None = None) -> int:
    return inv.show_record(inv.board.done(task_id, note, force=force, gate_timeout=gate_timeout))


def reopen(inv: Invocation, task_id: int, cascade: bool = False, note: str = "") -> int:
    """Reopen a completed task (and with cascade its completed downstream): the record;
    the others reopened are named on stderr."""
    outcome = inv.board.reopen(task_id, cascade, note)
    reopened = [event.task for event in outcome.events if event.what == "reopened" and event.task != task_id]
    if reopened:
        from ..core.model import ids_text

        inv.event("reopened", reopened, f"also reopened {ids_text(reopened)}")
    return inv.show_record(outcome)


def archive(inv: Invocation, days: int = 30, dry_run: bool = False) -> int:
    """`tasks archive`: under --json `{"archived": [ids], "dry_run": bool}`; for people one
    line per task moved (or that would move), and a summary on stderr."""
    from ..views.viewmodel import task_line

    outcome = inv.board.archive(days, dry_run)
    ids = [record["id"] for record in outcome.written]
    if inv.json:
        inv.data({"archived": ids, "dry_run": dry_run})
    else:
        write(sys.stdout, "".join(task_line(shown_record(record)) + "\n" for record in outcome.written))
        verb = "would archive" if dry_run else "archived"
        where = "" if dry_run or not ids else f" (to {inv.board.store.path}/archive/)"
        write(sys.stderr, f"{verb} {len(ids)} task(s){where}\n")
    inv.report(outcome)
    return 0


def restore(inv: Invocation, task_id: int) -> int:
    return inv.show_record(inv.board.restore(task_id))


def release(inv: Invocation, task_id: int, note: str = "", failed: bool = False, force: bool = False) -> int:
    return inv.show_record(inv.board.release(task_id, note, failed=failed, force=force))


def claim(
    inv: Invocation,
    task_id: int | None,
    owner: str | None,
    lease: float | None = None,
    wait: bool = False,
    seconds: float | None = None,
    offline: bool = False,
    fields: tuple[str, ...] | None = None,
) -> int:
    """Take a task; with `wait`, wait for one (at most `seconds`); `lease` else TASKS_LEASE;
    `offline`: claim on this clone only, without winning the remote's claim ref."""
    need_json(inv, fields)
    from ..disk.state import lease_or_env

    lease = lease_or_env(lease)
    board = inv.board.local() if offline else inv.board
    if not os.path.isdir(board.store.path):  # not "the plan is finished": there is no plan here
        from ..core.errors import NotFound
        from ..views.messages import no_board_text

        raise NotFound(no_board_text(board.store.path, reading=False), "no-board")
    name = owner if owner is not None else board.caller
    if wait:
        from ..git.sync import waiter  # the board comes in when the claim refs say work ended elsewhere

        return inv.show_record(board.claim_wait(task_id, name, lease, seconds, catch_up=waiter(inv.warn)), fields)
    return inv.show_record(board.claim(task_id, name, lease), fields)


def renew(inv: Invocation, task_id: int, lease: float | None = None) -> int:
    return inv.show_record(inv.board.renew(task_id, lease))


def import_plan(inv: Invocation, data: bytes) -> int:
    """`tasks import`: the plan's tasks created as one change; `{"created": {key: id}}`."""
    from ..ops.importing import import_plan, parse_plan

    tasks = parse_plan(data)  # a usage error comes before the board is found or locked
    outcome = import_plan(inv.board, tasks)
    _say_imported(inv, outcome, "")
    inv.run_hooks(outcome)
    return 0


def import_claude(inv: Invocation, folder: str) -> int:
    """`tasks import --from claude DIR`: a Claude Code task list taken in as a plan."""
    from ..ops.importing import import_plan, read_claude_list

    outcome = import_plan(inv.board, read_claude_list(folder))
    _say_imported(inv, outcome, f" from the Claude Code task list {folder}")
    inv.run_hooks(outcome)
    return 0


def _say_imported(inv: Invocation, outcome: Outcome, source: str) -> None:
    """What an import created: `{"created": {key: id}}`, or a line a task and a count."""
    from ..ops.importing import created_keys

    created = created_keys(outcome)
    if inv.json:
        inv.data({"created": created})
    else:
        from ..views.viewmodel import task_line

        by_id = {record["id"]: shown_record(record) for record in outcome.written}
        write(sys.stdout, "".join(task_line(by_id[task_id]) + "\n" for task_id in created.values()))
        write(sys.stderr, f"imported {len(created)} task(s){source}\n")
    inv.report(outcome)


def export_claude(inv: Invocation, folder: str) -> int:
    """`tasks export --format claude DIR`: the open work as a Claude Code task list."""
    from ..ops.importing import export_claude

    written = export_claude(inv.board, folder)
    if inv.json:
        inv.data({"exported": [record["id"] for record in written], "folder": folder})
    else:
        write(sys.stderr, f"exported {len(written)} open task(s) to {folder}\n")
    return 0


# The rules of the agent loop, as `tasks prime --full` gives them: (command, what it does).
LOOP = (
    (
        "tasks claim --wait --lease 15m --json",
        "take the next task (waits while work may still come; exit 3: the plan is finished); "
        "the lease lets another agent take it over after 15 min without a change or note from you",
    ),
    ("tasks renew ID", "while you work, well within the lease (any change or note you make renews it too)"),
    ("tasks done ID --note TEXT", "you finished it (exit 7: its gate failed, counted as a failed attempt: release it)"),
    ("tasks release ID --failed --note WHY", "you could not: give it back (3 failures make a task stuck)"),
    ("tasks note ID TEXT", "leave word for whoever comes next (tasks log ID shows what happened)"),
)
# The same rules in the words of a short prime.
SHORT_LOOP = (
    "take the next task (exit 3: the plan is finished; renew within 15 min)",
    "while you work (else another agent takes it over)",
    "you finished it (7: its gate failed; release it)",
    "you could not (3 failures: stuck)",
    "leave word (tasks log ID shows what happened)",
)
PRIME_BUDGET = 2000  # bytes of a short prime: harnesses show about 2 KB of a hook's output
PRIME_SECTION = 5  # tasks of one section a short prime names
PRIME_LINE = 120  # characters of one task line in a short prime


def prime(inv: Invocation, limit: int | None = None, full: bool = False) -> int:
    """`tasks prime`: a short briefing for an agent starting or resuming a session (at
    most PRIME_BUDGET bytes unless `full`)."""
    from ..ops.briefing import DEFAULT_READY, brief

    briefing = brief(inv.board, limit or DEFAULT_READY)
    which = inv.which_board()
    if inv.json:
        extra = {"checkout_board": inv.checkout_board} if which else {}
        if full:
            inv.data(briefing.document() | extra | {"loop": [{"command": c, "does": d} for c, d in LOOP]})
        else:
            inv.data(short_document(briefing, extra))
    else:
        text = briefing_text(briefing) if full else short_briefing(briefing)
        write(sys.stdout, text if which is None else f"{shown(which)}\n{text}")
    damage(inv, briefing.listing)
    return 0


# (tasks per section, characters of a subject or a failure's note) a short prime tries in turn
PRIME_STEPS = ((PRIME_SECTION, PRIME_LINE), (3, 80), (1, 60), (0, 60))


def short_document(briefing: Any, extra: dict) -> dict:
    """`prime --json` within PRIME_BUDGET bytes, as the text is: at most PRIME_SECTION
    tasks of each section (`held_total`, ... say how many there are), and when that is
    still too long fewer, their subjects and failure notes cut (`…` ends a cut text);
    `cut` then says so. `--full` has all of it. Only a board path or names longer than
    the budget can make it longer."""
    from ..views.text import json_text

    loop = [{"command": c, "does": d} for c, d in zip((c for c, _ in LOOP), SHORT_LOOP, strict=True)]
    steps = ((PRIME_SECTION, None), *PRIME_STEPS)
    for section, width in steps:
        document = briefing.document() | extra
        for key in ("held", "reserved", "stuck"):
            document[f"{key}_total"] = len(document[key])
        for key in ("held", "reserved", "ready", "stuck"):
            document[key] = [_cut_item(item, width) for item in document[key][:section]]
        if width is not None:
            document["cut"] = (
                f"tasks of each section: at most {section}; subjects and notes: at most {width} characters; "
                "all of it: tasks prime --full --json"
            )
        document["loop"] = loop
        if len(json_text(document).encode("utf-8")) <= PRIME_BUDGET:
            break
    return document


def _cut_item(item: dict, width: int | None) -> dict:
    """A briefing's task with its subject and last failure's note cut to `width` characters."""
    if width is None:
        return item
    for key in ("subject", "last_failure"):
        text = item.get(key)
        if isinstance(text, str) and len(text) > width:
            item[key] = text[: width - 1] + "…"
    return item


def short_briefing(briefing: Any) -> str:
    """The briefing within PRIME_BUDGET bytes: each section cut to a few tasks, each line
    to PRIME_LINE characters, fewer of both until it fits; `--full` has the rest."""
    for section, line in ((PRIME_SECTION, PRIME_LINE), (3, 80), (1, 60), (0, 60)):
        text = briefing_text(briefing, section, line)
        if len(text.encode("utf-8")) <= PRIME_BUDGET:
            return text
    cut = text.encode("utf-8")[: PRIME_BUDGET - 60].decode("utf-8", "ignore")
    return cut[: cut.rfind("\n") + 1] + "(cut to 2 KB: tasks prime --full shows all)\n"


def briefing_text(briefing: Any, section: int | None = None, width: int | None = None) -> str:
    """The briefing in a few plain lines (no rich: an agent reads it, maybe from a hook);
    with `section`, at most that many tasks of each list, each line at most `width`."""
    from ..ops.claims import describe
    from ..views.viewmodel import summary_of, task_line, when_text

    def line(record: dict, extra: str = "") -> str:
        facts = [shown(fact) for fact in describe(briefing.facts.get(record["id"], {}))]
        due = (record.get("metadata") or {}).get("due")
        if isinstance(due, str) and len(due) == 20:
            facts.append(f"due {when_text(due)}")
        safe = shown_record(record)
        head = task_line({**safe, "subject": ""})
        tail = extra + (" — " + "; ".join(facts) if facts else "")
        subject = safe["subject"]
        room = max(20, width - len(head) - len(tail) - 2) if width is not None else len(subject)
        if len(subject) > room:  # the subject gives way first: the facts are what an agent acts on
            subject = subject[: room - 1] + "…"
        text = f"  {head}{subject}{tail}"
        return (text if width is None or len(text) <= width else text[: width - 1] + "…") + "\n"

    def lines(records: list, extra=None, more_words: bool = True) -> str:
        shown_ = records if section is None else records[:section]
        more = len(records) - len(shown_)
        body = "".join(line(r, extra(r)) if extra else line(r) for r in shown_)
        return body + (f"  … {more} more (tasks prime --full)\n" if more and more_words else "")

    text = f"board {shown(str(briefing.board))}: {summary_of(briefing.counts)}\n"
    if briefing.caller:
        text += f"you are {shown(briefing.caller)}\n"
        text += "you hold:\n" + lines(briefing.held) if briefing.held else "you hold nothing\n"
        if briefing.reserved:
            text += "reserved for you:\n" + lines(briefing.reserved)
    else:
        text += "you have no name: set TASKS_OWNER or pass --as NAME (claims and the journal need one)\n"
    if briefing.ready:
        named = len(briefing.ready) if section is None else min(section, len(briefing.ready))
        more = f"; the first {named}" if briefing.ready_total > named else ""
        text += f"ready for you ({briefing.ready_total}{more}; by priority, then due, then id):\n"
        text += lines(briefing.ready, lambda record: f"  [priority {priority_of(record)}]", more_words=False)
    else:
        text += "nothing is ready for you now\n"
    if briefing.stuck:
        text += "stuck (put one back with: tasks update ID --status pending --retry):\n"
        text += lines(briefing.stuck)
    loop = LOOP if section is None else tuple(zip((command for command, _ in LOOP), SHORT_LOOP, strict=True))
    width_ = max(len(command) for command, _ in loop)
    text += "the loop:\n" + "".join(f"  {command:<{width_}}  {does}\n" for command, does in loop)
    return text


def hook(inv: Invocation, action: str, event: str | None = None, command: str | None = None) -> int:
    """`tasks hook add EVENT CMD | list | remove EVENT [CMD]`: hooks in the clone's git config."""
    from ..git import hooks

    store = inv.board.store
    if action == "add":
        assert event is not None and command is not None
        added = hooks.add(store, event, command)
        if inv.json:
            inv.data(added)
        else:
            write(sys.stderr, f"on {event}: {shown(command)} (kept in this clone's git config)\n")
        return 0
    if action == "remove":
        assert event is not None
        gone = hooks.remove(store, event, command)
        if inv.json:
            inv.data(gone)
        else:
            write(sys.stderr, "".join(f"removed on {h['event']}: {shown(h['command'])}\n" for h in gone))
        return 0
    found = hooks.configured_list(store)
    if inv.json:
        inv.data(found)
    else:
        write(sys.stdout, "".join(f"{h['event']}\t{shown(h['command'])}\n" for h in found))
        if not found:
            write(sys.stderr, "no hooks in this clone (tasks hook add EVENT CMD)\n")
    return 0


def stats(inv: Invocation, since: str | None = None) -> int:
    """`tasks stats`: how work flows, from the journal (taskboard.stats)."""
    import time

    from ..core.stats import flow, parse_since, stats_text

    now = time.time()
    start = None if since is None else parse_since(since, now)
    outcome = inv.board.log()
    found = flow(outcome.journaled, now, start)
    if inv.json:
        inv.data(found)
    elif inv.plain():
        write(sys.stdout, stats_text(shown_value(found)))
    else:
        from ..views.render.stats import show_stats

        show_stats(shown_value(found))
    inv.report(outcome)
    return 0


def explain(inv: Invocation, task_id: int) -> int:
    """`ready --explain ID`: why the task is or is not ready, every reason by name."""
    from ..git.claimrefs import holder_elsewhere
    from ..ops.explain import explain as explained
    from ..ops.explain import explanation_text

    found = explained(inv.board, task_id, holder_elsewhere(inv.board))
    if inv.json:
        inv.data(found)
    else:
        write(sys.stdout, explanation_text(shown_value(found, lines=True)))
    return 0


def list_tasks(inv: Invocation, query: Query, fields: tuple[str, ...] | None = None) -> int:
    """`list` and `ready`: every readable task that matches (at most `limit`, the total
    then on stderr), then the damage, if any; `query`: the filters, checked when made
    (taskboard.ops.query.Query). Open work is read without the history under
    --json and in plain text; the rich views show the whole board, so they read all of it."""
    from ..ops.query import page

    need_json(inv, fields)
    person = not inv.json and not inv.plain()
    history = person or not query.open_only
    listing = inv.board.listing(history=history, archive=query.include_deleted and history)  # --all: the archive too
    chosen, total = page(inv.board.select_ids(listing, query), query.limit)
    if inv.json and fields is not None:
        from ..core.model import pick

        inv.data([pick(listing.record(task_id), fields) for task_id in chosen])
    elif inv.json:
        write(sys.stdout, json_safe(listing.json_array(chosen)) + "\n")  # what inv.data(records) would print
    elif not person:
        from ..core.states import held_back
        from ..views.text import terminal_width
        from ..views.viewmodel import between_phrases, summary_of, task_line, troubles

        records = [listing.record(task_id) for task_id in chosen]
        write(sys.stdout, "".join(task_line(shown_record(record)) + "\n" for record in records))
        with_deleted = any(record["status"] == "deleted" for record in records)
        facts = runtime_facts(inv, listing.open_records)
        summary = summary_of(
            listing.tally(held_back(facts)), len(records), with_deleted, troubles(listing.open_records, facts)
        )
        write(sys.stderr, between_phrases(summary, terminal_width(sys.stderr)) + "\n")
    else:
        from ..views.render.tasklist import show_list

        people = for_people(listing)
        records = [people.record(task_id) for task_id in chosen]
        show_list(records, people, plain=False, facts=plan_facts(inv, listing, listing.records))
    if query.limit is not None and inv.json:
        inv.event("total", total, f"{total} in all")
    damage(inv, listing)
    return 0


def board(
    inv: Invocation,
    svg: str | None = None,
    watch: bool = False,
    owner: str | None = None,
    labels: Iterable[str] = (),
    every: bool = False,
    by_parent: bool = False,
) -> int:
    """The kanban view, only the tasks of `owner` and with all `labels` when given;
    under --json the records by status. `by_parent`: the cards grouped under their parent."""
    if by_parent:
        if watch or svg:
            raise UsageError("--by-parent groups the cards once; it takes neither --watch nor --svg")
        return board_by_parent(inv, owner, tuple(labels))
    if watch and inv.json:
        raise UsageError("--watch redraws the board for people; --json prints it once (poll it to follow changes)")
    if watch and svg:
        raise UsageError("--watch redraws in the terminal and --svg writes one picture; ask for one at a time")
    if svg and not inv.json:
        check_svg_target(svg, inv.board.store.root)
    from ..ops.query import Query

    labels = tuple(labels)
    filtered = owner is not None or bool(labels)

    def select(listing: Listing) -> list | None:
        return inv.board.select(listing, Query(owner=owner, labels=labels)) if filtered else None

    _say_which_board(inv, on_stdout=not inv.json and not watch)
    if inv.json:
        from ..views.viewmodel import status_columns

        listing = inv.board.listing()
        chosen = select(listing)
        inv.data(status_columns(listing.records if chosen is None else chosen))
        damage(inv, listing)
        return 0
    from ..views.render.board import show_board, watch_board

    if watch:
        from ..ops.claims import state_of

        watch_board(
            _PeopleBoard(inv.board),
            plain=inv.plain(),
            select=select,
            every=every,
            facts=lambda listing: plan_facts(inv, listing, listing.records),
            signature=state_of(inv.board.store).signature,
        )
        return 0
    listing = inv.board.listing()
    facts = plan_facts(inv, listing, listing.records)
    people = for_people(listing)
    chosen = _shown_records(select(listing), people)
    show_board(people, plain=inv.plain(), svg=svg, records=chosen, every=every, facts=facts)
    damage(inv, listing)
    return 0


def board_by_parent(inv: Invocation, owner: str | None, labels: tuple) -> int:
    """`board --by-parent`: each parent with its children, then the tasks no plan holds."""
    from ..views.viewmodel import parent_groups

    listing = inv.board.listing()
    from ..ops.query import Query

    chosen = inv.board.select(listing, Query(owner=owner, labels=labels)) if owner is not None or labels else None
    progress = listing.progress()
    if inv.json:
        groups = parent_groups(listing.records if chosen is None else chosen)
        inv.data(
            {
                "groups": [
                    {
                        "parent": parent,
                        "progress": None if parent is None else _progress_document(progress.get(parent["id"])),
                        "children": children,
                    }
                    for parent, children in groups
                ]
            }
        )
    else:
        from ..views.render.groups import show_groups

        people = for_people(listing)
        records = people.records if chosen is None else _shown_records(chosen, people)
        facts = plan_facts(inv, listing, listing.records)
        show_groups(people, parent_groups(records or []), plain=inv.plain(), facts=facts)
    damage(inv, listing)
    return 0


def _progress_document(progress: tuple[int, int] | None) -> dict | None:
    return None if progress is None else {"done": progress[0], "total": progress[1]}


def graph(
    inv: Invocation,
    task_id: int | None = None,
    fmt: str = "text",
    include_deleted: bool = False,
    svg: str | None = None,
) -> int:
    """The dependency graph, or one task's neighbourhood in it, as text, DOT or Mermaid."""
    from ..core import graph as graphs
    from ..views import viewmodel as views

    if svg and not inv.json:
        check_svg_target(svg, inv.board.store.root)
    listing = inv.board.listing(archive=include_deleted)  # --all: the archived tasks too
    if not inv.json:
        listing = for_people(listing)  # every text escaped: the views, DOT and Mermaid show it
    records = [r for r in listing.records if include_deleted or r["status"] != "deleted"]
    if task_id is not None:
        if not any(r["id"] == task_id for r in listing.records):
            inv.board.get(task_id)  # raises the right error: missing or damaged
        records = graphs.neighbourhood(records, task_id)
    edges = graphs.edges(records)
    text = None
    if inv.json:
        inv.data({"nodes": records, "edges": [list(edge) for edge in edges]})
    elif fmt in ("dot", "mermaid") and not svg:  # text for other tools: no rich needed
        text = (views.to_dot if fmt == "dot" else views.to_mermaid)(records, edges, listing.lookup)
        write(sys.stdout, text)
    else:
        from ..views.render.graph import show_graph

        facts = runtime_facts(inv, records)
        text = show_graph(records, edges, listing, fmt=fmt, focus=task_id, plain=inv.plain(), svg=svg, facts=facts)
    if fmt == "mermaid" and text is not None:
        too_big = views.mermaid_warning(text, len(edges))
        if too_big:
            from ..views.messages import mermaid_hint

            inv.warn(f"{too_big}; {mermaid_hint(focused=task_id is not None)}")
    damage(inv, listing)
    return 0


def check_svg_target(path: str, board_root: Any) -> None:
    """Before any output: the picture's folder exists, takes a new file, and is not the
    board's (an SVG written over a task file would damage it). A path that cannot be
    is a usage error (2); one the system will not let us write is named (6)."""
    import os

    from ..core.errors import Corrupt

    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        what = "lies under a file" if os.path.lexists(folder) else "does not exist"
        raise UsageError(f"cannot write the SVG to {path}: the folder {folder} {what}", "svg-path")
    if os.path.isdir(target):
        raise UsageError(f"cannot write the SVG to {path}: it is a folder", "svg-path")
    board = os.path.realpath(board_root)
    for where in (os.path.realpath(folder), os.path.realpath(target)):  # a link into the board counts
        if where == board or where.startswith(board + os.sep):
            raise UsageError(f"cannot write the SVG to {path}: it is inside the board folder {board_root}", "svg-path")
    probe = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}.probe")
    try:  # a file made and removed: the one test that root, ACLs and read-only mounts all answer
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        os.unlink(probe)
        if os.path.lexists(target) and not os.access(target, os.W_OK):
            raise PermissionError(13, "permission denied")
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise Corrupt(f"cannot write the SVG to {path}: {reason}", path, "unwritable") from None


def _say_which_board(inv: Invocation, on_stdout: bool = False) -> None:
    """Name the board used when it is not the current checkout's: a first line for people
    (on stdout for the board view), a `{"board": ...}` line on stderr under --json."""
    which = inv.which_board()
    if which is None:
        return
    if on_stdout:
        write(sys.stdout, shown(which) + "\n")
    else:
        inv.event("board", {"path": inv.board.store.path, "checkout_board": inv.checkout_board}, which)


def check(inv: Invocation, fix: bool = False) -> int:
    """Validate every file and invariant; 0 when sound (after fixing), else 6."""
    from ..git.claimrefs import check_problems as claim_ref_problems
    from ..git.wiring import check_problems, finish_for_check

    _say_which_board(inv)
    found = finish_for_check(inv.board.store) if fix else []  # a merge finished first
    found += inv.board.check(fix=fix)
    found += claim_ref_problems(inv.board, fix=fix)  # claim refs on the remote (taskboard.remote)
    found += check_problems(inv.board.store, fix=fix)  # what git left or lacks
    from ..views.messages import problem_document

    problems = [problem_document(problem) for problem in found]
    ok = all(problem.fixed or getattr(problem, "notice", False) for problem in found)
    if inv.json:
        inv.data({"ok": ok, "problems": problems})
    else:
        from ..views.render.check import show_check

        people = [
            {**problem, "message": shown(problem["message"]), "notice": getattr(found[at], "notice", False)}
            for at, problem in enumerate(problems)
        ]
        show_check(people, ok, plain=inv.plain())
    return 0 if ok else 6


def note(inv: Invocation, task_id: int, text: str) -> int:
    """Journal a note about a task: the entry under --json, else nothing on stdout."""
    outcome = inv.board.note(task_id, text)
    if inv.json:
        inv.data(outcome.journaled[0])
    else:
        write(sys.stderr, f"noted on #{task_id}\n")
    inv.report(outcome)
    return 0


def log(inv: Invocation, task_id: int | None = None, limit: int | None = None) -> int:
    """The journal, oldest first: an array of entries under --json, else one line each."""
    from ..views.messages import entry_text

    outcome = inv.board.log(task_id, limit)
    if inv.json:
        inv.data(outcome.journaled)
    else:
        write(sys.stdout, "".join(entry_text(entry) + "\n" for entry in outcome.journaled))
        if not outcome.journaled:  # a person sees why nothing came, on stderr (stdout stays empty)
            write(sys.stderr, f"no events for #{task_id} in the journal\n" if task_id else "the journal is empty\n")
    inv.report(outcome)
    return 0


def sync(inv: Invocation, remote: str | None) -> int:
    """`tasks sync`: the board meets the remote (taskboard.git.sync), in words."""
    from ..git.sync import sync as meet

    result = meet(inv.board, remote, waiting=lambda: inv.warn("another sync of this clone is running; waiting for it"))
    if inv.json:
        inv.data(result.document())
        for line in result.notes:
            inv.warn(line)
        return 0
    lines = []
    if result.committed:
        lines.append(f"committed the board ({len(result.committed)} commit(s))")
    came = [
        (result.new, "new"),
        (result.completed, "completed elsewhere"),
        (result.unblocked, "ready now"),
    ]
    for ids, words in came:
        if ids:
            lines.append(f"{words}: " + ", ".join(f"#{i}" for i in ids))
    if not any(ids for ids, _ in came):
        lines.append("nothing new came in")
    lines.append(
        f"{'pushed to' if result.pushed else 'in step with'} {result.remote}/{result.branch}"
        + (f" after {result.attempts} attempts" if result.attempts > 1 else "")
    )
    write(sys.stderr, "".join(f"{line}\n" for line in [*lines, *result.notes]))
    return 0
