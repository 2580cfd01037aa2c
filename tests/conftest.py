"""Every test gets a fresh board in tmp_path, and no test touches real state."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from taskboard.__main__ import main

TASKS = [sys.executable, "-m", "taskboard"]

# Hypothesis in two profiles. `repeatable`, the suite's (make test, and CI, which sets CI):
# derandomized, the same cases on every run, so that no landing fails on a seed nobody
# chose. `fuzz` (make fuzz: --hypothesis-profile fuzz): fresh random cases, twenty times
# as many; run it before resolving any merge or model change, and pin what it finds as an
# @example. Wall time is the benchmark's business: neither has a deadline, nor minds slowness.
slow_is_fine = [HealthCheck.too_slow]  # a loaded machine is slow; that is no failure of the code
settings.register_profile(
    "repeatable", derandomize=True, database=None, deadline=None, print_blob=True, suppress_health_check=slow_is_fine
)
settings.register_profile("fuzz", max_examples=2000, deadline=None, print_blob=True, suppress_health_check=slow_is_fine)
settings.load_profile("repeatable")


def examples(count: int) -> int:
    """A test's number of examples, `count` in the suite, scaled as the profile scales its
    default of 100 (twenty times as many under make fuzz)."""
    return max(1, count * settings().max_examples // 100)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for name in ("TASKS_DIR", "TASKS_OWNER", "TASKS_LOCK_TIMEOUT", "NO_COLOR", "FORCE_COLOR", "TASKS_DEBUG", "TERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def board_dir(tmp_path) -> Path:
    return tmp_path / ".tasks"


class Run:
    """The real `tasks` entry point in-process, with stdout and stderr kept apart."""

    def __init__(self, board_dir: Path):
        self.board_dir = board_dir

    def __call__(self, *args: str, input: str | bytes | None = None, env: dict | None = None, expect: int | None = 0):

        runner = CliRunner()
        argv = ["--dir", str(self.board_dir), *args]
        result = runner.invoke(_Entry(), argv, input=input, env=env, catch_exceptions=False)
        if expect is not None:
            assert result.exit_code == expect, (argv, result.exit_code, result.stdout, result.stderr)
        return result

    def json(self, *args: str, **kwargs):
        result = self(*args, "--json", **kwargs)
        return json.loads(result.stdout)

    def record(self, task_id: int) -> dict:
        return json.loads((self.board_dir / f"task_{task_id}.json").read_text())


class _Entry:
    """Adapter so CliRunner drives `main()` (our error handling), not bare click."""

    name = "tasks"

    def main(self, args=None, prog_name=None, standalone_mode=True, **extra):
        code = main(list(args or []))
        raise SystemExit(code)


@pytest.fixture
def run(board_dir) -> Run:
    return Run(board_dir)


@pytest.fixture
def git_identity(monkeypatch, tmp_path) -> None:
    """git as the tests' own committer, with no configuration of the machine's
    (gitboard.git_env), for a test that runs git in this process's environment."""
    from gitboard import git_env

    for key, value in git_env(tmp_path / "home").items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def fleet(tmp_path):
    """A bare remote and the clones wired to it as machines (gitboard.Fleet)."""
    from gitboard import Fleet

    return Fleet(tmp_path)


def after_this_second(moment: float) -> None:
    """Wait until the clock has left the second `moment` falls in. `updatedAt` names a
    second, so a change made now is known to come after `moment` only from then on: the
    condition is the clock itself."""
    later = math.floor(moment) + 1
    while (left := later - time.time()) > 0:
        time.sleep(left)


def tasks_process(
    *args: str, cwd: Path | None = None, env: dict | None = None, input: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """`python -m taskboard ...` as a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*TASKS, *args], cwd=cwd, env=full_env, input=input, capture_output=True, timeout=timeout)
