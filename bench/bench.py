"""`make bench`: the installed `tasks` against the bare interpreter, in one run.

Builds boards of 1 000 and 10 000 tasks by writing files in the DESIGN.md format
(through `taskboard.model.encode`, so the bytes are the real ones), then times
the venv's `tasks` console script as real processes. Every figure is the median
of several runs, printed beside the median start-up of `python -c pass` of the
same venv, measured interleaved with it so that load from other work on the
machine falls on both alike.

    .venv/bin/python bench/bench.py [--runs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
PYTHON = str(VENV_BIN / "python")
TASKS = str(VENV_BIN / "tasks")
HUB_DEPENDENTS = 100
STAMP = "2026-11-29T18:03:11Z"


# -- building boards ------------------------------------------------------------------


def build_board(folder: Path, size: int, seed: int = 7) -> int:
    """A board of `size` tasks with a realistic graph and one pending hub task with
    HUB_DEPENDENTS pending dependents; returns the hub's id.

    Edges always run from a lower id to a higher one (no cycle). About half the
    tasks are completed, a tenth in progress, a few deleted, the rest pending;
    each task waits on 0-3 recent tasks. The invariants of DESIGN.md §2 hold:
    a completed blocker keeps its `blocks` as history but is in no `blockedBy`."""
    from taskboard.model import encode

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    hub = size // 2
    hub_dependents = set(range(hub + 1, hub + 1 + HUB_DEPENDENTS))
    records: dict[int, dict] = {}
    for task_id in range(1, size + 1):
        if task_id == hub or task_id in hub_dependents:
            status = "pending"
        elif task_id < size * 0.6:
            status = rng.choices(["completed", "pending", "in_progress", "deleted"], [70, 18, 8, 4])[0]
        else:
            status = rng.choices(["completed", "pending", "in_progress", "deleted"], [10, 75, 12, 3])[0]
        records[task_id] = {
            "id": task_id,
            "subject": f"Task {task_id}: {rng.choice(['write', 'review', 'test', 'ship'])} the "
            f"{rng.choice(['parser', 'store', 'cli', 'docs', 'graph'])}",
            "description": "Some words about the work.\nA second line." if rng.random() < 0.5 else "",
            "status": status,
            "blockedBy": [],
            "blocks": [],
            "owner": rng.choice(["alice", "bob", "carol"]) if status == "in_progress" else "",
            "uid": f"{rng.getrandbits(48):012x}",
            "metadata": {"priority": rng.randint(1, 4)} if rng.random() < 0.3 else {},
            "createdAt": STAMP,
            "updatedAt": STAMP,
        }

    def link(blocker: int, dependent: int) -> None:
        a, b = records[blocker], records[dependent]
        if "deleted" in (a["status"], b["status"]):
            return
        a["blocks"].append(dependent)
        if a["status"] != "completed":
            b["blockedBy"].append(blocker)

    for task_id in range(2, size + 1):
        if task_id == hub:
            continue
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            blocker = rng.randint(max(1, task_id - 50), task_id - 1)
            if blocker != hub:
                link(blocker, task_id)
    for dependent in hub_dependents:
        link(hub, dependent)
    for record in records.values():
        record["blocks"] = sorted(set(record["blocks"]))
        record["blockedBy"] = sorted(set(record["blockedBy"]))
        (folder / f"task_{record['id']}.json").write_bytes(encode(record))
    return hub


# -- timing processes --------------------------------------------------------------------


def spawn(argv: list[str], env: dict) -> tuple[float, int, int]:
    """Run one process with stdout and stderr to /dev/null: (seconds, exit code, peak RSS in bytes)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    return elapsed, os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


