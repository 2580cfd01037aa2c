"""The record: its encoding, and the fast soundness check agreeing with the full one."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskboard.core.fields import LoneSurrogate, parse_json
from taskboard.core.model import _plainly_sound, decode, encode, new_record, problems_of

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=5,
)
KEYS = [
    "id",
    "subject",
    "description",
    "status",
    "blockedBy",
    "blocks",
    "owner",
    "uid",
    "metadata",
    "createdAt",
    "updatedAt",
]


def sound_record(task_id: int = 7) -> dict:
    record = new_record(task_id, "Write parser", "", "", {}, "2026-11-29T18:03:11Z")
    record["blockedBy"], record["blocks"] = [3], [9, 12]
    return record


@given(
    key=st.sampled_from(KEYS),
    value=JSONISH
    | st.sampled_from(
        [
            0,
            -1,
            True,
            7,
            8,
            "completed",
            "done",
            [1, 2],
            [0],
            [True],
            ["1"],
            "abcdef012345",
            "ABCDEF012345",
            "2026-11-29T18:03:11Z",
            "2026-11-29 18:03:11",
            {},
            {"a": 1},
        ]
    ),
    drop=st.booleans(),
)
def test_the_fast_check_never_passes_a_record_the_full_check_rejects(key, value, drop):
    record = sound_record()
    if drop:
        del record[key]
    else:
        record[key] = value
    if _plainly_sound(record, "task_7.json"):
        assert problems_of(record, "task_7.json") == []


@given(st.integers(1, 10**6), st.lists(st.integers(1, 50), max_size=4), st.sampled_from(["pending", "completed"]))
def test_sound_records_take_the_fast_path(task_id, ids, status):
    record = sound_record(task_id)
    record["blocks"], record["status"] = ids, status
    name = f"task_{task_id}.json"
    assert _plainly_sound(record, name) and problems_of(record, name) == []
    assert decode(encode(record), name) == json.loads(encode(record))


def test_encoding_is_stable_and_keeps_unknown_keys_last():
    record = sound_record()
    record["x-extra"] = [1]
    record["blocks"] = [12, 9, 9]
    data = encode(record)
    assert data == encode(json.loads(data))
    assert list(json.loads(data))[-1] == "x-extra"
    assert json.loads(data)["blocks"] == [9, 12]
    assert data.endswith(b"}\n") and b'\n  "id": 7,' in data


@pytest.mark.parametrize(
    "text, means",
    [
        ('{"s": "\\ud83d\\ude00"}', {"s": "\U0001f600"}),  # a pair of escapes: one character
        ('{"s": "\\\\ud800"}', {"s": "\\ud800"}),  # an escaped backslash: the text of an escape
        ('{"s": "\\ud800"}', None),
        ('{"s": "x\\uDFFF"}', None),
        ('{"s": "\\ude00\\ud83d"}', None),  # a pair the wrong way round: two halves
        ('{"\\udbff": 1}', None),  # in a key too
        ('[["\\ud800"]]', None),
    ],
)
def test_json_with_half_a_character_is_refused_and_a_whole_one_read(text, means):
    if means is None:
        with pytest.raises(LoneSurrogate):
            parse_json(text.encode())
    else:
        assert parse_json(text.encode()) == means
