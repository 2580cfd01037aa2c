"""The README's agent loop, taken from the README itself and run by three and five real
`bash` agents on one imported plan: the loop ends for every agent exactly when the plan
is finished (not while work is only blocked), every task is completed exactly once, a
failed attempt goes back to the board and is finished later, and the board is sound.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from invariants import assert_sound

README = Path(__file__).resolve().parent.parent / "README.md"

# setup → four parts → two joins → release, and two side tasks: most of the time most
# agents have nothing to claim yet and must wait for work that is still coming.
PLAN = {
    "tasks": [
        {"key": "setup", "subject": "Set up", "priority": 0},
        *({"key": f"part{i}", "subject": f"Part {i}", "blockedBy": ["setup"]} for i in range(1, 5)),
        {"key": "join1", "subject": "Join 1 and 2", "blockedBy": ["part1", "part2"], "priority": 1},
        {"key": "join2", "subject": "Join 3 and 4", "blockedBy": ["part3", "part4"]},
        {"key": "release", "subject": "Release", "blockedBy": ["join1", "join2"]},
        {"key": "docs", "subject": "Docs", "priority": 4},
        {"key": "notes", "subject": "Release notes", "blockedBy": ["docs", "join1"]},
    ]
}
FLAKY = "part2"  # its first attempt fails, whoever makes it

# do_the_work for the loop: log the attempt, fail the flaky task once (mkdir is atomic).
WORK = """
do_the_work() {
  local id; id=$(echo "$1" | jq .id)
  echo "$TASKS_OWNER $id" >> "$WORK_LOG"
  if [ "$id" = "$FLAKY_ID" ] && mkdir "$FLAKY_MARK" 2>/dev/null; then return 1; fi
  return 0
}
"""

# Only where jq is missing: the one filter the loop uses (`jq .id`), in Python.
JQ_SHIM = """#!{python}
import json, sys
assert sys.argv[1:] == [".id"], sys.argv
print(json.load(sys.stdin)["id"])
"""


def readme_loop() -> str:
    """The agent loop as the README gives it: the `while … done` lines of its shell block."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- agent-loop: [^>]*-->\s*```sh\n(.*?)```", text, re.S)
    assert block, "the README lost its agent loop"
    lines = block.group(1).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("while "))
    end = next(i for i, line in enumerate(lines) if line.startswith("done"))
    return "\n".join(lines[start : end + 1]) + "\n"


@pytest.mark.parametrize("agents", [3, 5])
def test_the_readme_loop_finishes_a_plan_together(tmp_path, agents):
    board = tmp_path / "board"
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "tasks").exists(), "the tasks command is installed beside this Python"
    path = [str(bin_dir)]
    if shutil.which("jq") is None:
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "jq").write_text(JQ_SHIM.format(python=sys.executable))
        (shim / "jq").chmod(0o755)
        path.append(str(shim))
    env = {**os.environ, "TASKS_DIR": str(board), "PATH": os.pathsep.join([*path, os.environ.get("PATH", "")])}
    env.pop("TASKS_OWNER", None)
    made = subprocess.run(
        ["tasks", "import", "-", "--json"], input=json.dumps(PLAN).encode(), env=env, capture_output=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    ids = json.loads(made.stdout)["created"]
    log = tmp_path / "work.log"
    env |= {"WORK_LOG": str(log), "FLAKY_ID": str(ids[FLAKY]), "FLAKY_MARK": str(tmp_path / "flaky-failed")}
    script = "set -u\n" + WORK + readme_loop()
    procs = [
        subprocess.Popen(
            ["bash", "-c", script],
            env={**env, "TASKS_OWNER": f"agent-{n}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(agents)
    ]
    results = [(proc, *proc.communicate(timeout=300)) for proc in procs]

    for n, (proc, _out, err) in enumerate(results):
        stderr = err.decode()
        assert proc.returncode == 0, (n, proc.returncode, stderr)
        assert "Traceback" not in stderr
        # the loop ended on claim's exit 3, and for the one reason: the plan is finished
        assert f"nothing is left that could come to agent-{n}" in stderr.strip().splitlines()[-1], stderr

    records = assert_sound(board)
    assert sorted(records) == sorted(ids.values())
    assert all(record["status"] == "completed" for record in records.values())
    attempts = [line.split() for line in log.read_text().splitlines()]
    tried = sorted(int(task) for _, task in attempts)
    assert tried == sorted([*ids.values(), ids[FLAKY]])  # each task once, the flaky one twice
    journal = [
        json.loads(line) for shard in (board / "journal").glob("*.jsonl") for line in shard.read_text().splitlines()
    ]
    completed = sorted(entry["task"] for entry in journal if entry["event"] == "completed")
    assert completed == sorted(ids.values())  # each completed exactly once
    failed = [entry for entry in journal if entry["event"] == "failed"]
    assert [entry["task"] for entry in failed] == [ids[FLAKY]] and failed[0]["note"] == "what went wrong"
    finisher = {entry["task"]: entry["actor"] for entry in journal if entry["event"] == "completed"}
    worker = {int(task): owner for owner, task in attempts}  # who made the last attempt
    assert finisher == worker  # the one who completed a task is journaled as such
