"""`make bench`: the installed `tasks` against the bare interpreter, in one run.

Builds boards of 10 000 and 100 000 tasks by writing files in the DESIGN.md format
(95 % completed history, 5 % open work with edges among it), then times the venv's
`tasks` console script as real processes. Every figure is the median of several runs,
printed as a ratio to the median start-up of `python -c pass` of the same venv,
measured interleaved with it so that load from other work on the machine falls on
both alike. At 100 000 tasks every figure is also stated against the stat floor (the
same interpreter doing one lstat per task file, DESIGN §11), run in every round beside each figure. Every answer is checked before it is timed, against an answer computed
here from the files alone (this file shares no code with taskboard).

    .venv-bench/bin/python bench/bench.py [--sizes 10000,100000] [--runs N] [--keep DIR] [--writers-only]
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
import threading
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
PYTHON = str(VENV_BIN / "python")
TASKS = str(VENV_BIN / "tasks")
STAMP = "2026-11-29T18:03:11Z"
OPEN = ("pending", "in_progress")
OWNERS = ("alice", "bob", "carol", "dave")
SCRATCH = Path(tempfile.gettempdir())

ARCHIVED = -100_000  # the 100 000-task board after `tasks archive`: a column of its own
# targets of issue 25: ratio to the bare interpreter (or as noted), per board size
TARGETS = {
    "ready --json": {10_000: 5, ARCHIVED: 6},
    "ready --json --limit 20": {10_000: 4, ARCHIVED: 5},
    "get ID --json": {10_000: 3, 100_000: 4},
    "create S --json": {10_000: 7, 100_000: 10},
    "claim --json": {10_000: 6, ARCHIVED: 7},
    "list --json --status pending": {10_000: 5, ARCHIVED: 6},
    "list --json": {10_000: 15},
    "cold ready --json (no cache)": {10_000: 16, ARCHIVED: 20},
}
# ... and to the stat floor of the same board (FLOOR_SIZE and up), measured in the same run
FLOOR_SIZE = 100_000
FLOOR_TARGETS = {
    ("ready --json", 100_000): 1.15,
    ("ready --json --limit 20", 100_000): 1.15,
    ("claim --json", 100_000): 1.2,
    ("list --json --status pending", 100_000): 1.15,
}
SECONDS_TARGETS = {("list --json", 100_000): 1.5, ("cold ready --json (no cache)", 100_000): 4.0}
WRITERS_TARGET = 3.0  # seconds for 8 processes of 25 creates each on one board
PEAK_MB_TARGET = 300
GROWTH_TARGET = 1.5
AFTER_EDIT_TARGET = 2.0


# -- the board, written and judged without taskboard ------------------------------------


def size_label(size: int) -> str:
    """How a board is named in the output: 10k, 100k, or 100k after archive."""
    return f"{-size // 1000}k after archive" if size < 0 else f"{size // 1000}k"


def encode(record: dict) -> bytes:
    """The contract's byte form (DESIGN.md §1)."""
    return (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def build_board(folder: Path, size: int, seed: int = 15) -> dict[int, dict]:
    """`size` tasks: 5 % open (a fifth of them in progress), spread over the board's
    life but denser among recent ids, each waiting on 0-2 earlier open tasks; the rest
    completed, keeping history edges in `blocks` only (DESIGN.md §2, invariant 2)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    open_count = size // 20
    recent = set(rng.sample(range(size - size // 10 + 1, size + 1), open_count * 3 // 5))
    old = set(rng.sample(range(1, size - size // 10 + 1), open_count - len(recent)))
    open_ids = sorted(recent | old)
    records: dict[int, dict] = {}
    for task_id in range(1, size + 1):
        is_open = task_id in recent or task_id in old
        status = ("in_progress" if rng.random() < 0.2 else "pending") if is_open else "completed"
        records[task_id] = {
            "id": task_id,
            "subject": f"Task {task_id}: {rng.choice(['write', 'review', 'test', 'ship'])} the "
            f"{rng.choice(['parser', 'store', 'cli', 'docs', 'graph', 'index'])}",
            "description": "Some words about the work.\nA second line." if rng.random() < 0.4 else "",
            "status": status,
            "blockedBy": [],
            "blocks": [],
            "owner": rng.choice(OWNERS) if status == "in_progress" else "",
            "uid": f"{rng.getrandbits(48):012x}",
            "metadata": {"component": rng.choice(["core", "cli"])} if rng.random() < 0.3 else {},
            "createdAt": STAMP,
            "updatedAt": STAMP,
        }
    for position, task_id in enumerate(open_ids):  # open work waits on earlier open work
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            if position:
                blocker = open_ids[rng.randint(max(0, position - 200), position - 1)]
                records[blocker]["blocks"].append(task_id)
                records[task_id]["blockedBy"].append(blocker)
    for task_id in range(2, size + 1):  # history: finished work once blocked later work
        if rng.random() < 0.5:
            blocker = rng.randint(max(1, task_id - 50), task_id - 1)
            if records[blocker]["status"] == "completed":
                records[blocker]["blocks"].append(task_id)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for record in records.values():
        record["blocks"] = sorted(set(record["blocks"]))
        record["blockedBy"] = sorted(set(record["blockedBy"]))
        fd = os.open(folder / f"task_{record['id']}.json", flags, 0o644)
        os.write(fd, encode(record))
        os.close(fd)
    return records


def read_task(folder: Path, task_id: int) -> dict:
    return json.loads((folder / f"task_{task_id}.json").read_bytes())


def ready_ids(model: dict[int, dict]) -> list[int]:
    """Pending with no open blocker; a stale id of a finished or missing task does not block."""
    return [
        task_id
        for task_id, record in sorted(model.items())
        if record["status"] == "pending"
        and not any(model.get(b, {}).get("status") in OPEN for b in record["blockedBy"])
    ]


def listed(model: dict[int, dict], statuses=("pending", "in_progress", "completed")) -> list[dict]:
    return [record for _, record in sorted(model.items()) if record["status"] in statuses]


# -- timing processes --------------------------------------------------------------------


def spawn(argv: list[str], env: dict, stdout: str = os.devnull, stderr: str = os.devnull) -> tuple[float, int, int]:
    """Run one process: (seconds, exit code, peak RSS in bytes)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    return elapsed, os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


# A child's peak memory as the kernel counts it starts from the memory of the process that
# spawned it (the bench holds a whole board in memory), so a small interpreter in between
# forks the command and reports its peak.
PEAK_OF = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    fd = os.open(os.devnull, os.O_WRONLY)\n"
    "    os.dup2(fd, 1)\n"
    "    os.dup2(fd, 2)\n"
    "    os.execv(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "print(usage.ru_maxrss * 1024 if os.waitstatus_to_exitcode(status) == 0 else -1)\n"
)


