"""`tasks serve` over HTTP (DESIGN §12): the pages read without script, the guard
refuses other sites (Host, Origin), forms without the per-start secret and requests
without the token, GET changes no file, and every action is the command line's own
change, journaled with the page user's name, refused with the command line's message,
and refused when sent from an older version of the task. In-process through
Starlette's TestClient, and against a real server where the wire matters (the change
feed, MCP over streamable HTTP)."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from served import Served, tasks
from starlette.testclient import TestClient

from taskboard.git import claim_authority
from taskboard.web.server import Site, build

HOST = "127.0.0.1:8765"


@pytest.fixture
def board(tmp_path: Path) -> Path:
    folder = tmp_path / ".tasks"
    for args in (
        ("create", "Write parser", "--priority", "1", "--label", "parser"),
        ("create", "Write tests", "--blocked-by", "1"),
        ("create", "Ship it", "--blocked-by", "2"),
        ("create", "Docs <b>bold</b>", "-d", "line one\nline two"),
    ):
        assert tasks(folder, *args).returncode == 0
    assert tasks(folder, "claim", "1", caller="bob").returncode == 0
    return folder


def client_for(board: Path, caller: str = "", token: str | None = None) -> tuple[TestClient, Site]:
    site = Site(str(board), caller, 10.0, "127.0.0.1", 8765, token, authority=claim_authority())
    return TestClient(build(site), base_url=f"http://{HOST}"), site


@pytest.fixture
def web(board: Path):
    client, site = client_for(board)
    with client:
        yield client, site


def record(board: Path, task_id: int) -> dict:
    return json.loads((board / f"task_{task_id}.json").read_text())


def files(board: Path, cache: bool = True) -> dict[str, tuple[bytes, int]]:
    """Every file under the board folder (dot files included): bytes and modification time;
    without `cache`, the derived cache beside the board left out (taskboard.index: any
    read, the command line's included, may refresh it; git never sees it)."""
    return {
        str(path.relative_to(board)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(board.rglob("*"))
        if path.is_file() and (cache or not str(path.relative_to(board)).startswith(".cache/"))
    }


def version_on(page: str, task_id: int) -> str:
    found = re.search(rf'action="/task/{task_id}/\w+">.*?name="version" value="(\w+)"', page, re.S)
    assert found, page
    return found.group(1)


def post(client: TestClient, site: Site, path: str, form: dict, name: str = "alice", **kwargs) -> object:
    cookies = {"tasks_name": name} if name else {}
    body = urlencode({"_secret": site.secret, **form})
    headers = {"content-type": "application/x-www-form-urlencoded", **kwargs.pop("headers", {})}
    client.cookies.clear()
    for key, value in cookies.items():
        client.cookies.set(key, value)
    return client.post(path, content=body, headers=headers, follow_redirects=False, **kwargs)


# -- reading ---------------------------------------------------------------------------


def test_the_board_reads_without_script_in_the_terminals_words(web):
    client, _site = web
    page = client.get("/").text
    for column in ("⊘ Blocked", "○ Ready", "◐ In progress", "✔ Done"):
        assert column in re.sub(r"<[^>]+>", "", page).replace("  ", " ")
    assert "4 tasks · 0 ready · 1 in progress · 2 blocked · 1 done" not in page  # one is ready: #4
    assert "4 tasks · 1 ready · 1 in progress · 2 blocked · 0 done" in page
    assert "@bob" in page and "waits on" in page
    assert "Docs &lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page  # user text is escaped


def test_a_task_page_has_every_field_its_links_and_its_journal(web, board):
    client, _site = web
    page = client.get("/task/2").text
    uid = record(board, 2)["uid"]
    assert uid in page and "Write tests" in page
    assert 'href="/task/1"' in page and 'href="/task/3"' in page  # its blocker and its dependent
    assert "created" in page and "linked" in page  # its journal


def terminal_subjects(board: Path) -> dict[int, str]:
    """Each task's subject cell as the terminal's `tasks list --all` shows it: the subject,
    then what the plan and time say of it (`Epic  1/2 done`)."""
    import os

    argv = [sys.executable, "-m", "taskboard", "--dir", str(board), "list", "--all"]
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=True).stdout
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()
    starts = [found.start() for found in re.finditer(r"\S+(?: \S+)*", lines[0])]  # the columns
    start = lines[0].index("subject")
    end = starts[starts.index(start) + 1]
    return {int(line[1:].split()[0]): line[start:end].strip() for line in lines[2:] if line.startswith("#")}


def act_on_page(client: TestClient, site: Site, task_id: int, action: str, shown: str = "", **form: str) -> dict:
    """An action sent from the task's page as it is now (its version), as JSON; the page
    must show `shown`."""
    page = client.get(f"/task/{task_id}").text
    assert shown in page
    answer = post(
        client,
        site,
        f"/task/{task_id}/{action}",
        {"version": version_on(page, task_id), **form},
        headers={"accept": "application/json"},
    )
    return answer.json()


def web_cards(page: str) -> dict[int, tuple[str, str]]:
    """Each card of the board page: (its subject then its plan words, the plan's classes)."""
    found = {}
    for card in re.findall(r'<li class="card.*?</li>', page, re.S):
        head = re.search(r'<span class="id">#(\d+)</span> ([^<]*)</a>', card)
        assert head, card
        plan = re.search(r'<span class="(plan[^"]*)">([^<]*)</span>', card)
        words = f"{head.group(2)}  {plan.group(2)}" if plan else head.group(2)
        found[int(head.group(1))] = (words, plan.group(1) if plan else "")
    return found


def test_cards_show_parents_and_dates_as_the_terminal_does(tmp_path):
    """DESIGN §14: the web board and the terminal views show parents and dates the same
    way: a parent's progress, a child's parent, `after` while it is ahead, due and
    overdue; the task page too."""
    folder = tmp_path / ".tasks"
    for args in (
        ("create", "Epic"),
        ("create", "Child one", "--parent", "1"),
        ("create", "Child two", "--parent", "1", "--due", "2020-01-01"),
        ("create", "Later", "--after", "3d", "--due", "2099-05-05T10:00"),
        ("create", "Plain"),
    ):
        assert tasks(folder, *args).returncode == 0
    assert tasks(folder, "claim", "2", caller="ann").returncode == 0
    assert tasks(folder, "done", "2", caller="ann").returncode == 0
    client, _site = client_for(folder)
    with client:
        page = client.get("/").text
        task_page = client.get("/task/1").text
    cards = web_cards(page)
    assert {task_id: words for task_id, (words, _) in cards.items()} == terminal_subjects(folder)
    assert cards[1][0] == "Epic  1/2 done"
    assert cards[2][0] == "Child one  part of #1"  # a finished child still says whose it is
    assert cards[3] == ("Child two  part of #1 · overdue since 2020-01-01", "plan overdue")
    assert cards[4][0].startswith("Later  after ") and cards[4][0].endswith(" · due 2099-05-05 10:00")
    assert cards[4][1] == "plan" and cards[5] == ("Plain", "")
    assert re.search(r"<dt>children</dt><dd>1/2 done", task_page), task_page


def test_filters_live_in_the_url_and_a_bad_one_says_why(web):
    client, _site = web
    page = client.get("/?owner=bob").text
    assert "Write parser" in page and "Write tests" not in page
    assert "Write parser" not in client.get("/?q=tests").text
    assert "Ship it" in client.get("/?status=blocked").text
    assert "Ship it" not in client.get("/?label=parser").text
    bad = client.get("/?priority=9")
    assert bad.status_code == 400 and "priority" in bad.text


def test_the_graph_and_the_journal_render(web):
    client, _site = web
    graph = client.get("/graph").text
    assert "<svg" in graph and 'href="/task/2"' in graph and "waits on" in graph
    journal = client.get("/journal").text
    assert "claimed" in journal and "bob" in journal
    assert client.get("/task/99").status_code == 404
    assert "no task #99" in client.get("/task/99").text


def test_the_graph_draws_finished_work_as_done_with_its_subject(web, board):
    """The graph of open work draws the finished tasks it rests on as done, with their
    subjects (it drew them as deleted and blank: the index's lookup knows open work only)."""
    client, _site = web
    assert tasks(board, "done", "1", caller="bob").returncode == 0
    for path in ("/graph", "/graph?all=1", "/graph?task=1"):
        nodes = re.findall(
            r'<a href="/task/(\d+)" class="node ([a-z_]+)[^"]*"><title>([^<]*)</title>', client.get(path).text
        )
        assert ("1", "completed", "#1 Write parser (done)") in nodes, (path, nodes)
        assert ("2", "ready", "#2 Write tests (ready)") in nodes, (path, nodes)


def test_every_task_in_the_graph_includes_the_archived_ones_marked(web, board):
    """The page's "every task" is `graph --all` (DESIGN §11): archived tasks drawn, marked
    so; the graph of open work, like `board`, never opens the archive."""
    client, _site = web
    assert tasks(board, "done", "1", caller="bob").returncode == 0
    assert tasks(board, "archive", "--older-than", "0").returncode == 0
    assert (board / "archive" / "task_1.json").exists()
    for path in ("/graph?all=1", "/graph?task=1"):
        nodes = re.findall(
            r'<a href="/task/(\d+)" class="node ([a-z_]+)[^"]*"><title>([^<]*)</title>', client.get(path).text
        )
        assert ("1", "completed", "#1 Write parser (archived) (done)") in nodes, (path, nodes)
    assert 'href="/task/1"' not in client.get("/graph").text


def path_points(d: str, steps: int = 40) -> list[tuple[float, float]]:
    """Points along an SVG path of M, L and C commands (absolute), as the browser draws it."""
    points: list[tuple[float, float]] = []
    here = (0.0, 0.0)
    for command, numbers in re.findall(r"([MLC])([^MLC]*)", d):
        values = [float(v) for v in re.findall(r"-?[0-9.]+", numbers)]
        pairs = list(zip(values[::2], values[1::2], strict=True))
        if command == "M":
            here = pairs[0]
        elif command == "L":
            points += [
                (here[0] + (pairs[0][0] - here[0]) * i / steps, here[1] + (pairs[0][1] - here[1]) * i / steps)
                for i in range(steps + 1)
            ]
            here = pairs[0]
        else:
            (ax, ay), (bx, by), (cx, cy) = pairs
            for i in range(steps + 1):
                t = i / steps
                u = 1 - t
                points.append(
                    (
                        u**3 * here[0] + 3 * u * u * t * ax + 3 * u * t * t * bx + t**3 * cx,
                        u**3 * here[1] + 3 * u * u * t * ay + 3 * u * t * t * by + t**3 * cy,
                    )
                )
            here = (cx, cy)
    return points


def test_an_arrow_across_layers_passes_behind_no_task(web, board):
    """An edge that skips a layer is drawn around the tasks in between: drawn straight it
    went behind them and seemed to end at one (#5 → #6 read as #5 → #3)."""
    client, _site = web
    for args in (("update", "4", "--add-blocks", "3"), ("create", "Release", "--blocked-by", "3", "--blocked-by", "4")):
        assert tasks(board, *args).returncode == 0
    page = client.get("/graph").text
    boxes = {
        int(n): (float(x), float(y))
        for n, x, y in re.findall(
            r'<a href="/task/(\d+)" class="node[^>]*><title>[^<]*</title>\s*<rect x="([0-9.]+)" y="([0-9.]+)"', page
        )
    }
    assert sorted(boxes) == [1, 2, 3, 4, 5]
    edges = re.findall(r'<path class="edge" d="([^"]+)"', page)
    assert len(edges) == 5  # 1→2, 2→3, 4→3, 3→5, 4→5: two of them skip a layer
    long = 0
    for d in edges:
        points = path_points(d)
        (sx, sy), (ex, ey) = points[0], points[-1]
        ends = {n for n, (x, y) in boxes.items() if (x + 200, y + 22) == (sx, sy) or (x, y + 22) == (ex, ey)}
        assert len(ends) == 2, (d, boxes)
        long += ex - sx > 64
        for n, (x, y) in boxes.items():
            if n not in ends:
                inside = [(px, py) for px, py in points if x < px < x + 200 and y < py < y + 44]
                assert not inside, (d, n, inside[:3])
    assert long == 2


def test_get_never_changes_a_file(web, board):
    client, _site = web
    before = files(board, cache=False)
    for path in ("/", "/?done=all", "/task/1", "/task/2", "/graph", "/graph?all=1", "/graph?task=2", "/journal"):
        assert client.get(path).status_code == 200, path
    for path in ("/create", "/task/1/claim", "/task/1/complete", "/name"):  # an action's address, read: nothing
        assert client.get(path).status_code in (404, 405), path
    assert files(board, cache=False) == before


# -- the guard ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1:9999", "attacker.test", ""])
def test_a_host_that_is_not_this_server_is_refused(web, host):
    client, _site = web
    answer = client.get("/", headers={"host": host})
    assert answer.status_code == 403 and "Host" in answer.text
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_another_sites_origin_can_neither_read_nor_act(web, board):
    client, site = web
    before = files(board)
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    answer = post(client, site, "/create", {"subject": "from evil"}, headers={"origin": "http://evil.example"})
    assert answer.status_code == 403
    answer = post(client, site, "/create", {"subject": "cross"}, headers={"sec-fetch-site": "cross-site"})
    assert answer.status_code == 403
    assert files(board) == before
    answer = post(client, site, "/create", {"subject": "same"}, headers={"origin": f"http://{HOST}"})
    assert answer.status_code == 303


@pytest.mark.parametrize("secret", [None, "", "guess"])
def test_an_action_without_the_secret_changes_nothing(web, board, secret):
    client, _site = web
    before = files(board)
    form = {"subject": "sneaky"} | ({"_secret": secret} if secret is not None else {})
    answer = client.post(
        "/create", content=urlencode(form), headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert answer.status_code == 403 and "secret" in answer.text
    assert files(board) == before


def test_the_token_is_asked_of_every_request(board):
    client, _site = client_for(board, token="s3cret-token")
    with client:
        assert client.get("/").status_code == 403
        assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 403
        assert client.get("/", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
        first = client.get("/task/1?token=s3cret-token", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/task/1"  # the token leaves the address bar
        assert client.get("/task/1").status_code == 200  # the cookie carries it now
        client.cookies.clear()
        assert client.get("/task/1").status_code == 403


def test_beyond_loopback_only_with_a_token(board):
    refused = tasks(board, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "token" in refused.stderr
    refused = tasks(board, "serve", "--host", "192.0.2.1", "--json")
    assert refused.returncode == 2


def test_without_the_extra_serve_exits_2_naming_the_install_command(board):
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('starlette', 'uvicorn', 'jinja2'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from taskboard.__main__ import main\n"
        f"raise SystemExit(main(['--dir', {str(board)!r}, 'serve', '--port', '0']))\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pipx install --force '.[mcp,web]'" in done.stderr and "pip install starlette uvicorn jinja2" in done.stderr


def test_the_plain_commands_never_import_the_web_stack(board):
    probe = (
        "import sys\n"
        "from taskboard.__main__ import main\n"
        f"main(['--dir', {str(board)!r}, 'board'])\n"
        f"main(['--dir', {str(board)!r}, '--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'jinja2', 'taskboard.web')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]"


# -- actions -------------------------------------------------------------------------------


def test_create_from_the_page_is_the_command_lines_change_journaled_with_the_name(web, board):
    client, site = web
    answer = post(client, site, "/create", {"subject": "From the page", "priority": "0", "labels": "web, ui"})
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    shown = client.get("/")  # without script: the page again, saying what was done, once
    assert "created #5" in shown.text and "From the page" in shown.text
    assert "created #5" not in client.get("/").text
    created = tasks(board, "get", "5", "--json")
    assert created.returncode == 0
    task = json.loads(created.stdout)
    assert task["subject"] == "From the page" and task["metadata"] == {"priority": 0, "labels": ["ui", "web"]}
    log = json.loads(tasks(board, "log", "5", "--json").stdout)
    assert [(entry["actor"], entry["event"]) for entry in log] == [("alice", "created")]


def test_a_ready_task_reserved_for_someone_else_offers_no_claim(web, board):
    """The command line refuses alice's claim of a task reserved for bob: the page offers
    none (card and task page), while bob's page does."""
    client, _site = web
    assert tasks(board, "update", "4", "--owner", "bob").returncode == 0
    assert tasks(board, "--as", "alice", "claim", "4").returncode == 4
    for name, offered in (("alice", False), ("bob", True)):
        client.cookies.clear()
        client.cookies.set("tasks_name", name)
        board_page, task_page = client.get("/").text, client.get("/task/4").text
        assert ('id="claim-4"' in board_page) is offered, name
        assert ('id="claim-4"' in task_page and 'id="complete-4"' in task_page) is offered, name
        assert "@bob" in board_page
    client.cookies.clear()
    assert 'id="claim-4"' not in client.get("/").text  # no name yet: nobody's reservation is taken by a click
    assert 'id="claim-4"' in client_for(board, caller="bob")[0].get("/").text  # --as bob at start


def test_a_task_held_by_someone_else_offers_neither_complete_nor_release(web, board):
    """bob holds #1: the command line refuses alice's done and release of it, so her page
    offers neither (card and task page), while bob's page offers both."""
    client, _site = web
    for command in ("done", "release"):
        refused = tasks(board, command, "1", caller="alice")
        assert refused.returncode == 4 and "bob" in refused.stderr, refused.stderr
    for name, offered in (("alice", False), ("bob", True)):
        client.cookies.clear()
        client.cookies.set("tasks_name", name)
        for page in (client.get("/").text, client.get("/task/1").text):
            assert "@bob" in page
            assert ('id="complete-1"' in page, 'id="release-1"' in page) == (offered, offered), name
    client.cookies.clear()  # no name yet: the page asks before any change, and a name is not bob's by default
    for page in (client.get("/").text, client.get("/task/1").text):
        assert 'id="complete-1"' not in page and 'id="release-1"' not in page
    bobs, _site = client_for(board, caller="bob")  # --as bob at start
    for page in (bobs.get("/").text, bobs.get("/task/1").text):
        assert 'id="complete-1"' in page and 'id="release-1"' in page
    assert record(board, 1)["owner"] == "bob" and record(board, 1)["status"] == "in_progress"


def test_claim_and_complete_with_script_answer_json(web, board):
    client, site = web
    page = client.get("/").text
    answer = post(
        client, site, "/task/4/claim", {"version": version_on(page, 4)}, headers={"accept": "application/json"}
    )
    assert answer.json()["ok"] is True, answer.text
    assert record(board, 4)["status"] == "in_progress" and record(board, 4)["owner"] == "alice"
    page = client.get("/task/4").text
    answer = post(
        client,
        site,
        "/task/4/complete",
        {"version": version_on(page, 4), "note": "did it"},
        headers={"accept": "application/json"},
    )
    assert answer.json()["ok"] is True and record(board, 4)["status"] == "completed"
    events = [(e["actor"], e["event"]) for e in json.loads(tasks(board, "log", "4", "--json").stdout)]
    assert ("alice", "claimed") in events and ("alice", "completed") in events


def test_a_refusal_shows_the_command_lines_message_and_writes_nothing(web, board):
    client, site = web
    cli = tasks(board, "done", "1", caller="alice")  # bob holds #1
    assert cli.returncode == 4
    message = cli.stderr.strip().removeprefix("tasks: error: ")
    before = files(board)
    page = client.get("/task/1").text
    answer = post(
        client, site, "/task/1/complete", {"version": version_on(page, 1)}, headers={"accept": "application/json"}
    )
    assert answer.status_code == 200  # the script's answer: the body says it was refused
    assert answer.json() == {"ok": False, "error": {"code": "refused", "message": message, "exit": 4}}
    without_script = post(client, site, "/task/1/complete", {"version": version_on(page, 1), "next": "/task/1"})
    assert without_script.status_code == 409 and message.replace('"', "&#34;") in without_script.text
    assert files(board) == before


def test_a_form_from_an_older_version_is_refused_with_what_changed(web, board):
    client, site = web
    page = client.get("/task/2").text
    old = version_on(page, 2)
    assert tasks(board, "update", "2", "--subject", "Write more tests", caller="carol").returncode == 0
    before = files(board)
    answer = post(
        client,
        site,
        "/task/2/edit",
        {"version": old, "subject": "Mine", "description": ""},
        headers={"accept": "application/json"},
    )
    assert answer.json()["ok"] is False and answer.json()["error"]["exit"] == 4
    text = answer.json()["error"]["message"]
    assert 'changed since your page showed it: subject "Write tests" → "Write more tests"' in text
    assert "nothing was written" in text
    assert files(board) == before


def test_without_a_name_an_action_asks_for_one_and_with_as_it_needs_none(board):
    client, site = client_for(board)
    with client:
        before = files(board)
        answer = post(client, site, "/create", {"subject": "nameless"}, name="", headers={"accept": "application/json"})
        assert answer.json()["error"]["exit"] == 2 and "who you are" in answer.json()["error"]["message"]
        assert files(board) == before
        named = client.post(
            "/name",
            content=urlencode({"_secret": site.secret, "name": "dora"}),
            headers={"content-type": "application/x-www-form-urlencoded"},
            follow_redirects=False,
        )
        assert named.status_code == 303 and "tasks_name=dora" in named.headers["set-cookie"]
    client, site = client_for(board, caller="erin")
    with client:
        assert post(client, site, "/create", {"subject": "by erin"}, name="").status_code == 303
    assert json.loads(tasks(board, "log", "--json").stdout)[-1]["actor"] == "erin"


def test_every_action_of_the_page(web, board):
    client, site = web

    def act(task_id: int, action: str, **form: str) -> dict:
        return act_on_page(client, site, task_id, action, **form)

    assert act(4, "edit", subject="Docs", description="new words", priority="3", labels="docs")["ok"]
    assert record(board, 4)["subject"] == "Docs" and record(board, 4)["metadata"] == {"priority": 3, "labels": ["docs"]}
    assert act(4, "link", relation="blocked_by", other="3")["ok"]
    assert record(board, 4)["blockedBy"] == [3]
    assert act(4, "unlink", blocker="3")["ok"] and record(board, 4)["blockedBy"] == []
    cycle = act(1, "link", relation="blocked_by", other="3")
    assert cycle["ok"] is False and cycle["error"]["exit"] == 4 and "#3 → #1 → #2 → #3" in cycle["error"]["message"]
    assert act(4, "note", text="looked at it")["ok"]
    assert act(4, "claim")["ok"]
    assert act(4, "release", failed="on", note="too hard")["ok"]
    assert record(board, 4)["status"] == "pending"
    assert act(4, "complete")["ok"]
    assert act(4, "reopen", note="not quite")["ok"] and record(board, 4)["status"] == "pending"
    events = [e["event"] for e in json.loads(tasks(board, "log", "4", "--json").stdout) if e["actor"] == "alice"]
    assert events == [
        "edited",
        "linked",
        "unlinked",
        "note",
        "claimed",
        "released",
        "failed",
        "completed",
        "reopened",
        "note",
    ]


def test_an_archived_tasks_page_acts_on_it(web, board):
    """The page of an archived task (DESIGN §11: shown, marked so) offers Reopen and Note;
    its forms were refused as stale ("changed since your page showed it: rewritten"): the
    page's version was taken of the record as shown, with its archived mark."""
    client, site = web
    assert tasks(board, "done", "1", caller="bob").returncode == 0
    assert tasks(board, "done", "2").returncode == 0
    assert tasks(board, "archive", "--older-than", "0").returncode == 0
    assert (board / "archive" / "task_2.json").exists()

    def act(task_id: int, action: str, **form: str) -> dict:
        return act_on_page(client, site, task_id, action, "archived", **form)

    noted = act(1, "note", text="kept for the record")
    assert noted["ok"], noted
    assert (board / "archive" / "task_1.json").exists()  # a note changes no task file
    reopened = act(2, "reopen", note="not quite")
    assert reopened["ok"], reopened
    assert record(board, 2)["status"] == "pending" and not (board / "archive" / "task_2.json").exists()
    # a page that showed the task before it was archived still acts on it: archiving moved it, changed nothing
    assert tasks(board, "restore", "1").returncode == 0
    page = client.get("/task/1").text
    assert "archived" not in re.sub(r"<[^>]+>", "", page).split("Journal")[0]
    assert tasks(board, "archive", "--older-than", "0").returncode == 0
    assert (board / "archive" / "task_1.json").exists()
    answer = post(client, site, "/task/1/note", {"version": version_on(page, 1), "text": "again"})
    assert answer.status_code == 303


def test_completing_runs_the_gate_and_shows_its_failure(web, board):
    client, site = web
    assert tasks(board, "update", "4", "--gate", "echo nope; exit 3").returncode == 0
    page = client.get("/task/4").text
    answer = post(
        client, site, "/task/4/complete", {"version": version_on(page, 4)}, headers={"accept": "application/json"}
    )
    error = answer.json()["error"]
    assert error["code"] == "gate_failed" and error["exit"] == 7 and "nope" in error["message"]
    assert record(board, 4)["status"] == "pending"


# -- over the wire ----------------------------------------------------------------------------


@pytest.fixture
def server(board: Path):
    served = Served(board)
    yield served
    served.stop()


def test_a_command_line_change_reaches_the_change_feed(server, board):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/events")
    answer = connection.getresponse()
    assert answer.status == 200 and answer.getheader("content-type").startswith("text/event-stream")
    assert answer.readline() == b"retry: 1000\n"
    assert answer.readline() == b"event: hello\n"
    answer.readline(), answer.readline()
    assert tasks(board, "create", "Seen live").returncode == 0
    line = answer.readline()
    while line.startswith(b":") or line == b"\n":
        line = answer.readline()
    assert line == b"event: change\n"
    connection.close()


def test_the_real_server_refuses_a_rebinding_host(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/", headers={"Host": f"rebind.example:{server.port}"})
    assert connection.getresponse().status == 403
    connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(
        "POST", "/mcp", body="{}", headers={"Host": f"rebind.example:{server.port}", "content-type": "application/json"}
    )
    assert connection.getresponse().status == 403
    connection.close()


def test_mcp_over_streamable_http_lists_and_calls_the_tools(server, board):
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def session() -> tuple[list[str], dict]:
        async with streamable_http_client(f"{server.url}/mcp") as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            names = [tool.name for tool in (await client.list_tools()).tools]
            created = await client.call_tool("task_create", {"subject": "Over HTTP"})
            return names, json.loads(created.content[0].text)

    names, created = anyio.run(session)
    assert {"task_create", "task_get", "task_list", "task_update", "task_claim"} <= set(names)
    assert created["subject"] == "Over HTTP" and record(board, created["id"])["subject"] == "Over HTTP"


def test_beyond_loopback_with_the_token_from_the_environment(board):
    import os
    import signal

    server = subprocess.Popen(
        [sys.executable, "-m", "taskboard", "--dir", str(board), "serve", "--host", "0.0.0.0", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TASKS_SERVE_TOKEN": "from-env"},
        text=True,
    )
    try:
        assert server.stderr is not None
        found = re.search(r"http://0\.0\.0\.0:(\d+)/\?token=from-env", server.stderr.readline())
        assert found, "the address with its token was not printed"
        port = int(found.group(1))
        for headers, status in (
            ({}, 403),
            ({"Authorization": "Bearer nope"}, 403),
            ({"Authorization": "Bearer from-env"}, 200),
        ):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", "/", headers=headers)
            assert connection.getresponse().status == status, headers
            connection.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(10)
        if server.stderr:
            server.stderr.close()
