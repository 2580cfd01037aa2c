"""The pure merge rules (taskboard/core/merging.py): one record, one file as git's driver sees
it, and whole boards grown on two branches by an independent simulator (boardsim.py),
judged by the independent checker (invariants.py) and by what each branch did."""

from __future__ import annotations

import json

import pytest
from boardsim import by_uid, encode, grow
from conftest import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from invariants import graph_problems, record

from taskboard.core.merging import (
    PENDING_KEY,
    Unmergeable,
    merge_boards,
    merge_file,
    merge_record,
    repair,
    settle_pending,
)

STAMPS = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]
VALUES = st.sampled_from(["a", "b", "c"])
META_VALUES = st.sampled_from([1, 1.0, True, "1", [1], None])
FIELDS = ("subject", "description", "status", "owner", "extra")


@st.composite
def versions(draw):
    """A record and two edits of it (each field kept or changed, keys added or removed)."""
    base = {
        "id": 1,
        "subject": draw(VALUES),
        "description": draw(VALUES),
        "status": draw(st.sampled_from(["pending", "in_progress", "completed"])),
        "blockedBy": sorted(draw(st.sets(st.integers(2, 6)))),
        "blocks": sorted(draw(st.sets(st.integers(2, 6)))),
        "owner": draw(VALUES),
        "uid": "0123456789ab",
        "metadata": draw(st.dictionaries(st.sampled_from("xyz"), META_VALUES)),
        "createdAt": STAMPS[0],
        "updatedAt": STAMPS[0],
    }
    if draw(st.booleans()):
        base["extra"] = draw(VALUES)

    def edit():
        side = json.loads(json.dumps(base))
        for key in FIELDS:
            if draw(st.booleans()):
                side[key] = draw(
                    st.sampled_from(["pending", "in_progress", "completed", "deleted"]) if key == "status" else VALUES
                )
        for key in ("blockedBy", "blocks"):
            side[key] = sorted(set(side[key]) - draw(st.sets(st.integers(2, 6))) | draw(st.sets(st.integers(2, 6))))
        meta = side["metadata"]
        for key in draw(st.sets(st.sampled_from("xyz"))):
            if draw(st.booleans()):
                meta.pop(key, None)
            else:
                meta[key] = draw(META_VALUES)
        if side["status"] == "deleted":
            side["blockedBy"], side["blocks"] = [], []
        side["updatedAt"] = draw(st.sampled_from(STAMPS))
        return side

    return base, edit(), edit()