def environment(board: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKS_")}
    env["TASKS_DIR"] = str(board)
    return env


class Bench:
    def __init__(self, runs: int):
        self.runs = runs
        self.rows: list[dict] = []
        self.baselines: list[float] = []

    def bare(self) -> float:
        seconds, _, _ = spawn([PYTHON, "-c", "pass"], dict(os.environ))
        self.baselines.append(seconds)
        return seconds

    def measure(self, name: str, board: Path, args_of, runs: int | None = None) -> dict:
        """Median of `runs` runs of `tasks ARGS`, each paired with a bare start-up."""
        return self.measure_together([(name, board, args_of)], runs)[0]

    def measure_together(self, cases: list, runs: int | None = None) -> list[dict]:
        """Like `measure` for several (name, board, args_of) cases whose runs alternate
        round by round, so that a growth ratio compares runs made under the same load."""
        samples = [{"times": [], "peaks": []} for _ in cases]
        bares = []
        for attempt in range(runs or self.runs):
            bares.append(self.bare())
            pairs = list(zip(cases, samples, strict=True))
            # the order flips every round: a fsync may wait for whatever the machine wrote before it
            for (name, board, args_of), sample in pairs if attempt % 2 == 0 else pairs[::-1]:
                seconds, code, peak = spawn([TASKS, *args_of(attempt)], environment(board))
                if code != 0:
                    raise SystemExit(f"{name}: `tasks {' '.join(args_of(attempt))}` exited {code}")
                sample["times"].append(seconds)
                sample["peaks"].append(peak)
        rows = []
        for (name, _, _), sample in zip(cases, samples, strict=True):
            row = {
                "name": name,
                "median": statistics.median(sample["times"]),
                "bare": statistics.median(bares),
                "peak": max(sample["peaks"]),
                "runs": len(sample["times"]),
            }
            row["ratio"] = row["median"] / row["bare"]
            self.rows.append(row)
            rows.append(row)
            print(
                f"  {name:<36} {row['median'] * 1000:8.1f} ms  {row['ratio']:5.2f}×  "
                f"(bare {row['bare'] * 1000:.1f} ms, n={row['runs']})",
                flush=True,
            )
        return rows


def fixed(*args: str):
    return lambda attempt: list(args)


def taskwarrior(root: Path, runs: int) -> list[tuple[str, float, float]]:
    """The same operations through Taskwarrior, when it is installed: boards of 1 000 and
    10 000 pending tasks (imported in one process each) with a hub of HUB_DEPENDENTS."""
    task = shutil.which("task")
    if not task:
        return []
    results = []
    for size in (1000, 10000):
        data = root / f"taskwarrior{size}"
        data.mkdir()
        rc = root / f"taskrc{size}"
        rc.write_text(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\ngc=off\n")
        env = {**os.environ, "TASKRC": str(rc), "TASKDATA": str(data)}
        hub = size // 2
        tasks = [
            {
                "uuid": f"00000000-0000-4000-8000-{i:012x}",
                "description": f"Task {i}",
                "status": "pending",
                "entry": "20261129T180311Z",
            }
            for i in range(1, size + 1)
        ]
        for dependent in tasks[hub : hub + HUB_DEPENDENTS]:
            dependent["depends"] = [tasks[hub - 1]["uuid"]]
        (root / f"tw{size}.json").write_text(json.dumps(tasks))
        spawn([task, "import", str(root / f"tw{size}.json")], env)
        hub_uuid = tasks[hub - 1]["uuid"]
        label = "1k" if size == 1000 else "10k"
        operations = [(f"add ({label})", lambda attempt: ["add", "bench task"])]
        if size == 10000:
            operations += [
                ("get: ID export (10k)", lambda attempt, hub=hub: [str(hub), "export"]),
                ("list: export (10k)", lambda attempt: ["export"]),
                ("ready: +READY export (10k)", lambda attempt: ["+READY", "export"]),
            ]
        operations.append(
            (
                f"done/reopen hub of 100 ({label})",
                lambda attempt, hub_uuid=hub_uuid: (
                    [hub_uuid, "done"] if attempt % 2 == 0 else [hub_uuid, "modify", "status:pending"]
                ),
            )
        )
        for name, args_of in operations:
            times, bares = [], []
            for attempt in range(runs):
                bares.append(spawn([PYTHON, "-c", "pass"], dict(os.environ))[0])
                times.append(spawn([task, *args_of(attempt)], env)[0])
            results.append((name, statistics.median(times), statistics.median(bares)))
            print(f"  Taskwarrior {name:<28} {results[-1][1] * 1000:8.1f} ms", flush=True)
    return results


# -- claims and waiting (issue 9) -------------------------------------------------------


def claim_figures(bench: Bench, board: Path, clone_board: Path) -> dict:
    """`claim` then `release` of the first ready task, on the 10k board and on a board in a
    git clone (where claims go to the shared runtime state), each round next to a bare start."""
    import subprocess

    found = subprocess.run([TASKS, "ready", "--json"], env=environment(board), capture_output=True, check=True)
    first = json.loads(found.stdout)
    task = str(first[0]["id"])

    def claim_release(attempt: int) -> list[str]:
        return (
            ["--as", "bench", "claim", "--json"] if attempt % 2 == 0 else ["--as", "bench", "release", task, "--json"]
        )

    rows = bench.measure_together(
        [
            ("claim/release (10k)", board, claim_release),
            ("claim/release (in a git clone)", clone_board, fixed_cycle("bench")),
        ],
        runs=max(4, bench.runs - bench.runs % 2),
    )
    return {"claim": rows[0], "claim_clone": rows[1]}


def fixed_cycle(owner: str):
    return lambda attempt: ["--as", owner, "claim", "--json"] if attempt % 2 == 0 else ["--as", owner, "release", "1"]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process used so far (/proc/<pid>/stat, Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def waiting_figures(root: Path, idle: float = 30.0) -> dict:
    """What a waiting `claim --wait` costs: CPU over `idle` seconds while nothing happens
    (a task held by someone else), how soon it claims once the task is released, and how
    soon after a lease runs out it takes the task over."""
    import subprocess

    board = root / "waiting" / ".tasks"
    env = environment(board)
    subprocess.run([TASKS, "create", "held"], env=env, capture_output=True, check=True)
    subprocess.run([TASKS, "--as", "holder", "claim", "1"], env=env, capture_output=True, check=True)
    waiter = subprocess.Popen([TASKS, "--as", "waiter", "claim", "--wait", "--json"], env=env, stdout=subprocess.PIPE)
    time.sleep(2.0)  # start-up and the first looks at the board are not idling
    figures: dict = {}
    if os.path.exists(f"/proc/{waiter.pid}/stat"):
        before, start = cpu_seconds(waiter.pid), time.perf_counter()
        time.sleep(idle)
        figures["idle_cpu"] = (cpu_seconds(waiter.pid) - before) / (time.perf_counter() - start)
    released = time.perf_counter()
    subprocess.run([TASKS, "--as", "holder", "release", "1"], env=env, capture_output=True, check=True)
    waiter.communicate(timeout=60)
    figures["wake"] = time.perf_counter() - released
    subprocess.run([TASKS, "--as", "waiter", "release", "1"], env=env, capture_output=True, check=True)
    subprocess.run([TASKS, "--as", "holder", "claim", "1", "--lease", "2s"], env=env, capture_output=True, check=True)
    leased = time.time()
    subprocess.run([TASKS, "--as", "waiter", "claim", "--wait", "--json"], env=env, capture_output=True, check=True)
    figures["takeover_after_expiry"] = time.time() - (leased + 2.0)
    print(
        f"  claim --wait idle CPU: {figures.get('idle_cpu', float('nan')) * 100:.3f} % of a core over {idle:.0f} s; "
        f"claims {figures['wake'] * 1000:.0f} ms after a release (incl. the release command); "
        f"takes over {figures['takeover_after_expiry'] * 1000:.0f} ms after a lease runs out",
        flush=True,
    )
    return figures


def journal_boards(root: Path, lines: int = 200_000) -> tuple[Path, Path]:
    """Two boards of one task each: one with an empty journal, one whose journal already
    holds `lines` events in the shard a `note` appends to (the caller's), and a few more."""
    from taskboard import journal

    boards = []
    for name, count in (("journal-empty", 0), ("journal-long", lines)):
        folder = root / name / ".tasks"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        spawn([TASKS, "create", "noted", "--json"], environment(folder))
        shard = folder / journal.shard_name(journal.login_name())
        for actor in ("agent-1", "agent-2", None):
            target = shard if actor is None else folder / journal.shard_name(actor)
            with open(target, "a", encoding="utf-8") as out:
                for i in range(count // 3):
                    entry = {"at": f"2026-01-01T00:00:{i % 60:02d}.000Z", "actor": actor or "me", "task": 1}
                    entry.update(event="note", text=f"line {i}", eid=f"{i:016x}")
                    out.write(json.dumps(entry) + "\n")
        boards.append(folder)
    return boards[0], boards[1]


def clone_board(root: Path) -> Path:
    """A small board inside a git clone: claims go to git's common folder."""
    import subprocess

    repo = root / "clone"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    board = repo / ".tasks"
    for i in range(5):
        spawn([TASKS, "create", f"seed {i}", "--json"], environment(board))
    return board


# -- the run -----------------------------------------------------------------------------


# -- the MCP server (issue 13) ----------------------------------------------------------------


class StdioSession:
    """A bare JSON-RPC client of `tasks mcp` over its stdin/stdout: one line out, one
    line back, so a round trip is the server's cost plus two pipe hops, not a client's."""

    def __init__(self, board: Path):
        import subprocess

        self.process = subprocess.Popen(
            [TASKS, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment(board),
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        reply = json.loads(self.process.stdout.readline())
        if "error" in reply:
            raise SystemExit(f"tasks mcp: {method} failed: {reply['error']}")
        return reply["result"]

    def call(self, name: str, arguments: dict) -> float:
        start = time.perf_counter()
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        elapsed = time.perf_counter() - start
        if result.get("isError"):
            raise SystemExit(f"tasks mcp: {name} {arguments} failed: {result['content'][0]['text']}")
        return elapsed

    def rss(self) -> int:
        """The server's resident memory now, in bytes (Linux)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def mcp_server(board: Path, runs: int) -> list[tuple[str, str, str, bool]]:
    """`tasks mcp` on the 10k board: warm round trips of task_get and task_create over
    stdio (medians), and the server's memory once started and after the calls."""
    try:
        session = StdioSession(board)
    except (OSError, ValueError, SystemExit) as exc:
        print(f"\n(tasks mcp did not start: {exc}; install taskboard[mcp] for these figures)")
        return []
    try:
        started = time.perf_counter()
        session.request("tools/list", {})
        idle = session.rss()
        for _ in range(5):  # warm: first calls import the core's modules
            session.call("task_get", {"taskId": 5000})
        gets = [session.call("task_get", {"taskId": 1 + (n * 7919) % 9000}) for n in range(max(runs, 15) * 20)]
        creates = [session.call("task_create", {"subject": f"bench {n}"}) for n in range(max(runs, 15) * 4)]
        busy = session.rss()
        print(f"\n`tasks mcp` over stdio on the 10k board ({time.perf_counter() - started:.1f} s):")
        get, create = statistics.median(gets), statistics.median(creates)
        deciles = statistics.quantiles(gets, n=10)
        print(f"  task_get round trip    {get * 1000:6.2f} ms median, {deciles[-1] * 1000:.2f} ms p90 (n={len(gets)})")
        print(f"  task_create round trip {create * 1000:6.2f} ms median (n={len(creates)})")
        print(f"  server memory: {idle / 1e6:.0f} MB idle after start, {busy / 1e6:.0f} MB after the calls")
    finally:
        session.close()
    return [
        ("mcp task_get round trip, 10k", f"{get * 1000:.2f} ms", "≤ 3 ms", get <= 0.003),
        ("mcp task_create round trip, 10k", f"{create * 1000:.2f} ms", "≤ 15 ms", create <= 0.015),
    ]


# -- merging branches (issue 11) ---------------------------------------------------------------


def bench_merge(root: Path) -> list[tuple[str, float, str]]:
    """Two branches that each changed 1 000 tasks of a 10 000-task board, merged by real
    git through the wiring `tasks init` sets up: the driver runs once for every task file
    both branches changed, then the post-merge hook finishes the board from the commits.
    Both branches also create 20 tasks at the same ids, so the hook renumbers 20 of them.
    Three cases: different tasks changed on each side (the driver runs only for the shared
    new ids), the same 1 000 tasks changed (a different field on each side: 1 000 driver
    runs), and the same tasks merged by rebase. Returns (case, seconds, what was checked)."""
    import subprocess

    from taskboard.model import encode

    def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)

    def edit(board: Path, ids, field: str, stamp: str) -> None:
        for task_id in ids:
            path = board / f"task_{task_id}.json"
            record = json.loads(path.read_text())
            record[field] = f"{field} changed on this branch"
            record["updatedAt"] = stamp
            path.write_bytes(encode(record))

    def create(board: Path, first: int, count: int, side: str, stamp: str) -> None:
        for task_id in range(first, first + count):
            record = {
                "id": task_id,
                "subject": f"new on {side}",
                "description": "",
                "status": "pending",
                "blockedBy": [],
                "blocks": [],
                "owner": "",
                "uid": f"{side[0]}{task_id:011x}",
                "metadata": {},
                "createdAt": stamp,
                "updatedAt": stamp,
            }
            (board / f"task_{task_id}.json").write_bytes(encode(record))

    home = root / "merge-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKS_", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x")
    env.update(GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@x", GIT_MERGE_AUTOEDIT="no")
    results = []
    for case in ("different tasks, merge", "same tasks, merge", "same tasks, rebase"):
        repo = root / ("merge-" + case.replace(", ", "-").replace(" ", "-"))
        if repo.exists():
            shutil.rmtree(repo)
        board = repo / ".tasks"
        build_board(board, 10_000, seed=11)
        git(repo, "init", "-q")
        subprocess.run([TASKS, "--dir", str(board), "init"], env=env, capture_output=True, check=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        same = "same" in case
        for side, ids, field, stamp in (
            ("a", range(1, 2001, 2), "description", "2027-01-01T00:00:01Z"),
            ("b", range(1, 2001, 2) if same else range(2, 2001, 2), "subject", "2027-01-01T00:00:02Z"),
        ):
            git(repo, "checkout", "-q", "-b", side, "main")
            edit(board, ids, field, stamp)
            create(board, 10_001, 20, side, stamp)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", f"work on {side}")
        git(repo, "checkout", "-q", "a" if "merge" in case else "b")
        import resource

        start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        git(repo, *(["merge", "--no-edit", "b"] if "merge" in case else ["rebase", "a"]))
        seconds = time.perf_counter() - start
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_seconds = used.ru_utime - cpu.ru_utime + used.ru_stime - cpu.ru_stime  # git, drivers, hook
        check = subprocess.run(
            [TASKS, "--dir", str(board), "check", "--json"], env=env, capture_output=True, text=True, check=False
        )
        files = len(list(board.glob("task_*.json")))
        sound = check.returncode == 0 and files == 10_040
        checked = f"{files} task files, check {'clean' if sound else 'NOT CLEAN'}, {cpu_seconds:.1f} s of CPU"
        results.append((case, seconds, checked))
        print(f"  merge 2 × 1 000 changed of 10k, {case:<24} {seconds:6.1f} s  ({results[-1][2]})", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per fast figure (slow ones use fewer)")
    parser.add_argument("--keep", metavar="DIR", help="build the boards in DIR and leave them there")
    parser.add_argument("--merge-only", action="store_true", help="only the merge of two branches (issue 11)")
    options = parser.parse_args()
    runs = max(3, options.runs)
    slow_runs = max(3, runs // 2)

    root = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="taskboard-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    bench = Bench(runs)
    began = time.perf_counter()
    try:
        print(
            f"python {platform.python_version()} · {platform.machine()} · {os.cpu_count()} cores · "
            f"{platform.platform()}"
        )
        print(f"tasks: {TASKS}")
        if options.merge_only:
            return 0 if all("NOT" not in checked for _, _, checked in bench_merge(root)) else 1
        boards = {}
        for size in (1000, 10000):
            start = time.perf_counter()
            folder = root / f"board{size}" / ".tasks"
            if folder.exists():
                shutil.rmtree(folder)
            hub = build_board(folder, size)
            boards[size] = (folder, hub)
            print(f"built a board of {size} tasks in {time.perf_counter() - start:.1f} s (hub #{hub})")
        small = root / "small" / ".tasks"
        if small.exists():
            shutil.rmtree(small)
        small.mkdir(parents=True)
        for i in range(5):
            spawn([TASKS, "create", f"seed {i}", "--json"], environment(small))

        # Byte-compile the package as `pip install` does for a regular install: with
        # PYTHONDONTWRITEBYTECODE set (as in some sandboxes) an editable install would
        # otherwise compile every module from source in every run (~25 ms).
        import compileall

        import taskboard

        compileall.compile_dir(str(Path(taskboard.__file__).parent), quiet=1)
        print(
            f"byte-compiled {Path(taskboard.__file__).parent}"
            f"{' (PYTHONDONTWRITEBYTECODE is set)' if os.environ.get('PYTHONDONTWRITEBYTECODE') else ''}"
        )
        for size, (folder, _hub) in boards.items():  # the command must see the board as built
            import subprocess

            shown = subprocess.run([TASKS, "list", "--json"], env=environment(folder), capture_output=True, check=True)
            live = sum(1 for path in folder.glob("task_*.json") if json.loads(path.read_bytes())["status"] != "deleted")
            if len(json.loads(shown.stdout)) != live:
                raise SystemExit(
                    f"list --json on the {size} board shows {len(json.loads(shown.stdout))} tasks, not {live}"
                )
        for _ in range(3):  # warm the page cache
            bench.bare()
            spawn([TASKS, "get", "1", "--json"], environment(small))
        bench.baselines.clear()

        print("\ntimings (median; ratio to `python -c pass` measured alongside):")
        big, hub_big = boards[10000]
        mid, hub_mid = boards[1000]
        r = {}
        r["get"] = bench.measure("get --json (10k)", big, fixed("get", "5000", "--json"))
        r["create_small"] = bench.measure("create --json (small board)", small, fixed("create", "bench", "--json"))
        r["create_1k"], r["create_10k"] = bench.measure_together(
            [
                ("create --json (1k)", mid, fixed("create", "bench", "--json")),
                ("create --json (10k)", big, fixed("create", "bench", "--json")),
            ]
        )
        r["list"] = bench.measure("list --json (10k)", big, fixed("list", "--json"), runs=slow_runs)
        r["ready"] = bench.measure("ready --json (10k)", big, fixed("ready", "--json"), runs=slow_runs)

        def hub_args(hub):
            # even attempts complete the hub, odd ones reopen it
            return lambda attempt: [
                "update",
                str(hub),
                "--status",
                "completed" if attempt % 2 == 0 else "pending",
                "--json",
            ]

        hub_runs = max(4, runs - runs % 2 - 4)  # even: as many completions as reopenings
        r["hub_1k"], r["hub_10k"] = bench.measure_together(
            [
                ("complete/reopen hub of 100 (1k)", mid, hub_args(hub_mid)),
                ("complete/reopen hub of 100 (10k)", big, hub_args(hub_big)),
            ],
            runs=hub_runs,
        )

        empty_journal, long_journal = journal_boards(root)
        r["note_empty"], r["note_long"] = bench.measure_together(
            [
                ("note (empty journal)", empty_journal, fixed("note", "1", "bench")),
                ("note (200k-line journal)", long_journal, fixed("note", "1", "bench")),
            ]
        )
        r["log_limit"] = bench.measure(
            "log --limit 20 --json (200k lines)", long_journal, fixed("log", "--limit", "20", "--json")
        )
        r.update(claim_figures(bench, big, clone_board(root)))
        waits = waiting_figures(root)

        mcp_checks = mcp_server(big, runs)
        merges = bench_merge(root)
        tw = taskwarrior(root, 6)
        bare = statistics.median(bench.baselines)
        peak_mb = r["list"]["peak"] / 1e6
        checks = [
            ("get --json", f"{r['get']['ratio']:.2f}×", "≤ 5×", r["get"]["ratio"] <= 5),
            (
                "create --json, small board",
                f"{r['create_small']['ratio']:.2f}×",
                "≤ 8×",
                r["create_small"]["ratio"] <= 8,
            ),
            ("list --json, 10k", f"{r['list']['ratio']:.2f}×", "≤ 25×", r["list"]["ratio"] <= 25),
            ("ready --json, 10k", f"{r['ready']['ratio']:.2f}×", "≤ 25×", r["ready"]["ratio"] <= 25),
            (
                "hub of 100: 10k ÷ 1k",
                f"{r['hub_10k']['median'] / r['hub_1k']['median']:.2f}×",
                "≤ 1.3×",
                r["hub_10k"]["median"] / r["hub_1k"]["median"] <= 1.3,
            ),
            (
                "create: 10k ÷ 1k",
                f"{r['create_10k']['median'] / r['create_1k']['median']:.2f}×",
                "≤ 1.3×",
                r["create_10k"]["median"] / r["create_1k"]["median"] <= 1.3,
            ),
            ("list --json 10k peak memory", f"{peak_mb:.0f} MB", "≤ 100 MB", peak_mb <= 100),
            *(
                (f"merge 2 × 1 000 of 10k, {case}", f"{seconds:.1f} s", "board sound", "NOT" not in checked)
                for case, seconds, checked in merges
            ),
            (
                "journal append: 200k lines ÷ empty",
                f"{r['note_long']['median'] / r['note_empty']['median']:.2f}×",
                "≤ 1.3×",
                r["note_long"]["median"] / r["note_empty"]["median"] <= 1.3,
            ),
            ("log --limit 20, 200k lines", f"{r['log_limit']['ratio']:.2f}×", "≤ 8×", r["log_limit"]["ratio"] <= 8),
            (
                "claim --wait idle CPU",
                f"{waits.get('idle_cpu', 0) * 100:.3f} %",
                "< 1 % of a core",
                waits.get("idle_cpu", 0) < 0.01,
            ),
            (
                "takeover after a lease runs out",
                f"{waits['takeover_after_expiry']:.2f} s",
                "≤ 1 s",
                waits["takeover_after_expiry"] <= 1.0,
            ),
            *mcp_checks,
        ]
        print(f"\nbare interpreter (`python -c pass`, median of {len(bench.baselines)}): {bare * 1000:.1f} ms\n")
        print("| operation | median | × bare |")
        print("|---|---:|---:|")
        for row in bench.rows:
            print(f"| {row['name']} | {row['median'] * 1000:.1f} ms | {row['ratio']:.2f}× |")
        for name, seconds, base in tw:
            print(f"| Taskwarrior: {name} | {seconds * 1000:.1f} ms | {seconds / base:.2f}× |")
        for case, seconds, checked in merges:
            print(f"| git merge, 2 × 1 000 of 10k changed: {case} ({checked}) | {seconds:.1f} s | |")
        print("\n| target | reached | goal | |")
        print("|---|---:|---:|---|")
        for name, value, goal, ok in checks:
            print(f"| {name} | {value} | {goal} | {'PASS' if ok else 'MISS'} |")
        if not tw:
            print("\n(Taskwarrior is not installed: no side-by-side figures.)")
        print(f"\nwhole run: {time.perf_counter() - began:.0f} s")
        return 0 if all(ok for *_, ok in checks) else 1
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
