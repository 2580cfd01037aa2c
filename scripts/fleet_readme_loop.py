"""The README's agent loop, verbatim, on three clones of one bare remote (`tasks init
--remote origin`), one agent per clone, with kill -9 inside `sync`, inside `claim` and
inside a git hook; a supervisor restarts a killed agent, as it would any crashed one.
Nobody cleans anything up by hand. Issue 19's "Done when":

    python scripts/fleet_readme_loop.py ROOT [SEED] [RUNS]

Each agent's `do_the_work` appends a line to a file of its own outside the board, commits
it (git's post-commit hook of the clone may kill the agent's whole process group there),
and runs `tasks sync` (which may kill itself at one of its steps:
TASKS_TEST_SYNC_KILL). An agent started with TASKS_TEST_CRASH_AFTER=1 is killed by its
first write, its claim (after the file replacement). At the end every task must be
completed exactly once (the journal, by uid), the three boards must agree once each
clone has synced, `check` must be clean, and nothing of git's or sync's may be left
in the git folders. Prints what it saw; exits 1 when anything is wrong. Too slow for
the suite (minutes on a loaded 2-core machine): run it by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
README = HERE / "README.md"
MARKER = "<!-- agent-loop: tested by tests/test_readme_loop.py -->"
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
HOOK = """#!/bin/sh
# kill -9 inside the hook: the agent's whole process group (git, the shell loop, all)
flag="$(git rev-parse --git-dir)/kill-in-hook"
if [ -f "$flag" ]; then rm -f "$flag"; kill -9 0; fi
"""
WORK = """
do_the_work() {{
  id=$(echo "$1" | jq .id)
  echo "#$id by $TASKS_OWNER" >> "work-$TASKS_OWNER.txt"
  git add "work-$TASKS_OWNER.txt"
  if [ $((RANDOM % 100)) -lt {hook} ]; then touch "$(git rev-parse --git-dir)/kill-in-hook"; fi
  git commit -q -m "work on #$id" >/dev/null 2>&1
  if [ $((RANDOM % 100)) -lt {sync} ]; then
    point=$(echo {points} | tr ' ' '\\n' | shuf -n 1)
    TASKS_TEST_SYNC_KILL=$point tasks sync >/dev/null 2>&1
  fi
  tasks sync >/dev/null 2>&1
  return 0
}}
"""


def readme_loop() -> str:
    text = README.read_text(encoding="utf-8")
    block = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)```", text, re.S)
    assert block, "the README lost its agent loop"
    return block.group(1)


def run(top: Path, env: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["tasks", *args], check=False, cwd=top, env=env, input=stdin, capture_output=True, text=True, timeout=300
    )


def git(top: Path, env: dict, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=top, env=env, capture_output=True, text=True, check=True).stdout


def supervise(name: str, top: Path, env: dict, script: Path, rng: random.Random, log: list, claim_kill: int) -> None:
    """Run the agent until its loop ends by itself (exit 0: claim said 3); restart it after
    any other end, a kill -9 included."""
    for start in range(40):
        extra = {"TASKS_OWNER": name}
        if rng.randrange(100) < claim_kill:
            extra["TASKS_TEST_CRASH_AFTER"] = "1"  # its first write, the claim, is killed
        agent = subprocess.Popen(
            ["bash", str(script)],
            cwd=top,
            env={**env, **extra},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group: a hook's kill -9 0 takes the agent, not us
        )
        try:
            _, err = agent.communicate(timeout=900)
        except subprocess.TimeoutExpired:  # a stalled plan: stop this agent before the verdict reads the boards
            with contextlib.suppress(OSError):
                os.killpg(agent.pid, signal.SIGKILL)
            _, err = agent.communicate()
            log.append((name, "timed out", None, "", err.strip()[-600:]))
            return
        with contextlib.suppress(OSError):
            os.killpg(agent.pid, signal.SIGKILL)  # a renewer left behind by a killed loop
        log.append((name, start, agent.returncode, "crash-after" if len(extra) > 1 else "", err.strip()[-600:]))
        if agent.returncode == 0:
            return
    log.append((name, "gave up", None, "", ""))


def make_env(root: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "HOME": str(root / "home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "TASKS_LEASE": "8s",
        "RENEW_EVERY": "2",
    }
    for name in ("TASKS_OWNER", "TASKS_DIR"):
        env.pop(name, None)
    if shutil.which("jq", path=env["PATH"]) is None:
        shim = root / "shim"
        shim.mkdir()
        (shim / "jq").write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.load(sys.stdin)['id'])\n")
        (shim / "jq").chmod(0o755)
        env["PATH"] = os.pathsep.join([str(shim), env["PATH"]])
    return env


def make_clones(root: Path, env: dict) -> list[Path]:
    """A bare remote, three clones each `init --remote origin`, the plan imported and synced."""
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(root / "remote.git")], check=True, env=env)
    tops = []
    for name in "abc":
        top = root / name
        subprocess.run(
            ["git", "clone", "-q", str(root / "remote.git"), str(top)], check=True, env=env, capture_output=True
        )
        tops.append(top)
    a = tops[0]
    git(a, env, "checkout", "-q", "-b", "main")
    assert run(a, env, "init", "--remote", "origin").returncode == 0
    plan = {"tasks": [{"key": key, "subject": key, "blockedBy": blockers} for key, blockers in PLAN.items()]}
    imported = run(a, env, "import", "-", stdin=json.dumps(plan))
    assert imported.returncode == 0, imported.stderr
    synced = run(a, env, "sync")
    assert synced.returncode == 0, synced.stderr
    for top in tops[1:]:
        git(top, env, "fetch", "-q", "origin")
        git(top, env, "checkout", "-q", "-B", "main", "origin/main")
        assert run(top, env, "init", "--remote", "origin").returncode == 0
    for top in tops:
        hook = top / ".git" / "hooks" / "post-commit.local"  # tasks init's hook runs a .local one first
        hook.write_text(HOOK)
        hook.chmod(0o755)
    return tops


def verdict(tops: list[Path], env: dict, log: list) -> tuple[bool, bool, bool, list[str]]:
    """Boards agree, all completed, each exactly once (the journal, by uid), what was left."""
    boards = []
    for top in tops:
        records = [json.loads(p.read_text()) for p in sorted((top / ".tasks").glob("task_*.json"))]
        boards.append(sorted((r["uid"], r["subject"], r["status"]) for r in records))
    agree = boards[0] == boards[1] == boards[2]
    finished = sorted(s for _u, s, _st in boards[0]) == sorted(PLAN) and all(st == "completed" for *_, st in boards[0])
    completions: dict[str, int] = {}
    for entry in json.loads(run(tops[0], env, "log", "--json").stdout):
        if entry["event"] == "completed":
            key = entry.get("uid") or str(entry["task"])
            completions[key] = completions.get(key, 0) + 1
    once = sorted(completions.values()) == [1] * len(PLAN)
    left = []
    for top in tops:
        checked = json.loads(run(top, env, "check", "--json").stdout)
        status = git(top, env, "status", "--porcelain")
        for name in ("index.lock", "MERGE_HEAD", "tasks-merge.json", "tasks-sync.json", "kill-in-hook"):
            if (top / ".git" / name).exists():
                left.append(f"{top.name}: .git/{name}")
        if not checked["ok"] or status:
            left.append(f"{top.name}: check {checked['ok']} {checked['problems'][:2]} status {status!r}")
    return agree, finished, once, left


def one_run(root: Path, seed: int, kills: dict[str, int]) -> bool:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / "home").mkdir()
    env = make_env(root)
    tops = make_clones(root, env)
    script = root / "agent.sh"
    script.write_text(WORK.format(hook=kills["hook"], sync=kills["sync"], points=" ".join(POINTS)) + readme_loop())
    log: list = []
    began = time.monotonic()
    threads = [
        threading.Thread(
            target=supervise,
            args=(f"agent-{n}", top, env, script, random.Random(seed * 10 + i), log, kills["claim"]),
        )
        for i, (n, top) in enumerate(zip("abc", tops, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - began
    # the agents are done; each clone syncs as a person publishing would (nothing repaired)
    for _ in range(2):
        for top in tops:
            done = run(top, env, "sync")
            if done.returncode != 0:
                log.append((top.name, "final sync", done.returncode, "", done.stderr.strip()[-600:]))
    agree, finished, once, left = verdict(tops, env, log)
    restarts = sum(1 for entry in log if entry[2] not in (0, None) and isinstance(entry[1], int))
    print(
        f"seed {seed}: {took:.0f} s, {restarts} agent restarts (kills), boards agree: {agree}, "
        f"all {len(PLAN)} completed: {finished}, each once: {once}, left behind: {left or 'nothing'}"
    )
    for entry in log:
        if entry[2] != 0 or os.environ.get("VERBOSE"):
            print("   ", entry)
    return agree and finished and once and not left


def main() -> int:
    root = Path(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    kills = {"sync": 40, "claim": 30, "hook": 15}  # percent: per work item, per agent start, per commit
    ok = True
    for n in range(runs):
        ok &= one_run(root / f"run-{seed + n}", seed + n, kills)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