def text(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@given(versions())
def test_merge_record_is_symmetric(case):
    base, ours, theirs = case
    assert text(merge_record(base, ours, theirs)) == text(merge_record(base, theirs, ours))
    assert text(merge_record(None, ours, theirs)) == text(merge_record(None, theirs, ours))


@given(versions())
def test_merge_record_is_idempotent(case):
    base, ours, theirs = case
    assert merge_record(base, ours, ours) == ours
    assert merge_record(base, base, theirs) == theirs
    assert merge_record(base, ours, base) == ours
    merged = merge_record(base, ours, theirs)
    assert merge_record(base, merged, merged) == merged
    assert merge_record(ours, ours, merged) == merged


@given(versions())
def test_merge_record_loses_no_change_made_on_one_side(case):
    base, ours, theirs = case
    merged = merge_record(base, ours, theirs)
    for changed, other in ((ours, theirs), (theirs, ours)):
        for key in FIELDS:
            if key in ("status", "owner"):
                continue  # one field, the claim: below
            if text(changed.get(key)) != text(base.get(key)) and text(other.get(key)) == text(base.get(key)):
                assert text(merged.get(key)) == text(changed.get(key)), key
        claim = lambda record: text([record.get("status"), record.get("owner")])  # noqa: E731
        if claim(changed) != claim(base) and claim(other) == claim(base) and other["status"] != "deleted":
            assert claim(merged) == claim(changed)
        for key in "xyz":
            mine, old = changed["metadata"].get(key, "<absent>"), base["metadata"].get(key, "<absent>")
            if text(mine) != text(old) and text(other["metadata"].get(key, "<absent>")) == text(old):
                assert text(merged["metadata"].get(key, "<absent>")) == text(mine), key
    for key in ("blockedBy", "blocks"):
        if "deleted" in (ours["status"], theirs["status"]):
            assert merged[key] == []
            continue
        added = (set(ours[key]) | set(theirs[key])) - set(base[key])
        removed = set(base[key]) - (set(ours[key]) & set(theirs[key]))
        assert added <= set(merged[key]) and not removed & set(merged[key])
    assert merged["updatedAt"] == max(ours["updatedAt"], theirs["updatedAt"])


def test_merge_record_both_changed_the_later_side_wins():
    base = record(1, "old")
    ours = {**base, "subject": "ours", "updatedAt": "2026-01-01T00:00:05Z"}
    theirs = {**base, "subject": "theirs", "updatedAt": "2026-01-01T00:00:09Z"}
    assert merge_record(base, ours, theirs)["subject"] == "theirs"
    assert merge_record(base, theirs, ours)["subject"] == "theirs"
    # equal times: a rule of the content, not of the side
    tie = {**theirs, "updatedAt": ours["updatedAt"]}
    assert merge_record(base, ours, tie)["subject"] == merge_record(base, tie, ours)["subject"]


def test_metadata_merges_key_by_key_and_unknown_keys_survive():
    base = record(1, metadata={"keep": 1})
    ours = {**base, "metadata": {"keep": 1, "a": 1}, "future": {"x": 1}}
    theirs = {**base, "metadata": {"b": True}}
    merged = merge_record(base, ours, theirs)
    assert merged["metadata"] == {"a": 1, "b": True}
    assert merged["future"] == {"x": 1}


def test_deletion_wins_over_a_change():
    base = record(1, blocks=[2])
    ours = {**base, "status": "deleted", "blocks": []}
    theirs = {**base, "subject": "renamed", "blocks": [2, 3]}
    merged = merge_record(base, ours, theirs)
    assert merged["status"] == "deleted" and merged["blocks"] == [] and merged["subject"] == "renamed"


# -- one file, as git's driver sees it ----------------------------------------------------------


def test_merge_file_keeps_both_tasks_created_at_one_id():
    ours = record(3, "mine", uid="aaaaaaaaaaaa", createdAt="2026-01-01T00:00:05Z")
    theirs = record(3, "other", uid="bbbbbbbbbbbb", createdAt="2026-01-01T00:00:03Z")
    merged = merge_file(b"", encode(ours), encode(theirs), "task_3.json")
    assert merged == merge_file(b"", encode(theirs), encode(ours), "task_3.json").replace(b'"theirs"', b'"ours"')
    parsed = json.loads(merged)
    assert parsed["uid"] == "bbbbbbbbbbbb"  # created first, keeps the id
    assert parsed[PENDING_KEY] == [{"side": "ours", "task": ours}]
    # a second merge over the parked result keeps both, still once each
    again = merge_file(encode(theirs), merged, encode({**theirs, "subject": "edited"}), "task_3.json")
    assert json.loads(again)["subject"] == "edited" and json.loads(again)[PENDING_KEY][0]["task"]["uid"] == ours["uid"]


@pytest.mark.parametrize(
    "damage, words",
    [
        (b"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b\n", "conflict markers"),
        (b'{"id": 3', "not valid JSON"),
        (b"[]", "not an object"),
        (encode(record(4)), "file name says #3"),
        (encode({**record(3), PENDING_KEY: [{"side": "left", "task": {}}]}), PENDING_KEY),
    ],
)
def test_merge_file_refuses_damaged_input(damage, words):
    good = encode(record(3))
    for versions_ in ((good, damage, good), (good, good, damage), (damage, good, good)):
        with pytest.raises(Unmergeable) as failure:
            merge_file(*versions_, "task_3.json")
        assert words in str(failure.value)


# -- whole boards, grown on two branches --------------------------------------------------------

SEEDS = st.integers(0, 10**9)
board_settings = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def merged_files(base: dict, ours: dict, theirs: dict) -> list[dict]:
    """What git leaves when the driver merges each file changed on both sides."""
    found = []
    for task_id in sorted(set(ours) | set(theirs)):
        b, o, t = (encode(side[task_id]) if task_id in side else None for side in (base, ours, theirs))
        if o == t or t is None:
            data = o
        elif o is None or b == o:
            data = t
        elif b == t:
            data = o
        else:
            data = merge_file(b or b"", o, t, f"task_{task_id}.json")
        found.append(json.loads(data))
    return found


def edges(records: dict[int, dict]) -> set[tuple[str, str]]:
    return {(r["uid"], records[d]["uid"]) for r in records.values() for d in r["blocks"]}


@given(SEEDS, st.integers(0, 12), st.integers(0, 10), st.integers(0, 10))
@board_settings
def test_board_merge_is_symmetric_sound_and_loses_nothing(seed, base_ops, ours_ops, theirs_ops):
    base, ours, theirs = grow(seed, base_ops, (ours_ops, theirs_ops))
    merged = merge_boards(base.values(), ours.values(), theirs.values())
    assert merged.records == merge_boards(base.values(), theirs.values(), ours.values()).records
    result = merged.records
    assert [p for p in graph_problems(result) if not p.startswith("cycle")] == []
    uids = [r["uid"] for r in result.values()]
    assert sorted(uids) == sorted({r["uid"] for r in [*ours.values(), *theirs.values()]})
    assert all(task_id == r["id"] for task_id, r in result.items())
    final, old = by_uid(result), by_uid(base)
    for side, other in ((by_uid(ours), by_uid(theirs)), (by_uid(theirs), by_uid(ours))):
        for uid, rec in side.items():
            for key in ("subject", "description", ("status", "owner")):  # status and owner: one claim
                keys = key if isinstance(key, tuple) else (key,)
                mine = [rec[k] for k in keys]
                was = [old[uid][k] for k in keys] if uid in old else None
                if mine != was and (uid not in other or [other[uid][k] for k in keys] == was):
                    if "status" in keys and uid in other and other[uid]["status"] == "deleted":
                        continue
                    assert [final[uid][k] for k in keys] == mine, (uid, key)
    live = {r["uid"] for r in result.values() if r["status"] != "deleted"}
    base_edges, our_edges, their_edges = edges(base), edges(ours), edges(theirs)
    for side_edges, other_edges in ((our_edges, their_edges), (their_edges, our_edges)):
        for blocker, dependent in side_edges - base_edges:
            if blocker in live and dependent in live:
                assert (blocker, dependent) in edges(result)
        for gone in (base_edges - side_edges) & other_edges:
            assert gone not in edges(result)


@given(SEEDS, st.integers(0, 12), st.integers(0, 10), st.integers(0, 10))
@board_settings
def test_board_merge_is_idempotent(seed, base_ops, ours_ops, theirs_ops):
    base, ours, theirs = grow(seed, base_ops, (ours_ops, theirs_ops))
    assert merge_boards(base.values(), ours.values(), ours.values()).records == ours
    assert merge_boards(base.values(), base.values(), theirs.values()).records == theirs
    merged = merge_boards(base.values(), ours.values(), theirs.values()).records
    assert merge_boards(base.values(), merged.values(), merged.values()).records == merged
    assert merge_boards(ours.values(), ours.values(), merged.values()).records == merged


@given(SEEDS, st.integers(0, 12), st.integers(0, 10), st.integers(0, 10))
@example(seed=12, base_ops=8, ours_ops=7, theirs_ops=1)
@example(seed=1392069, base_ops=10, ours_ops=4, theirs_ops=2)
@board_settings
def test_parked_tasks_settle_to_the_exact_merge(seed, base_ops, ours_ops, theirs_ops):
    """Git's file-by-file result, finished without the commits, equals the exact merge
    (ids included), except a completed task's history edge nothing can attribute."""
    base, ours, theirs = grow(seed, base_ops, (ours_ops, theirs_ops))
    exact = merge_boards(base.values(), ours.values(), theirs.values())
    settled = settle_pending(merged_files(base, ours, theirs))
    assert [p for p in graph_problems(exact.records) if not p.startswith("cycle")] == []
    assert sorted(settled.records) == sorted(exact.records)
    assert [p for p in graph_problems(settled.records) if not p.startswith("cycle")] == []
    shared = {i for i in set(ours) & set(theirs) if ours[i]["uid"] != theirs[i]["uid"]}
    completed = [r for side in (base, ours, theirs) for r in side.values() if r["status"] == "completed"]
    if any(set(r["blocks"]) & shared for r in completed):
        return  # a history edge to a shared id: only the commits can say which task it meant
    strip = lambda board: {uid: {**r, "updatedAt": ""} for uid, r in by_uid(board).items()}  # noqa: E731
    assert strip(settled.records) == strip(exact.records)
    assert {r["id"]: r["uid"] for r in settled.records.values()} == {r["id"]: r["uid"] for r in exact.records.values()}


def test_both_branches_create_tasks_edges_follow_by_uid():
    base = {1: record(1), 2: record(2)}
    ours = {
        1: record(1, blocks=[3]),
        2: record(2),
        3: record(3, "ours 3", uid="aaaaaaaaaaa3", blocked_by=[1], blocks=[4], createdAt=STAMPS[2]),
        4: record(4, "ours 4", uid="aaaaaaaaaaa4", blocked_by=[3], createdAt=STAMPS[2]),
    }
    theirs = {
        1: record(1),
        2: record(2, blocks=[3]),
        3: record(3, "theirs 3", uid="bbbbbbbbbbb3", blocked_by=[2], createdAt=STAMPS[1]),
    }
    for merged in (
        merge_boards(base.values(), ours.values(), theirs.values()),
        settle_pending(merged_files(base, ours, theirs)),
    ):
        result = merged.records
        assert graph_problems(result) == []
        assert result[3]["uid"] == "bbbbbbbbbbb3" and result[3]["blockedBy"] == [2]  # created first: keeps #3
        assert result[5]["uid"] == "aaaaaaaaaaa3" and result[5]["blockedBy"] == [1] and result[5]["blocks"] == [4]
        assert result[4]["blockedBy"] == [5] and result[1]["blocks"] == [5]
        assert merged.moved == [("aaaaaaaaaaa3", 3, 5)]


def test_completion_on_one_side_unblocks_the_other_sides_new_dependent():
    base = {1: record(1), 2: record(2)}
    ours = {1: record(1), 2: record(2, status="completed", updatedAt=STAMPS[1])}
    theirs = {
        1: record(1),
        2: record(2, blocks=[3], updatedAt=STAMPS[2]),
        3: record(3, blocked_by=[2], uid="cccccccccccc"),
    }
    result = merge_boards(base.values(), ours.values(), theirs.values()).records
    assert result[2]["status"] == "completed" and result[2]["blocks"] == [3]
    assert result[3]["blockedBy"] == []
    assert graph_problems(result) == []


def test_a_cycle_made_by_the_merge_stays_visible():
    base = {1: record(1), 4: record(4)}
    ours = {1: record(1, blocks=[4]), 4: record(4, blocked_by=[1])}
    theirs = {1: record(1, blocked_by=[4]), 4: record(4, blocks=[1])}
    merged = merge_boards(base.values(), ours.values(), theirs.values())
    assert merged.records[1]["blocks"] == [4] and merged.records[1]["blockedBy"] == [4]
    assert any("cycle #1 → #4 → #1" in note for note in merged.notes)


def test_repair_restores_what_check_fix_would():
    board = {1: record(1, blocks=[2]), 2: record(2), 3: record(3, status="completed"), 4: record(4, blocked_by=[3, 9])}
    fixed, _notes = repair(board)
    assert fixed[2]["blockedBy"] == [1] and fixed[3]["blocks"] == [4] and fixed[4]["blockedBy"] == []
    assert graph_problems(fixed) == []


def test_a_task_moved_on_one_side_and_changed_on_the_other():
    """Another clone already finished a merge and moved c1's #2 to #3; this clone changed
    that task at #2 and created a #3 blocked by it. Git's file-by-file result holds the
    task in two files; the exact merge follows it by uid, and settling without the commits
    still keeps every task once, sound."""
    moved = record(2, "c1 task 0", uid="c6933ecaac08", blocked_by=[1])
    base = {1: record(1, blocks=[2]), 2: moved}
    ours = {
        1: record(1, blocks=[2, 3]),
        2: record(2, "c2 task 0", uid="8994532aec87", blocked_by=[1]),
        3: {**moved, "id": 3},
    }
    theirs = {
        1: record(1, blocks=[2]),
        2: {**moved, "blocks": [3], "updatedAt": STAMPS[2]},
        3: record(3, "c1 task 1", uid="aaaaaaaaaaa1", blocked_by=[2], createdAt=STAMPS[2]),
    }
    exact = merge_boards(base.values(), ours.values(), theirs.values()).records
    assert graph_problems(exact) == []
    names = {r["subject"]: r for r in exact.values()}
    assert names["c1 task 0"]["id"] == 3 and names["c1 task 0"]["blocks"] == [names["c1 task 1"]["id"]]
    assert names["c1 task 1"]["blockedBy"] == [3] and names["c2 task 0"]["id"] == 2
    settled = settle_pending(merged_files(base, ours, theirs))
    assert [p for p in graph_problems(settled.records) if not p.startswith("cycle")] == []
    assert sorted(r["uid"] for r in settled.records.values()) == sorted(r["uid"] for r in exact.values())


def test_status_and_owner_merge_as_one_claim():
    """A release on one side and a takeover on the other: the later claim whole, never
    "pending, owned by the taker" (a reservation nobody made)."""
    base = {"id": 4, "subject": "s", "status": "in_progress", "owner": "amy", "updatedAt": "2026-01-01T00:00:00Z"}
    released = {**base, "status": "pending", "owner": "", "updatedAt": "2026-01-01T00:01:00Z"}
    taken = {**base, "owner": "bob", "updatedAt": "2026-01-01T00:02:00Z"}
    for ours, theirs in ((released, taken), (taken, released)):
        merged = merge_record(base, ours, theirs)
        assert (merged["status"], merged["owner"]) == ("in_progress", "bob")
    earlier = {**taken, "updatedAt": "2026-01-01T00:00:30Z"}
    merged = merge_record(base, released, earlier)
    assert (merged["status"], merged["owner"]) == ("pending", "")
    # a field of the claim changed on one side only still comes through with its partner
    done = {**base, "status": "completed", "updatedAt": "2026-01-01T00:03:00Z"}
    renamed = {**base, "subject": "t", "updatedAt": "2026-01-01T00:04:00Z"}
    merged = merge_record(base, done, renamed)
    assert (merged["status"], merged["owner"], merged["subject"]) == ("completed", "amy", "t")
