"""A form sent from a page, turned into the change the command line makes: the same
Board operation, under the same lock, journaled with the page user's name.

Every form about a task carries the version of the task its page showed
(versions.version_of). The version is compared under the board lock, just before the
change: a task that changed meanwhile refuses the form and says what changed
(nothing is written). Completing a task whose gate must run compares first, then lets
the gate run outside the lock as `tasks done` does (the gate's own check refuses a
task that changed while it ran).
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from ..core.errors import Refused, UsageError
from ..core.model import REMOVE, Patch, parse_id, parse_priority
from ..views.messages import outcome_events
from ..views.text import shown
from .versions import version_of

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import Any

    from ..core.fields import Record
    from ..core.outcome import Outcome
    from ..ops.board import Board
    from .versions import Shown

NAME_NEEDED = "tell the board who you are first (your name, at the top of the page): changes are journaled with it"


class Done:
    """What an action did: the words for the page, and the task it concerns."""

    def __init__(self, message: str, task: int | None = None):
        self.message, self.task = message, task


def run(board: Board, action: str, task_id: int | None, form: Mapping[str, str], shown_before: Shown) -> Done:
    """Run one action for the page user (board.caller); raises the core's TaskError."""
    if not board.caller:
        raise UsageError(NAME_NEEDED, "name-needed")
    if action == "create":
        return _create(board, form)
    assert task_id is not None
    handler = ACTIONS.get(action)
    if handler is None:
        raise UsageError(
            f"there is no action {shown(action[:40])!r}; the actions are {', '.join(['create', *ACTIONS])}"
        )
    version = form.get("version", "")
    if action == "complete":  # a gate may run for minutes: compare, then complete as `tasks done` does
        with _unchanged(board, task_id, version, shown_before, board.store.reading):
            pass
        return handler(board, task_id, form)
    with _unchanged(board, task_id, version, shown_before):
        return handler(board, task_id, form)


@contextmanager
def _unchanged(board: Board, task_id: int, version: str, shown_before: Shown, lock: Any = None) -> Iterator[None]:
    """Hold the board lock (`lock`: the store's writing, else its reading); refuse when the
    task is no longer the version the page showed."""
    if not version:
        raise UsageError("the form does not say which version of the task it was sent from; reload the page")
    with (lock or board.store.writing)():
        current = board.store.read(task_id)
        if version_of(current) != version:
            raise Refused(changed_text(task_id, shown_before.get(version), current), "stale", task=task_id)
        yield


_FIELDS = (
    ("subject", "subject"),
    ("description", "description"),
    ("status", "status"),
    ("owner", "owner"),
    ("blockedBy", "blocked by"),
    ("blocks", "blocks"),
)


def changed_text(task_id: int, before: Record | None, now: Record) -> str:
    """`#7 changed since your page showed it: status pending → in_progress, owner "" → "bob";
    nothing was written` (what changed, when the page's version is still known)."""
    head = f"#{task_id} changed since your page showed it"
    tail = "nothing was written; the page shows it as it is now: look, then send again"
    if before is None:
        return (
            f"{head} (now {now['status']}, owner {_value(now['owner'])}, updated {now.get('updatedAt', '?')}); {tail}"
        )
    parts = []
    for key, name in _FIELDS:
        if before.get(key) != now.get(key):
            if key in ("subject", "description") and len(str(before.get(key))) + len(str(now.get(key))) > 120:
                parts.append(f"{name} edited")
            else:
                parts.append(f"{name} {_value(before.get(key))} → {_value(now.get(key))}")
    old_meta, new_meta = before.get("metadata") or {}, now.get("metadata") or {}
    for key in sorted(set(old_meta) | set(new_meta)):
        if old_meta.get(key) != new_meta.get(key):
            parts.append(f"{shown(str(key))} {_value(old_meta.get(key, '-'))} → {_value(new_meta.get(key, '-'))}")
    return f"{head}: {'; '.join(parts) or 'rewritten'}; {tail}"


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"#{item}" if isinstance(item, int) else shown(str(item)) for item in value) + "]"
    if isinstance(value, str):
        return f'"{shown(value)}"'
    return shown(str(value))


def _said(outcome: Outcome, first: str) -> str:
    """The action's words, then what the command line would say on stderr (unblocked #9...)."""
    return "; ".join([first] + [human for _key, _value, human in outcome_events(outcome)])


# -- the form fields ---------------------------------------------------------------------


def _ids(text: str, what: str) -> list[int]:
    found = []
    for part in re.split(r"[\s,]+", text.strip()):
        if part:
            try:
                found.append(parse_id(part))
            except UsageError:
                raise UsageError(f"{what}: {shown(part[:40])!r} is not a task id (7 or #7)") from None
    return found


