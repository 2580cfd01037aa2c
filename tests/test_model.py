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


# -- JSON without the json package (core.fields, on `_json` alone) ----------------------------

_TEXT = st.text(st.characters(blacklist_categories=()), max_size=8)  # surrogates, controls and all
_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | _TEXT
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=20
)


@given(_VALUES, st.sampled_from([0, 2, 4]), st.booleans(), st.booleans())
def test_dumps_writes_what_json_dumps_writes(value, indent, sort_keys, ascii):
    from taskboard.core.fields import dumps

    wanted = json.dumps(value, indent=indent or None, sort_keys=sort_keys, ensure_ascii=ascii)
    assert dumps(value, indent=indent, sort_keys=sort_keys, ascii=ascii) == wanted


@given(_VALUES.filter(lambda value: "NaN" not in json.dumps(value) and "Infinity" not in json.dumps(value)))
def test_what_dumps_writes_reads_back_as_json_loads_reads_it(value):
    from taskboard.core.fields import dumps, loads

    text = dumps(value, indent=2)
    assert loads(text) == json.loads(text)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 file can hold it, and reading bytes says so
        with pytest.raises(UnicodeDecodeError):
            loads(text.encode("utf-8", "surrogatepass"))
    else:
        assert loads(data) == json.loads(text)


_JSONISH = st.lists(
    st.sampled_from([*' \t\n\r{}[]:,"\\ue0123456789.-+truefalsnNIfiy', "\\u00e9", "\\ud800", "1e999"]), max_size=24
).map("".join)


@given(_JSONISH | _VALUES.map(json.dumps))
def test_any_text_parses_as_the_json_package_with_the_same_hooks_parses_it(text):
    """The strict reading is json.JSONDecoder's C scanner with hooks that refuse NaN,
    Infinity and 1e999: the same values, the same errors in the same words."""
    from taskboard.core import fields

    strict = json.JSONDecoder(parse_constant=fields._refuse_constant, parse_float=fields._finite_float)
    assert _outcome(strict.decode, text) == _outcome(fields.parse_json_value, text)


def _outcome(parse, text):
    try:
        return ("value", json.dumps(parse(text)))
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, str(exc))


def test_dumps_refuses_what_json_cannot_hold_and_nan_when_asked():
    from taskboard.core.fields import dumps

    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps({"a": {1}})
    with pytest.raises(ValueError):
        dumps([float("nan")], finite=True)
    circle: list = []
    circle.append(circle)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(circle)
    assert dumps({1: [True, None]}, indent=2) == json.dumps({1: [True, None]}, indent=2)  # a key written as text


@pytest.mark.parametrize(
    "text, moment",
    [
        ("2026-11-29T18:03:11Z", True),
        ("2026-11-29T18:03:11", False),
        ("2026-11-29 18:03:11Z", False),
        ("2026-11-29T18:03:1xZ", False),
        ("２026-11-29T18:03:11Z", False),  # a digit, but not an ASCII one
        ("2026-11-29T18:03:11Z\n", False),
        ("\ud8002026-11-29T18:03:1Z", False),
        (20261129, False),
    ],
)
def test_a_moment_is_the_records_form_exactly(text, moment):
    from taskboard.core.fields import is_moment

    assert is_moment(text) is moment


@pytest.mark.parametrize("text", ['{"id": 1, "subject": "half', "[1, 2", '{"a" 1}', '"\\x"', "{", '["a\tb"]'])
def test_a_flaw_is_worded_as_json_words_it_in_a_process_that_never_imported_json(text):
    """The C scanner names a flaw with json.decoder's error class, which it only finds
    once something imported it: a fresh process must still get the words, not a
    SystemError."""
    import subprocess
    import sys

    probe = (
        "import sys\nfrom taskboard.core.fields import parse_json_value\n"
        "assert 'json' not in sys.modules\n"
        "try:\n    parse_json_value(sys.argv[1])\nexcept ValueError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, text], capture_output=True, text=True, timeout=60)
    try:
        json.loads(text)
    except ValueError as exc:
        wanted = f"JSONDecodeError {exc}"
    assert (done.stdout.strip(), done.stderr) == (wanted, "")


# -- with-blocks without contextlib (core.scopes) ---------------------------------------------


def _scopes_of(module):
    """The same generator context managers, built by `module`'s contextmanager."""

    @module.contextmanager
    def plain(log):
        log.append("enter")
        try:
            yield "held"
        finally:
            log.append("exit")

    @module.contextmanager
    def catching(log):
        try:
            yield
        except KeyError:
            log.append("caught")

    @module.contextmanager
    def translating(log):
        try:
            yield
        except KeyError as exc:
            raise LookupError("translated") from exc

    @module.contextmanager
    def twice(log):
        yield
        yield

    @module.contextmanager
    def never(log):
        return
        yield

    return {"plain": plain, "catching": catching, "translating": translating, "twice": twice, "never": never}


@pytest.mark.parametrize("scope", ["plain", "catching", "translating", "twice", "never"])
@pytest.mark.parametrize("raised", [None, KeyError("k"), ValueError("v"), StopIteration(), GeneratorExit()])
def test_core_scopes_behave_as_contextlib_does(scope, raised):
    import contextlib

    from taskboard.core import scopes

    def outcome(module):
        log = []
        try:
            with _scopes_of(module)[scope](log) as got, module.suppress(ZeroDivisionError):
                log.append(got)
                if raised is not None:
                    raise raised
                raise ZeroDivisionError("suppressed")
        except BaseException as exc:
            log.append((type(exc).__name__, str(exc)))
        return log

    assert outcome(scopes) == outcome(contextlib)


def test_core_scopes_keep_the_functions_name_and_words():
    from taskboard.core import scopes

    made = _scopes_of(scopes)["plain"]
    assert made.__name__ == "plain" and made.__wrapped__.__name__ == "plain"