def peak_memory(board: Path, *args: str) -> int:
    """The peak resident memory of one `tasks ARGS`, in bytes."""
    import subprocess

    done = subprocess.run(
        [PYTHON, "-c", PEAK_OF, TASKS, *args], env=environment(board), capture_output=True, text=True, check=False
    )
    peak = int(done.stdout.strip() or -1)
    if peak < 0:
        raise SystemExit(f"`tasks {' '.join(args)}` failed while its memory was measured")
    return peak


def environment(board: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKS_") and k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TASKS_DIR"] = str(board)
    return env


OUT = str(SCRATCH / f"taskboard-bench-{os.getpid()}.out")
ERR = str(SCRATCH / f"taskboard-bench-{os.getpid()}.err")


class Unsupported(Exception):
    """The installed `tasks` does not know this spelling (exit 2): the figure is left out."""


def answer(board: Path, *args: str) -> tuple[str, str]:
    """Run `tasks ARGS` once and return (stdout, stderr); exit 0 or the bench stops."""
    _, code, _ = spawn([TASKS, *args], environment(board), OUT, ERR)
    out, err = Path(OUT).read_text(encoding="utf-8"), Path(ERR).read_text(encoding="utf-8")
    if code == 2:
        raise Unsupported(err.strip().splitlines()[-1] if err.strip() else "usage error")
    if code != 0:
        raise SystemExit(f"`tasks {' '.join(args)}` exited {code}: {err.strip()[-500:]}")
    return out, err


def expect(what: str, got, wanted) -> None:
    if got != wanted:
        shown = lambda value: json.dumps(value)[:300]  # noqa: E731
        raise SystemExit(f"wrong answer for {what}:\n  got    {shown(got)}\n  wanted {shown(wanted)}")


class Bench:
    def __init__(self, runs: int):
        self.runs = runs
        self.rows: list[dict] = []
        self.baselines: list[float] = []
        self.floors: dict[int, float] = {}  # board size: the median of its stat floor (FLOOR_SIZE and up)
        self.floor_folders: dict[int, str] = {}  # board size: its folder, whose floor runs beside every figure

    def against_floor(self, size: int | None, seconds: float) -> str:
        """The ratio to the stat floor of a board whose figures are stated against it, else empty."""
        floor = self.floors.get(size or 0)
        return f"  {seconds / floor:5.2f}× floor" if floor else ""

    def bare(self) -> float:
        seconds, _, _ = spawn([PYTHON, "-c", "pass"], dict(os.environ))
        self.baselines.append(seconds)
        return seconds

    def measure(self, name: str, size: int | None, board: Path, args_of, runs: int | None = None, check=None) -> dict:
        """Median of `runs` runs of `tasks ARGS`, each paired with a bare start-up."""
        return self.measure_together([(name, size, board, args_of, check)], runs)[0]

    def measure_together(self, cases: list, runs: int | None = None) -> list[dict]:
        """Like `measure` for several (name, size, board, args_of, check) cases whose runs
        alternate round by round, so that a growth ratio compares runs made under the same
        load. `check(attempt, stdout, stderr)`, when given, judges every run's answer."""
        samples = [{"times": [], "peaks": []} for _ in cases]
        bares = []
        # a board stated against its stat floor has the floor run in every round too: a
        # floor measured once, minutes before under another load, makes the ratio noise
        floored = {size: [] for _, size, *_ in cases if size in self.floor_folders}
        for attempt in range(runs or self.runs):
            bares.append(self.bare())
            for size, floors in floored.items():
                seconds, status, _ = spawn([PYTHON, "-c", STAT_FLOOR, self.floor_folders[size]], dict(os.environ))
                if status != 0:
                    raise SystemExit("the floor script failed")
                floors.append(seconds)
            pairs = list(zip(cases, samples, strict=True))
            # the order flips every round: a fsync may wait for whatever the machine wrote before it
            for (name, _, board, args_of, check), sample in pairs if attempt % 2 == 0 else pairs[::-1]:
                args = args_of(attempt)
                seconds, code, peak = spawn([TASKS, *args], environment(board), OUT if check else os.devnull, ERR)
                if code != 0:
                    raise SystemExit(f"{name}: `tasks {' '.join(args)}` exited {code}: {Path(ERR).read_text()[-300:]}")
                if check:
                    check(attempt, Path(OUT).read_text(encoding="utf-8"), Path(ERR).read_text(encoding="utf-8"))
                sample["times"].append(seconds)
                sample["peaks"].append(peak)
        rows = []
        for (name, size, *_), sample in zip(cases, samples, strict=True):
            row = {
                "name": name,
                "size": size,
                "median": statistics.median(sample["times"]),
                "bare": statistics.median(bares),
                "peak": max(sample["peaks"]),
                "runs": len(sample["times"]),
            }
            row["ratio"] = row["median"] / row["bare"]
            floor = ""
            if floored.get(size):
                row["floor"] = statistics.median(floored[size])
                floor = f"  {row['median'] / row['floor']:5.2f}× floor ({row['floor'] * 1000:.0f} ms alongside)"
            self.rows.append(row)
            rows.append(row)
            label = f"{name} ({size_label(size)})" if size else name
            print(
                f"  {label:<44} {row['median'] * 1000:8.1f} ms  {row['ratio']:6.2f}×  "
                f"(bare {row['bare'] * 1000:.1f} ms, n={row['runs']}){floor}",
                flush=True,
            )
        return rows

    def timed_python(self, name: str, size: int, code: str, *args: str, runs: int | None = None) -> dict:
        """A floor: the same interpreter running a few lines, timed like a command."""
        times, bares = [], []
        for _ in range(runs or self.runs):
            bares.append(self.bare())
            seconds, status, _ = spawn([PYTHON, "-c", code, *args], dict(os.environ))
            if status != 0:
                raise SystemExit(f"{name}: the floor script failed")
            times.append(seconds)
        row = {"name": name, "size": size, "median": statistics.median(times), "bare": statistics.median(bares)}
        row["ratio"], row["runs"], row["peak"] = row["median"] / row["bare"], len(times), 0
        self.rows.append(row)
        print(
            f"  {name + f' ({size_label(size)})':<44} {row['median'] * 1000:8.1f} ms  {row['ratio']:6.2f}×", flush=True
        )
        return row


