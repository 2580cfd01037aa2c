"""A small board simulator for merge tests, sharing no code with taskboard: it applies
the operations of DESIGN.md §2 to plain dicts, so two branches of one board can be grown
from a common ancestor and the merge judged against what each branch did.

Every operation keeps the invariants of §2 (tests/invariants.py checks it), stamps what it
touched with the branch's clock, and gives new tasks fresh random uids.
"""

from __future__ import annotations

import copy
import json
import random

OPEN = ("pending", "in_progress")


def stamp(tick: int) -> str:
    return f"2026-01-01T00:{tick // 60:02d}:{tick % 60:02d}Z"


class Branch:
    """A board (id -> record) and a clock; `apply` runs one random operation."""

    def __init__(self, records: dict[int, dict], rng: random.Random, tick: int = 0):
        self.records = copy.deepcopy(records)
        self.rng = rng
        self.tick = tick

    def fork(self, rng: random.Random) -> Branch:
        return Branch(self.records, rng, self.tick)

    def files(self) -> dict[int, bytes]:
        return {i: encode(r) for i, r in self.records.items()}

    # -- helpers -----------------------------------------------------------------------

    def _now(self) -> str:
        self.tick += self.rng.choice((0, 1, 1, 2))  # equal times happen: ties must be decided too
        return stamp(self.tick)

    def _touch(self, *ids: int) -> None:
        when = self._now()
        for i in ids:
            self.records[i]["updatedAt"] = when

    def _live(self) -> list[int]:
        return sorted(i for i, r in self.records.items() if r["status"] != "deleted")

    def _reaches(self, start: int, goal: int) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo += self.records[node]["blocks"]
        return False

    def _open_blockers(self, i: int) -> list[int]:
        return [b for b in self.records[i]["blockedBy"] if self.records[b]["status"] in OPEN]

    # -- operations --------------------------------------------------------------------

    def create(self) -> None:
        new = max(self.records, default=0) + 1
        when = self._now()
        self.records[new] = {
            "id": new,
            "subject": f"task {new} {self.rng.randrange(1000)}",
            "description": "",
            "status": "pending",
            "blockedBy": [],
            "blocks": [],
            "owner": "",
            "uid": f"{self.rng.getrandbits(48):012x}",
            "metadata": {},
            "createdAt": when,
            "updatedAt": when,
        }
        live = [i for i in self._live() if i != new]
        if live and self.rng.random() < 0.6:
            self.link(self.rng.choice(live), new)

    def link(self, blocker: int, dependent: int) -> None:
        if blocker == dependent or self._reaches(dependent, blocker):
            return
        a, b = self.records[blocker], self.records[dependent]
        if dependent in a["blocks"]:
            return
        a["blocks"] = sorted(a["blocks"] + [dependent])
        touched = [blocker]
        if a["status"] in OPEN:
            b["blockedBy"] = sorted(b["blockedBy"] + [blocker])
            touched.append(dependent)
        self._touch(*touched)

    def unlink(self, blocker: int, dependent: int) -> None:
        a, b = self.records[blocker], self.records[dependent]
        a["blocks"] = [x for x in a["blocks"] if x != dependent]
        b["blockedBy"] = [x for x in b["blockedBy"] if x != blocker]
        self._touch(blocker, dependent)

    def complete(self, i: int) -> None:
        r = self.records[i]
        if r["status"] not in OPEN or self._open_blockers(i):
            return
        r["status"] = "completed"
        touched = [i]
        for dep in r["blocks"]:
            if i in self.records[dep]["blockedBy"]:
                self.records[dep]["blockedBy"].remove(i)
                touched.append(dep)
        self._touch(*touched)

    def reopen(self, i: int) -> None:
        r = self.records[i]
        if r["status"] != "completed":
            return
        r["status"] = "pending"
        touched = [i]
        for dep in r["blocks"]:
            if self.records[dep]["status"] != "deleted" and i not in self.records[dep]["blockedBy"]:
                self.records[dep]["blockedBy"] = sorted(self.records[dep]["blockedBy"] + [i])
                touched.append(dep)
        self._touch(*touched)

    def delete(self, i: int) -> None:
        r = self.records[i]
        touched = [i]
        for j, other in self.records.items():
            if j != i and (i in other["blocks"] or i in other["blockedBy"]):
                other["blocks"] = [x for x in other["blocks"] if x != i]
                other["blockedBy"] = [x for x in other["blockedBy"] if x != i]
                touched.append(j)
        r.update(status="deleted", blocks=[], blockedBy=[])
        self._touch(*touched)

    def edit(self, i: int) -> None:
        r = self.records[i]
        what = self.rng.choice(("subject", "description", "owner", "meta", "meta-remove", "start"))
        if what == "meta":
            r["metadata"] = {**r["metadata"], self.rng.choice("abc"): self.rng.choice([1, "x", True, [1], 1.5])}
        elif what == "meta-remove" and r["metadata"]:
            r["metadata"] = {k: v for k, v in r["metadata"].items() if k != min(r["metadata"])}
        elif what == "start" and r["status"] == "pending" and not self._open_blockers(i):
            r["status"], r["owner"] = "in_progress", self.rng.choice(("alice", "bob"))
        elif what in ("subject", "description", "owner"):
            r[what] = f"{what} {self.rng.randrange(100)}"
        self._touch(i)

    def apply(self) -> None:
        live = self._live()
        roll = self.rng.random()
        if not live or roll < 0.3:
            self.create()
        elif roll < 0.45:
            self.link(self.rng.choice(live), self.rng.choice(live))
        elif roll < 0.55:
            a = self.rng.choice(live)
            if self.records[a]["blocks"]:
                self.unlink(a, self.rng.choice(self.records[a]["blocks"]))
        elif roll < 0.7:
            self.complete(self.rng.choice(live))
        elif roll < 0.75:
            self.reopen(self.rng.choice(live))
        elif roll < 0.82:
            self.delete(self.rng.choice(live))
        else:
            self.edit(self.rng.choice(live))


def encode(record: dict) -> bytes:
    return (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()


def grow(seed: int, base_ops: int, side_ops: tuple[int, int]) -> tuple[dict, dict, dict]:
    """A common ancestor and two branches of it: (base, ours, theirs) as id -> record."""
    rng = random.Random(seed)
    base = Branch({}, rng)
    for _ in range(base_ops):
        base.apply()
    ours, theirs = base.fork(random.Random(seed * 2 + 1)), base.fork(random.Random(seed * 2 + 2))
    for branch, count in zip((ours, theirs), side_ops, strict=True):
        for _ in range(count):
            branch.apply()
    return base.records, ours.records, theirs.records


def by_uid(records: dict[int, dict]) -> dict[str, dict]:
    """The board with ids replaced by uids (edges included): what must match across merges."""
    uid_of = {i: r["uid"] for i, r in records.items()}
    found = {}
    for r in records.values():
        copy_ = dict(r)
        copy_.pop("id")
        copy_["blocks"] = sorted(uid_of.get(i, f"?{i}") for i in r["blocks"])
        copy_["blockedBy"] = sorted(uid_of.get(i, f"?{i}") for i in r["blockedBy"])
        found[r["uid"]] = copy_
    return found
