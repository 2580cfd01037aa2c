"""The README's agent loop on three clones of one bare remote, with kill -9 inside `sync`
(at each of its steps) and inside `claim` (after its first file replacement), chosen by a
seeded random generator: `python tests/fleetloop.py ROOT [SEED]`. Each agent is a real
shell-like loop of real `tasks` processes; a killed command is simply run again, as a
supervisor restarting an agent would, with no hand clean-up. At the end every clone
syncs until all agree, and the script prints what it saw and exits non-zero when a task
was not finished exactly once or a clone was left jammed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

TASKS = [sys.executable, "-m", "taskboard"]
POINTS = ["committed", "merged", "pushed", "marked", "board", "head", "index-locked"]
PLAN = {  # key: blockers
    "setup": [],
    "lexer": ["setup"],
    "parser": ["lexer"],
    "checker": ["parser"],
    "docs": [],
    "cli": ["setup"],
    "tests": ["parser", "cli"],
    "bench": ["checker"],
    "release": ["tests", "bench", "docs"],
    "site": ["docs"],
    "ci": ["setup"],
    "notes": ["release"],
}


def run(top: Path, env: dict, *args: str, extra: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TASKS, *args], cwd=top, env={**env, **(extra or {})}, capture_output=True, text=True, timeout=300
    )


def git(top: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=top, env=env, capture_output=True, text=True, check=True)


def agent(name: str, top: Path, env: dict, rng: random.Random, log: list) -> None:
    owner = {"TASKS_OWNER": name}
    while True:
        if rng.random() < 0.4:  # a sync killed at one of its steps
            point = rng.choice(POINTS)
            done = run(top, env, "sync", extra={"TASKS_TEST_SYNC_KILL": point})
            log.append((name, f"sync killed at {point}", done.returncode))
        done = run(top, env, "sync")
        log.append((name, "sync", done.returncode, done.stderr.strip()[-200:] if done.returncode else ""))
        held = json.loads(run(top, env, "list", "--owner", name, "--status", "in_progress", "--json").stdout)
        if held:  # a restarted agent resumes what it holds (`tasks prime` tells it)
            task = held[0]["id"]
            done = run(top, env, "done", str(task), extra=owner)
            log.append((name, f"done #{task} (resumed)", done.returncode, done.stderr.strip()[-200:]))
            continue
        extra = {**owner, **({"TASKS_TEST_CRASH_AFTER": "1"} if rng.random() < 0.25 else {})}
        claim = run(top, env, "claim", "--wait", "20", "--lease", "120s", "--json", extra=extra)
        if claim.returncode == -9:
            log.append((name, "claim killed", -9))
            continue  # a supervisor starts the agent again: it claims again what it holds
        if claim.returncode == 3:
            log.append((name, "nothing left", 3, claim.stderr.strip()[-200:]))
            return
        if claim.returncode != 0:
            log.append((name, "claim failed", claim.returncode, claim.stderr.strip()[-300:]))
            continue
        task = json.loads(claim.stdout)["id"]
        done = run(top, env, "done", str(task), extra=owner)
        log.append((name, f"done #{task}", done.returncode, done.stderr.strip()[-200:] if done.returncode else ""))


def main(root: Path, seed: int) -> int:
    root.mkdir(parents=True)
    home = root / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "init", "-q", "--bare", str(root / "remote.git")], check=True, env=env)
    tops = []
    for name in "abc":
        top = root / name
        subprocess.run(
            ["git", "clone", "-q", str(root / "remote.git"), str(top)], check=True, env=env, capture_output=True
        )
        tops.append(top)
    a = tops[0]
    run(a, env, "init", "--remote", "origin")
    plan = {"tasks": [{"key": key, "subject": key, "blockedBy": blockers} for key, blockers in PLAN.items()]}
    imported = subprocess.run(
        [*TASKS, "import", "-"], cwd=a, env=env, input=json.dumps(plan), text=True, capture_output=True
    )
    assert imported.returncode == 0, imported.stderr
    assert run(a, env, "sync").returncode == 0
    for top in tops[1:]:
        git(top, env, "pull", "-q")
        assert run(top, env, "init", "--remote", "origin").returncode == 0
    log: list = []
    threads = [
        threading.Thread(target=agent, args=(f"agent-{n}", top, env, random.Random(seed * 10 + i), log))
        for i, (n, top) in enumerate(zip("abc", tops, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for _ in range(2):
        for top in tops:
            done = run(top, env, "sync")
            assert done.returncode == 0, done.stderr
    boards = []
    for top in tops:
        records = [json.loads(p.read_text()) for p in sorted((top / ".tasks").glob("task_*.json"))]
        boards.append(sorted((r["uid"], r["subject"], r["status"]) for r in records))
    ok = boards[0] == boards[1] == boards[2]
    subjects = [subject for _uid, subject, _status in boards[0]]
    ok &= sorted(subjects) == sorted(PLAN) and all(status == "completed" for *_, status in boards[0])
    completions: dict = {}
    entries = json.loads(run(a, env, "log", "--json").stdout)
    for entry in entries:
        if entry["event"] == "completed":
            completions[entry["task"]] = completions.get(entry["task"], 0) + 1
    once = sorted(completions.values()) == [1] * len(PLAN)
    leftovers = []
    for top in tops:
        checked = json.loads(run(top, env, "check", "--json").stdout)
        status = git(top, env, "status", "--porcelain").stdout
        for name in ("index.lock", "MERGE_HEAD", "tasks-merge.json", "tasks-sync.json"):
            if (top / ".git" / name).exists():
                leftovers.append(f"{top.name}: .git/{name}")
        if not checked["ok"] or status:
            leftovers.append(f"{top.name}: check {checked['ok']} status {status!r}")
    kills = sum(1 for entry in log if "killed" in entry[1])
    print(f"seed {seed}: {len(log)} commands, {kills} kills, boards agree: {ok}, each completed once: {once}")
    print(f"completions by task: {sorted(completions.items())}")
    print(f"left behind: {leftovers or 'nothing'}")
    for entry in log:
        if os.environ.get("VERBOSE") or entry[2] not in (0, -9):
            print("  ", entry)
    return 0 if ok and once and not leftovers else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1))