def ctime_grain(folder: Path) -> str:
    """Whether a folder changed right after a stat gets a new ctime, tried here as
    taskboard's writers try it: what lets `create` skip listing the board folder."""
    probe = folder / ".ctime-probe"
    for _ in range(3):
        probe.touch()
        seen = os.stat(folder).st_ctime_ns
        probe.unlink()
        if os.stat(folder).st_ctime_ns == seen:
            return "coarse ctimes (no multigrain timestamps): every create lists the board folder"
    return "a folder changed after a stat gets a new ctime (multigrain timestamps): create lists no folder"


def load() -> str:
    """The load averages (1, 5, 15 minutes), as uptime says them."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def fixed(*args: str):
    return lambda attempt: list(args)


STAT_FLOOR = (
    "import os, sys\n"
    "folder = sys.argv[1]\n"
    "for name in os.listdir(folder):\n"
    "    if name.startswith('task_'):\n"
    "        os.lstat(folder + '/' + name)\n"
)
LIST_FLOOR = "import os, sys\nos.listdir(sys.argv[1])\n"


# -- one board -----------------------------------------------------------------------


def bench_board(bench: Bench, root: Path, size: int, runs: int) -> dict:
    """Every figure of one board size; the board is judged before each is timed."""
    folder = root / f"board{size // 1000}k" / ".tasks"
    if folder.exists():
        shutil.rmtree(folder)
    start = time.perf_counter()
    model = build_board(folder, size)
    print(f"\nbuilt a board of {size} tasks in {time.perf_counter() - start:.1f} s", flush=True)
    slow = max(3, runs // 3) if size >= 100_000 else max(3, runs // 2)
    results: dict[str, dict] = {}

    def judged_list(args: tuple[str, ...], wanted: list[dict]):
        def check(_attempt, out, _err):
            expect(f"tasks {' '.join(args)}", json.loads(out), wanted)

        return check

    # the command must see the board as built (this first run also fills any cache)
    expect("list --json", json.loads(answer(folder, "list", "--json")[0]), listed(model))

    cache = folder / ".cache"

    def cold(attempt):
        shutil.rmtree(cache, ignore_errors=True)
        return ["ready", "--json"]

    wanted_ready = [model[i] for i in ready_ids(model)]
    expect("ready --json", json.loads(answer(folder, "ready", "--json")[0]), wanted_ready)
    # the floors first: every later figure of a large board is stated against its stat floor
    results["floor_list"] = bench.timed_python("floor: list the folder", size, LIST_FLOOR, str(folder))
    results["floor_stat"] = bench.timed_python("floor: stat every task file", size, STAT_FLOOR, str(folder))
    if size >= FLOOR_SIZE:
        bench.floors[size] = results["floor_stat"]["median"]
        bench.floor_folders[size] = str(folder)
    results["cold"] = bench.measure("cold ready --json (no cache)", size, folder, cold, runs=slow)
    for _ in range(2):  # warm again after the cold runs
        answer(folder, "ready", "--json")
    results["ready"] = bench.measure(
        "ready --json", size, folder, fixed("ready", "--json"), check=judged_list(("ready", "--json"), wanted_ready)
    )
    try:
        out, err = answer(folder, "ready", "--json", "--limit", "20")
        expect("ready --json --limit 20", json.loads(out), wanted_ready[:20])
        expect("ready --limit 20 total", json.loads(err.splitlines()[-1]), {"total": len(wanted_ready)})
        results["ready_limit"] = bench.measure(
            "ready --json --limit 20", size, folder, fixed("ready", "--json", "--limit", "20")
        )
    except Unsupported as exc:
        print(f"  ready --json --limit 20: not supported by this tasks ({exc})")
    pending = listed(model, ("pending",))
    expect("list --status pending", json.loads(answer(folder, "list", "--json", "--status", "pending")[0]), pending)
    results["pending"] = bench.measure(
        "list --json --status pending", size, folder, fixed("list", "--json", "--status", "pending")
    )
    results["list"] = bench.measure("list --json", size, folder, fixed("list", "--json"), runs=slow)
    results["list_peak"] = peak_memory(folder, "list", "--json")
    print(f"  {f'peak memory, list --json ({size // 1000}k)':<44} {results['list_peak'] / 1e6:8.0f} MB")
    probe = sorted(i for i, r in model.items() if r["status"] in OPEN)[len(model) // 40]
    expect("get --json", json.loads(answer(folder, "get", str(probe), "--json")[0]), model[probe])
    results["get"] = bench.measure("get ID --json", size, folder, fixed("get", str(probe), "--json"))

    # hand edits: each timed `ready` is the first after one file changed (in place or by rename)
    rng = random.Random(size)
    warm_ready = results["ready"]["median"]
    edit_rows = {}
    for how in ("in place", "by rename"):
        times = []
        for attempt in range(max(4, runs // 2)):
            candidates = [i for i, r in model.items() if r["status"] == "pending"]
            task_id = rng.choice(candidates)
            record = dict(model[task_id])
            if attempt % 2:  # finish it by hand: its dependents keep a stale id, which must not block them
                record["status"] = "completed"
            else:
                record["subject"] = f"edited by hand {attempt}"
            path = folder / f"task_{task_id}.json"
            if how == "in place":
                with open(path, "r+b") as handle:
                    handle.truncate(0)
                    handle.write(encode(record))
            else:
                temp = folder / f".task_{task_id}.json.swp"
                temp.write_bytes(encode(record))
                os.replace(temp, path)
            model[task_id] = read_task(folder, task_id)
            bench.bare()
            seconds, code, _ = spawn([TASKS, "ready", "--json"], environment(folder), OUT, ERR)
            if code != 0:
                raise SystemExit(f"ready after a hand edit exited {code}: {Path(ERR).read_text()[-300:]}")
            expect(
                f"ready after a hand edit {how}",
                json.loads(Path(OUT).read_text()),
                [model[i] for i in ready_ids(model)],
            )
            times.append(seconds)
        median = statistics.median(times)
        edit_rows[how] = median / warm_ready
        print(
            f"  {f'first ready after an edit {how} ({size // 1000}k)':<44} {median * 1000:8.1f} ms  "
            f"{median / statistics.median(bench.baselines[-len(times) :]):6.2f}×  ({median / warm_ready:.2f}× warm)"
            f"{bench.against_floor(size, median)}"
        )
    results["after_edit"] = edit_rows

    # writes: each answer judged against the files it wrote
    def judge_create(_attempt, out, _err):
        record = json.loads(out)
        expect("create: the next id", record["id"], max(model) + 1)
        model[record["id"]] = read_task(folder, record["id"])
        expect("create: the record printed is the file", record, model[record["id"]])

    results["create"] = bench.measure(
        "create S --json", size, folder, fixed("create", "bench", "--json"), check=judge_create
    )

    def judge_claim(_attempt, out, _err):
        record = json.loads(out)
        candidates = [i for i in ready_ids(model) if model[i]["owner"] in ("", "bench")]
        expect("claim: the first ready task", record["id"], candidates[0])
        model[record["id"]] = read_task(folder, record["id"])
        expect("claim: the record printed is the file", record, model[record["id"]])

    results["claim"] = bench.measure(
        "claim --json", size, folder, fixed("claim", "--owner", "bench", "--json"), check=judge_claim
    )
    expect("list --json at the end", json.loads(answer(folder, "list", "--json")[0]), listed(model))
    results["folder"], results["model"] = folder, model
    return results


# -- the same board after `tasks archive` ------------------------------------------------


def bench_archived(bench: Bench, board: dict, runs: int) -> dict:
    """The large board once its history is moved aside (DESIGN §11): `tasks archive`
    judged from the files (every task still there once, live or archived, only closed
    ones archived, the open records untouched), then the reads of open work and a
    claim, each answer judged before it is timed, against the bare interpreter (the
    stat floor of the live files beside them)."""
    folder, model = board["folder"], board["model"]
    for path in folder.glob("task_*.json"):  # the growth runs' creates, judged by nobody: taken as the files say
        task_id = int(path.name[5:-5])
        if task_id not in model:
            model[task_id] = read_task(folder, task_id)
    size = ARCHIVED
    start = time.perf_counter()
    answer(folder, "archive", "--older-than", "0")
    print(f"\narchived the {len(model)}-task board in {time.perf_counter() - start:.1f} s", flush=True)
    live = sorted(int(p.name[5:-5]) for p in folder.glob("task_*.json"))
    gone = sorted(int(p.name[5:-5]) for p in (folder / "archive").glob("task_*.json"))
    expect("archive: every task once, live or archived", sorted(live + gone), sorted(model))
    expect("archive: only closed tasks", [i for i in gone if model[i]["status"] in OPEN], [])
    opened = [i for i in live if model[i]["status"] in OPEN]
    expect("archive: open records untouched", [read_task(folder, i) for i in opened], [model[i] for i in opened])
    print(f"  {len(gone)} archived, {len(live)} live", flush=True)
    results: dict[str, dict] = {}
    results["floor_stat"] = bench.timed_python("floor: stat every task file", size, STAT_FLOOR, str(folder))
    bench.floors[size] = results["floor_stat"]["median"]
    bench.floor_folders[size] = str(folder)
    wanted_ready = [model[i] for i in ready_ids(model)]  # archived tasks are closed: they block nothing

    def judged(args: tuple[str, ...], wanted: list[dict]):
        def check(_attempt, out, _err):
            expect(f"tasks {' '.join(args)} (archived)", json.loads(out), wanted)

        return check

    cache = folder / ".cache"

    def cold(_attempt):
        shutil.rmtree(cache, ignore_errors=True)
        return ["ready", "--json"]

    slow = max(3, runs // 2)
    results["cold"] = bench.measure(
        "cold ready --json (no cache)", size, folder, cold, runs=slow, check=judged(("ready", "--json"), wanted_ready)
    )
    answer(folder, "ready", "--json")  # warm again after the cold runs
    results["ready"] = bench.measure(
        "ready --json", size, folder, fixed("ready", "--json"), check=judged(("ready", "--json"), wanted_ready)
    )

    def judge_limit(_attempt, out, err):
        expect("ready --json --limit 20 (archived)", json.loads(out), wanted_ready[:20])
        expect("ready --limit 20 total (archived)", json.loads(err.splitlines()[-1]), {"total": len(wanted_ready)})

    results["ready_limit"] = bench.measure(
        "ready --json --limit 20", size, folder, fixed("ready", "--json", "--limit", "20"), check=judge_limit
    )
    results["pending"] = bench.measure(
        "list --json --status pending",
        size,
        folder,
        fixed("list", "--json", "--status", "pending"),
        check=judged(("list", "--json", "--status", "pending"), listed(model, ("pending",))),
    )

    def judge_claim(_attempt, out, _err):
        record = json.loads(out)
        candidates = [i for i in ready_ids(model) if model[i]["owner"] in ("", "bench")]
        expect("claim (archived): the first ready task", record["id"], candidates[0])
        model[record["id"]] = read_task(folder, record["id"])
        expect("claim (archived): the record printed is the file", record, model[record["id"]])

    results["claim"] = bench.measure(
        "claim --json", size, folder, fixed("claim", "--owner", "bench", "--json"), check=judge_claim
    )
    return results


# -- many writers at once -----------------------------------------------------------------


def many_writers(root: Path, processes: int = 8, each: int = 25) -> dict[str, float]:
    """`processes` workers each running `each` creates one after another, all on one
    new board: the wall time, for tasks and (when installed) Taskwarrior."""

    def together(argv_of, env) -> float:
        failures = []

        def worker(number: int) -> None:
            for step in range(each):
                _, code, _ = spawn(argv_of(number, step), env)
                if code != 0:
                    failures.append(code)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(processes)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise SystemExit(f"{len(failures)} of the concurrent creates failed (exit {failures[0]})")
        return time.perf_counter() - start

    figures = {}
    board = root / "writers" / ".tasks"
    figures["tasks"] = together(lambda n, s: [TASKS, "create", f"w{n}-{s}", "--json"], environment(board))
    ids = sorted(int(p.name[5:-5]) for p in board.glob("task_*.json"))
    expect("concurrent creates: ids", ids, list(range(1, processes * each + 1)))
    subjects = sorted(read_task(board, i)["subject"] for i in ids)
    expect("concurrent creates: subjects", subjects, sorted(f"w{n}-{s}" for n in range(processes) for s in range(each)))
    task = shutil.which("task")
    if task:
        data, rc = root / "tw-writers", root / "tw-writers.rc"
        data.mkdir()
        rc.write_text(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\n")
        env = {**os.environ, "TASKRC": str(rc), "TASKDATA": str(data)}
        seconds = together(lambda n, s: [task, "add", f"w{n}-{s}"], env)
        lost = processes * each - (data / "pending.data").read_text().count("\n")
        # a peer that loses adds is a fact to show beside its time, not a reason to drop our figures
        figures["taskwarrior" + (f" ({lost} of {processes * each} adds lost)" if lost else "")] = seconds
    return figures


def taskwarrior(root: Path, model: dict[int, dict], runs: int) -> list[tuple[str, float, float]]:
    """The 10k board's reads and an add through Taskwarrior 2.x, when it is installed."""
    task = shutil.which("task")
    if not task:
        return []
    data, rc = root / "tw10k", root / "tw10k.rc"
    data.mkdir()
    rc.write_text(f"data.location={data}\nconfirmation=off\nverbose=nothing\nhooks=off\ngc=off\n")
    env = {**os.environ, "TASKRC": str(rc), "TASKDATA": str(data)}
    uuid = {i: f"00000000-0000-4000-8000-{i:012x}" for i in model}
    exported = []
    for task_id, record in sorted(model.items()):
        item = {"uuid": uuid[task_id], "description": record["subject"], "entry": "20261129T180311Z"}
        if record["status"] in OPEN:
            item["status"] = "pending"
            if record["blockedBy"]:
                item["depends"] = [uuid[b] for b in record["blockedBy"] if b in uuid]
        else:
            item["status"], item["end"] = "completed", "20261129T180311Z"
        exported.append(item)
    (root / "tw10k.json").write_text(json.dumps(exported))
    spawn([task, "import", str(root / "tw10k.json")], env)
    results = []
    for name, args in (
        ("Taskwarrior: +READY export (10k)", ["+READY", "export"]),
        ("Taskwarrior: status:pending export (10k)", ["status:pending", "export"]),
        ("Taskwarrior: add (10k)", ["add", "bench task"]),
    ):
        times, bares = [], []
        for _ in range(runs):
            bares.append(spawn([PYTHON, "-c", "pass"], dict(os.environ))[0])
            times.append(spawn([task, *args], env)[0])
        results.append((name, statistics.median(times), statistics.median(bares)))
        print(f"  {name:<44} {results[-1][1] * 1000:8.1f} ms  {results[-1][1] / results[-1][2]:6.2f}×", flush=True)
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
            ("claim/release (10k)", None, board, claim_release, None),
            ("claim/release (in a git clone)", None, clone_board, fixed_cycle("bench"), None),
        ],
        runs=max(4, bench.runs - bench.runs % 2),
    )
    return {"claim": rows[0], "claim_clone": rows[1]}