def _labels(text: str) -> list[str]:
    return sorted({label.strip() for label in text.split(",") if label.strip()})


def _priority(text: str) -> int | None:
    return parse_priority(text.strip()) if text.strip() else None


def _text(form: Mapping[str, str], key: str) -> str:
    """A text field as typed; browsers send line ends as CRLF, the board keeps LF."""
    return form.get(key, "").replace("\r\n", "\n")


# -- the actions --------------------------------------------------------------------------


def _create(board: Board, form: Mapping[str, str]) -> Done:
    subject = _text(form, "subject").strip()
    blockers = _ids(form.get("blocked_by", ""), "blocked by")
    outcome = board.create(
        subject,
        _text(form, "description"),
        blockers,
        priority=_priority(form.get("priority", "")),
        labels=_labels(form.get("labels", "")) or None,
    )
    assert outcome.record is not None
    return Done(_said(outcome, f"created #{outcome.record['id']}"), outcome.record["id"])


def _edit(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    record = board.store.read(task_id)
    labels = set(_labels(form.get("labels", "")))
    had = {label for label in (record.get("metadata") or {}).get("labels") or [] if isinstance(label, str)}
    priority = _priority(form.get("priority", ""))
    metadata = {"priority": REMOVE} if priority is None and "priority" in (record.get("metadata") or {}) else None
    patch = Patch(
        subject=_text(form, "subject").strip() if "subject" in form else None,
        description=_text(form, "description") if "description" in form else None,
        priority=priority,
        metadata=metadata,
        add_labels=sorted(labels - had),
        remove_labels=sorted(had - labels),
    )
    outcome = board.update(task_id, patch)
    return Done(_said(outcome, f"saved #{task_id}" if outcome.written else f"#{task_id}: nothing to change"), task_id)


def _link(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    relation = form.get("relation", "blocked_by")
    others = _ids(form.get("other", ""), "the other task")
    if not others:
        raise UsageError("name the other task (its id)")
    if relation == "blocked_by":
        outcome = board.update(task_id, Patch(add_blocked_by=others))
        first = f"#{task_id} now waits on " + ", ".join(f"#{other}" for other in others)
    elif relation == "blocks":
        outcome = board.update(task_id, Patch(add_blocks=others))
        first = ", ".join(f"#{other}" for other in others) + f" now wait on #{task_id}"
    else:
        raise UsageError(f"relation must be blocked_by or blocks, not {shown(relation[:40])!r}")
    return Done(_said(outcome, first), task_id)


def _unlink(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    blockers, dependents = _ids(form.get("blocker", ""), "blocker"), _ids(form.get("dependent", ""), "dependent")
    if not blockers and not dependents:
        raise UsageError("name the dependency to remove")
    outcome = board.update(task_id, Patch(remove_blocked_by=blockers, remove_blocks=dependents))
    gone = [f"#{b} → #{task_id}" for b in blockers] + [f"#{task_id} → #{d}" for d in dependents]
    return Done(_said(outcome, "removed " + ", ".join(gone)), task_id)


def _claim(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    outcome = board.claim(task_id, board.caller)
    return Done(_said(outcome, f"{shown(board.caller)} claimed #{task_id}"), task_id)


def _release(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    failed = form.get("failed") == "on"
    outcome = board.release(task_id, _text(form, "note").strip(), failed=failed)
    return Done(_said(outcome, f"released #{task_id}" + (" as failed" if failed else "")), task_id)


def _complete(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    outcome = board.done(task_id, _text(form, "note").strip())
    gate = any(entry.get("gate") for entry in outcome.journaled)
    return Done(_said(outcome, f"completed #{task_id}" + ("; its gate passed" if gate else "")), task_id)


def _reopen(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    outcome = board.reopen(task_id, form.get("cascade") == "on", _text(form, "note").strip())
    others = sorted({event.task for event in outcome.events if event.what == "reopened" and event.task != task_id})
    also = f" (and {', '.join(f'#{other}' for other in others)})" if others else ""
    return Done(_said(outcome, f"reopened #{task_id}{also}"), task_id)


def _note(board: Board, task_id: int, form: Mapping[str, str]) -> Done:
    text = _text(form, "text").strip()
    if not text:
        raise UsageError("the note is empty; write something to journal")
    outcome = board.note(task_id, text)
    return Done(_said(outcome, f"noted on #{task_id}"), task_id)


ACTIONS: dict[str, Callable[[Board, int, Mapping[str, str]], Done]] = {
    "edit": _edit,
    "link": _link,
    "unlink": _unlink,
    "claim": _claim,
    "release": _release,
    "complete": _complete,
    "reopen": _reopen,
    "note": _note,
}
