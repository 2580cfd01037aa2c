"""Hypothesis as the suite runs it (issue 19): the same cases on every run, with or
without CI set, so that a landing never fails on a seed nobody chose; fresh random cases,
many more of them, only under `make fuzz` (--hypothesis-profile fuzz).

Each run is a real pytest process over the probe below, which writes down every case it
is given when PROBE_LOG names a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve()


@given(st.lists(st.integers(), max_size=5), st.text(max_size=5))
@settings(max_examples=examples(40))
def test_probe(numbers, text):
    log = os.environ.get("PROBE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(repr((numbers, text)) + "\n")
    assert sorted(numbers) == sorted(reversed(numbers))


def cases(tmp_path: Path, name: str, *flags: str, ci: bool) -> list[str]:
    log = tmp_path / name
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env.update(PROBE_LOG=str(log), **({"CI": "true"} if ci else {}))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"{HERE}::test_probe", *flags],
        cwd=HERE.parent.parent,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout.decode()[-2000:]
    return log.read_text().splitlines()


def test_the_suite_draws_the_same_cases_every_run_with_or_without_ci(tmp_path):
    first = cases(tmp_path, "a", ci=True)
    assert len(first) >= 10 and len(set(first)) > 10
    assert cases(tmp_path, "b", ci=True) == first
    assert cases(tmp_path, "c", ci=False) == first  # a developer's make test sees what CI sees


def test_make_fuzz_explores_fresh_cases_twenty_times_as_many(tmp_path):
    usual = cases(tmp_path, "usual", ci=True)
    one = cases(tmp_path, "one", "--hypothesis-profile", "fuzz", ci=False)
    two = cases(tmp_path, "two", "--hypothesis-profile", "fuzz", ci=False)
    assert len(one) >= 10 * len(usual) and len(two) >= 10 * len(usual)
    assert set(one) != set(two)  # random: each run explores afresh


def test_make_fuzz_runs_the_hypothesis_tests_in_the_fuzz_profile():
    makefile = (HERE.parent.parent / "Makefile").read_text()
    rule = makefile[makefile.index("\nfuzz:") :].split("\n\n")[0]
    assert "--hypothesis-profile=fuzz" in rule and "-m hypothesis" in rule