def fixed_cycle(owner: str):
    return lambda attempt: ["--as", owner, "claim", "--json"] if attempt % 2 == 0 else ["--as", owner, "release", "1"]


def remote_claim_figures(bench: Bench, root: Path) -> dict:
    """`claim` then `release` in a clone whose claims go through a bare remote on this
    machine (`init --remote origin`), next to a clone without one; and how many times a
    claim talks to the remote (each round trip starts one upload-pack or receive-pack:
    wrappers count them)."""
    import subprocess

    remote = root / "claims-remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    counter = root / "round-trips.log"
    for pack in ("upload-pack", "receive-pack"):
        wrapper = root / f"counting-{pack}"
        wrapper.write_text(f'#!/bin/sh\necho {pack} >> "{counter}"\nexec git-{pack} "$@"\n')
        wrapper.chmod(0o755)
    boards = {}
    for name, through_remote in (("plain", False), ("remote", True)):
        repo = root / f"clone-{name}"
        subprocess.run(["git", "clone", "-q", str(remote), str(repo)], check=True, capture_output=True)
        subprocess.run(
            ["git", "-C", str(repo), "config", "remote.origin.uploadpack", str(root / "counting-upload-pack")],
            check=True,
        )
        subprocess.run(
            ["git", "-C", str(repo), "config", "remote.origin.receivepack", str(root / "counting-receive-pack")],
            check=True,
        )
        board = repo / ".tasks"
        spawn([TASKS, "init", *(["--remote", "origin"] if through_remote else [])], environment(board))
        for i in range(5):
            spawn([TASKS, "create", f"seed {i}", "--json"], environment(board))
        boards[name] = board
    rows = bench.measure_together(
        [
            ("claim/release (no remote)", None, boards["plain"], fixed_cycle("bench"), None),
            ("claim/release (--remote, bare on disk)", None, boards["remote"], fixed_cycle("bench"), None),
        ],
        runs=max(4, bench.runs - bench.runs % 2),
    )
    # a second clone that has not seen the claim loses it: its push is refused, one fetch names the winner
    loser = root / "clone-loser"
    subprocess.run(["git", "clone", "-q", str(remote), str(loser)], check=True, capture_output=True)
    spawn([TASKS, "init", "--remote", "origin"], environment(loser / ".tasks"))
    shutil.copy(boards["remote"] / "task_2.json", loser / ".tasks" / "task_2.json")
    for pack in ("upload-pack", "receive-pack"):
        subprocess.run(
            [
                "git",
                "-C",
                str(loser),
                "config",
                f"remote.origin.{pack.replace('-', '')}",
                str(root / f"counting-{pack}"),
            ],
            check=True,
        )
    counter.write_text("")
    spawn([TASKS, "--as", "bench", "claim", "2", "--json"], environment(boards["remote"]))
    claim_trips = len(counter.read_text().split())
    counter.write_text("")
    lost = spawn([TASKS, "--as", "loser", "claim", "2", "--json"], environment(loser / ".tasks"))[1]
    loser_trips = len(counter.read_text().split())
    counter.write_text("")
    spawn([TASKS, "--as", "bench", "done", "2", "--json"], environment(boards["remote"]))
    done_trips = len(counter.read_text().split())  # the ref moves from the holder's claim: one push
    print(f"  claim through the remote: {claim_trips} round trip(s) to win, {loser_trips} to lose (exit {lost})")
    print(f"  completion through the remote: {done_trips} round trip(s) (the claim ref moved first, by CAS)")
    return {
        "claim_plain": rows[0],
        "claim_remote": rows[1],
        "claim_trips": claim_trips,
        "loser_trips": loser_trips,
        "done_trips": done_trips,
    }


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


def journal_boards(root: Path, lines: int = 200_000) -> tuple[Path, Path]:
    """Two boards of one task each: one with an empty journal, one whose journal already
    holds `lines` events in the shard a `note` appends to (the caller's), and a few more."""
    from taskboard.disk import journal

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

    from taskboard.core.model import encode

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
        print(f"\n(tasks mcp did not start: {exc}; install the mcp extra for these figures)")
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
        made = session.request("tools/call", {"name": "task_create", "arguments": {"subject": "bench held"}})
        held = json.loads(made["content"][0]["text"])["id"]  # one the builder cannot have finished
        session.call("task_claim", {"taskId": held, "owner": "bench-holder"})
        session.next_id += 1  # a claim that waits for the task held above: never answered here
        session.send(
            {
                "jsonrpc": "2.0",
                "id": session.next_id,
                "method": "tools/call",
                "params": {"name": "task_claim", "arguments": {"taskId": held, "owner": "bench", "wait": 600}},
            }
        )
        session.call("task_get", {"taskId": 1})  # answered while the claim waits
        gone = time.perf_counter()
    finally:
        session.close()
    exit_after = time.perf_counter() - gone
    print(f"  exit after the client closed its input, a claim waiting: {exit_after * 1000:.0f} ms")
    return [
        ("mcp task_get round trip, 10k", f"{get * 1000:.2f} ms", "≤ 3 ms", get <= 0.003),
        ("mcp task_create round trip, 10k", f"{create * 1000:.2f} ms", "≤ 15 ms", create <= 0.015),
        ("mcp exit, client gone mid-wait", f"{exit_after * 1000:.0f} ms", "≤ 1 s", exit_after <= 1.0),
    ]


def web_server(board: Path, runs: int) -> list[tuple[str, str, str, bool]]:
    """`tasks serve` on the 10k board (5 % open): the board page served warm (median of
    GETs over one kept-alive connection), and how long a change made by the command line
    takes to reach an open page: from the start of `tasks create` to the page's change
    feed saying so, and to the page fetched again showing the new task."""
    import http.client
    import re
    import subprocess

    server = subprocess.Popen(
        [TASKS, "--dir", str(board), "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", server.stderr.readline())
    if found is None:
        server.kill()
        print("\n(tasks serve did not start: install taskboard[web] for these figures)")
        return []
    port = int(found.group(1))
    try:
        page = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def get(path: str = "/") -> bytes:
            page.request("GET", path)
            answer = page.getresponse()
            body = answer.read()
            expect(f"GET {path}", answer.status, 200)
            return body

        cold_began = time.perf_counter()
        first = get()
        cold = time.perf_counter() - cold_began
        opened = sum(read_task(board, int(name.stem[5:]))["status"] in OPEN for name in board.glob("task_*.json"))
        expect("cards on the board page", first.count(b'<li class="card'), opened + 20)  # every open card, 20 of Done
        times = []
        for _ in range(max(runs, 11)):
            began = time.perf_counter()
            get()
            times.append(time.perf_counter() - began)
        served = statistics.median(times)
        feed = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        feed.request("GET", "/events")
        stream = feed.getresponse()
        for _ in range(4):  # retry, hello, its data, the blank line
            stream.readline()
        seen, shown = [], []
        for n in range(5):
            subject = f"seen live {n}"
            began = time.perf_counter()
            subprocess.run([TASKS, "--dir", str(board), "create", subject], capture_output=True, check=True)
            line = stream.readline()
            while not line.startswith(b"event: change"):
                line = stream.readline()
            seen.append(time.perf_counter() - began)
            expect("the new task on the page", subject.encode() in get(), True)
            shown.append(time.perf_counter() - began)
            stream.readline(), stream.readline()
            time.sleep(0.3)  # let the feed settle: the next change is a change of its own
        feed.close()
        page.close()
        print("\n`tasks serve` on the 10k board (5 % open):")
        print(f"  board page, first GET        {cold * 1000:7.0f} ms")
        print(f"  board page, warm (median)    {served * 1000:7.0f} ms (n={len(times)})")
        print(
            f"  tasks create → change event  {statistics.median(seen) * 1000:7.0f} ms median, max {max(seen) * 1000:.0f} ms"
        )
        print(
            f"  tasks create → page shows it {statistics.median(shown) * 1000:7.0f} ms median, max {max(shown) * 1000:.0f} ms"
        )
    finally:
        server.terminate()
        server.wait(10)
    return [
        ("board page served, 10k (5 % open)", f"{served * 1000:.0f} ms", "≤ 300 ms", served <= 0.3),
        ("CLI change seen by an open page", f"{max(shown) * 1000:.0f} ms", "≤ 1 s", max(shown) <= 1.0),
    ]


# -- the run -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="runs per fast figure (slow ones use fewer)")
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES", "10000,100000"), help="board sizes")
    parser.add_argument("--keep", metavar="DIR", help="build the boards in DIR and leave them there")
    parser.add_argument("--merge-only", action="store_true", help="only the merge of two branches (issue 11)")
    parser.add_argument("--remote-only", action="store_true", help="only claims through a git remote (issue 12)")
    parser.add_argument("--web-only", action="store_true", help="only tasks serve on a 10k board (issue 23)")
    parser.add_argument("--writers-only", action="store_true", help="only 8 processes × 25 creates (issue 25)")
    options = parser.parse_args()
    runs = max(3, options.runs)
    sizes = [int(size) for size in options.sizes.split(",")]

    root = Path(options.keep) if options.keep else Path(tempfile.mkdtemp(prefix="taskboard-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    bench = Bench(runs)
    began = time.perf_counter()
    try:
        print(
            f"python {platform.python_version()} · {platform.machine()} · {os.cpu_count()} cores · {platform.platform()}"
        )
        print(f"tasks: {TASKS}")
        print(f"file system: {ctime_grain(root)}")
        print(f"load at the start: {load()}  (the machine's other work slows both sides of every ratio alike)")
        if options.writers_only:
            writers = many_writers(root)
            for who, seconds in writers.items():
                print(f"  8 processes × 25 creates, {who:<27} {seconds:8.2f} s")
            print(f"load at the end: {load()}")
            return 0 if writers["tasks"] <= WRITERS_TARGET else 1
        if options.merge_only:
            return 0 if all("NOT" not in checked for _, _, checked in bench_merge(root)) else 1
        if options.web_only:
            folder = root / "web-10000" / ".tasks"
            build_board(folder, 10_000)
            return 0 if all(ok for *_, ok in web_server(folder, runs)) else 1
        if options.remote_only:
            found = remote_claim_figures(bench, root)
            return 0 if max(found["claim_trips"], found["loser_trips"]) <= 2 else 1
        for _ in range(3):  # warm the page cache
            bench.bare()
        bench.baselines.clear()
        print("\ntimings (median; ratio to `python -c pass` measured alongside):")
        boards = {size: bench_board(bench, root, size, runs) for size in sizes}

        growth = {}
        if len(sizes) > 1:
            small, large = boards[sizes[0]], boards[sizes[-1]]
            print(f"\ngrowth {sizes[0] // 1000}k → {sizes[-1] // 1000}k, runs interleaved:")
            for name, args in (
                ("get ID --json", ["get", "{id}", "--json"]),
                ("create S --json", ["create", "g", "--json"]),
            ):
                cases = []
                for size, board in ((sizes[0], small), (sizes[-1], large)):
                    probe = str(sorted(i for i, r in board["model"].items() if r["status"] in OPEN)[10])
                    argv = [probe if a == "{id}" else a for a in args]
                    cases.append((name, size, board["folder"], fixed(*argv), None))
                low, high = bench.measure_together(cases)
                growth[name] = high["median"] / low["median"]

        archived = bench_archived(bench, boards[FLOOR_SIZE], runs) if FLOOR_SIZE in boards else None

        print("\n8 processes × 25 creates on one new board (wall time):")
        writers = many_writers(root)
        for who, seconds in writers.items():
            print(f"  {who:<44} {seconds:8.2f} s")
        tw = taskwarrior(root, boards[sizes[0]]["model"], max(3, runs // 2)) if 10_000 in sizes else []
        print("\nclaims and waiting:")
        claim_figures(bench, boards[sizes[0]]["folder"], clone_board(root))
        remote_claims = remote_claim_figures(bench, root)
        waits = waiting_figures(root)
        mcp_checks = mcp_server(boards[10_000]["folder"], runs) if 10_000 in sizes else []
        web_checks = web_server(boards[10_000]["folder"], runs) if 10_000 in sizes else []
        print("\nthe journal:")
        empty_journal, long_journal = journal_boards(root)
        note_empty, note_long = bench.measure_together(
            [
                ("note (empty journal)", None, empty_journal, fixed("note", "1", "bench"), None),
                ("note (200k-line journal)", None, long_journal, fixed("note", "1", "bench"), None),
            ]
        )
        log_limit = bench.measure(
            "log --limit 20 --json (200k lines)", None, long_journal, fixed("log", "--limit", "20", "--json")
        )
        print("\nmerging branches:")
        merges = bench_merge(root)

        bare = statistics.median(bench.baselines)
        print(f"\nbare interpreter (`python -c pass`, median of {len(bench.baselines)}): {bare * 1000:.1f} ms")
        for size, floor in bench.floors.items():
            print(f"stat floor of the {size_label(size)} board (one lstat per task file): {floor * 1000:.0f} ms")
        print(f"load at the end: {load()}\n")
        columns = sizes + ([ARCHIVED] if archived else [])
        print("| figure | " + " | ".join(f"{size_label(s)} tasks" for s in columns) + " |")
        print("|---|" + "---:|" * len(columns))
        names = []
        for row in bench.rows:
            if row["size"] is not None and row["name"] not in names:
                names.append(row["name"])
        checks = []
        for name in names:
            cells = []
            for size in columns:
                rows = [r for r in bench.rows if r["name"] == name and r["size"] == size]
                if not rows:
                    cells.append("")
                    continue
                row = rows[0]  # the growth runs come later; the table shows the board's own figure
                cell = f"{row['ratio']:.2f}× ({row['median'] * 1000:.0f} ms)"
                if row.get("floor"):
                    versus = row["median"] / row["floor"]
                    cell = f"{versus:.2f}× floor, {cell}"
                    if (name, size) in FLOOR_TARGETS:
                        goal_f = FLOOR_TARGETS[(name, size)]
                        checks.append(
                            (
                                f"{name} ({size_label(size)})",
                                f"{versus:.2f}× floor",
                                f"≤ {goal_f}× floor",
                                versus <= goal_f,
                            )
                        )
                goal = TARGETS.get(name, {}).get(size)
                if goal is not None:
                    checks.append(
                        (f"{name} ({size_label(size)})", f"{row['ratio']:.2f}×", f"≤ {goal}×", row["ratio"] <= goal)
                    )
                if (name, size) in SECONDS_TARGETS:
                    goal_s = SECONDS_TARGETS[(name, size)]
                    checks.append(
                        (
                            f"{name} ({size_label(size)})",
                            f"{row['median']:.2f} s",
                            f"≤ {goal_s} s",
                            row["median"] <= goal_s,
                        )
                    )
                cells.append(cell)
            print(f"| {name} | " + " | ".join(cells) + " |")
        for how in ("in place", "by rename"):
            cells = [f"{boards[s]['after_edit'][how]:.2f}× warm" for s in sizes]
            print(f"| first ready after a hand edit {how} | " + " | ".join(cells) + " |")
            for s in sizes:
                value = boards[s]["after_edit"][how]
                checks.append(
                    (
                        f"ready after an edit {how} ({s // 1000}k)",
                        f"{value:.2f}× warm",
                        f"≤ {AFTER_EDIT_TARGET}×",
                        value <= AFTER_EDIT_TARGET,
                    )
                )
        peaks = {s: boards[s]["list_peak"] / 1e6 for s in sizes}
        print("| peak memory, list --json | " + " | ".join(f"{peaks[s]:.0f} MB" for s in sizes) + " |")
        checks.append(
            (
                f"peak memory, list --json ({sizes[-1] // 1000}k)",
                f"{peaks[sizes[-1]]:.0f} MB",
                f"≤ {PEAK_MB_TARGET} MB",
                peaks[sizes[-1]] <= PEAK_MB_TARGET,
            )
        )
        checks.append(
            (
                "claim --wait idle CPU",
                f"{waits.get('idle_cpu', 0) * 100:.3f} %",
                "< 1 % of a core",
                waits.get("idle_cpu", 0) < 0.01,
            )
        )
        checks.append(
            (
                "takeover after a lease runs out",
                f"{waits['takeover_after_expiry']:.2f} s",
                "≤ 1 s",
                waits["takeover_after_expiry"] <= 1.0,
            )
        )
        checks += mcp_checks + web_checks
        trips = (remote_claims["claim_trips"], remote_claims["loser_trips"])
        checks.append(
            ("claim through a remote: git round trips (win, lose)", f"{trips[0]}, {trips[1]}", "≤ 2", max(trips) <= 2)
        )
        checks += [
            (
                "journal append: 200k lines ÷ empty",
                f"{note_long['median'] / note_empty['median']:.2f}×",
                "≤ 1.3×",
                note_long["median"] / note_empty["median"] <= 1.3,
            ),
            ("log --limit 20, 200k lines", f"{log_limit['ratio']:.2f}×", "≤ 8×", log_limit["ratio"] <= 8),
        ]
        checks += [
            (f"merge 2 × 1 000 of 10k, {case}", f"{seconds:.1f} s", "board sound", "NOT" not in checked)
            for case, seconds, checked in merges
        ]
        for name, value in growth.items():
            print(f"| growth {sizes[0] // 1000}k → {sizes[-1] // 1000}k: {name} | {value:.2f}× |")
            checks.append((f"growth: {name}", f"{value:.2f}×", f"≤ {GROWTH_TARGET}×", value <= GROWTH_TARGET))
        for row in bench.rows:
            if row["size"] is None:
                print(f"| {row['name']} | {row['ratio']:.2f}× ({row['median'] * 1000:.0f} ms) |")
        for who, seconds in writers.items():
            print(f"| 8 processes × 25 creates, {who} | {seconds:.2f} s |")
        checks.append(
            (
                "8 processes × 25 creates",
                f"{writers['tasks']:.2f} s",
                f"≤ {WRITERS_TARGET:g} s",
                writers["tasks"] <= WRITERS_TARGET,
            )
        )
        for case, seconds, checked in merges:
            print(f"| git merge, 2 × 1 000 of 10k changed: {case} ({checked}) | {seconds:.1f} s |")
        for name, seconds, base in tw:
            print(f"| {name} | {seconds / base:.2f}× ({seconds * 1000:.0f} ms) |")
        if not shutil.which("task"):
            print("\n(Taskwarrior is not installed: no side-by-side figures.)")
        print("\n| target | reached | goal | |")
        print("|---|---:|---:|---|")
        for name, value, goal, ok in checks:
            print(f"| {name} | {value} | {goal} | {'PASS' if ok else 'MISS'} |")
        print(f"\nwhole run: {time.perf_counter() - began:.0f} s")
        return 0 if all(ok for *_, ok in checks) else 1
    finally:
        for path in (OUT, ERR):
            Path(path).unlink(missing_ok=True)
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
