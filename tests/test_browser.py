"""The board in a real browser (DESIGN §12): the distribution's headless Chromium,
driven through chromium-driver by selenium, against a real `tasks serve`. One browser
for the module; every test waits on a condition in the page, never on a clock.

The board renders; a change made by the command line appears without a reload; claim
and complete from the page are seen by the command line; cards show parents and dates
as the terminal does; a refused action shows the command line's message; the page is
usable 375 px wide; nothing is logged as an error in the browser's console.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from served import Served, chromium, tasks

WAIT = 20  # seconds a condition may take on a loaded machine before the test fails


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="tasks-chromium-")
    driver = chromium(Path(profile), 1280, 900, console_log=True)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("browser") / ".tasks"
    for args in (
        ("create", "Write parser", "--priority", "1"),
        ("create", "Write tests", "--blocked-by", "1"),
        ("create", "Held by bob"),
        ("create", "Claimed by keyboard"),
        ("create", "Waits on bob", "--blocked-by", "3"),
    ):
        assert tasks(folder, *args).returncode == 0
    assert tasks(folder, "claim", "3", caller="bob").returncode == 0
    return folder


@pytest.fixture(scope="module")
def server(board):
    served = Served(board)
    yield served
    served.stop()


def wait(driver, condition, message: str):
    return WebDriverWait(driver, WAIT).until(lambda _driver: condition(), message)


def errors(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def live(driver) -> None:
    """Wait until the page's change feed is open (the script listens)."""
    driver.execute_script(
        "window.__open = false; const s = new EventSource('/events');"
        "s.addEventListener('hello', () => { window.__open = true; s.close(); });"
    )
    wait(driver, lambda: driver.execute_script("return window.__open"), "the change feed never said hello")


def text_of(driver, selector: str) -> str:
    """The text of an element now, read in one step (a live update may swap it any time)."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", selector
    )


def click(driver, element_id: str) -> None:
    """Click the element with this id, found again if a live update swapped it meanwhile."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    def clicked() -> bool:
        try:
            driver.find_element(By.ID, element_id).click()
        except (NoSuchElementException, StaleElementReferenceException):
            return False
        return True

    wait(driver, clicked, f"#{element_id} never took a click")


def record(board: Path, task_id: int) -> dict:
    return json.loads(tasks(board, "get", str(task_id), "--json").stdout)


def test_the_board_renders(browser, server):
    browser.get(server.url + "/")
    headings = [h.text.rsplit(" ", 1)[0] for h in browser.find_elements(By.CSS_SELECTOR, ".column h2")]
    assert headings == ["⊘ Blocked", "○ Ready", "◐ In progress", "✔ Done"]
    assert "Waits on bob" in text_of(browser, ".column.blocked")
    assert "@bob" in text_of(browser, ".column.in_progress")
    assert errors(browser) == []


def test_a_command_line_change_appears_without_reload(browser, server, board):
    browser.get(server.url + "/")
    live(browser)
    browser.execute_script("window.__same_page = 'yes'")
    assert tasks(board, "create", "Made at the shell").returncode == 0
    ready = lambda: "Made at the shell" in text_of(browser, ".column.ready")  # noqa: E731
    wait(browser, ready, "the new task never showed")
    assert browser.execute_script("return window.__same_page") == "yes"  # no reload: the script swapped it in
    assert errors(browser) == []


def test_claim_and_complete_from_the_page_are_seen_by_the_command_line(browser, server, board):
    browser.get(server.url + "/")
    name = browser.find_element(By.ID, "who-name")
    name.send_keys("alice")
    browser.find_element(By.CSS_SELECTOR, "#who button").click()
    wait(browser, lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-user") == "alice", "no name")
    click(browser, "claim-1")
    wait(browser, lambda: record(board, 1)["status"] == "in_progress", "the claim never reached the board")
    assert record(board, 1)["owner"] == "alice"
    click(browser, "complete-1")  # once the card has moved to In progress
    wait(browser, lambda: record(board, 1)["status"] == "completed", "the completion never reached the board")
    log = json.loads(tasks(board, "log", "1", "--json").stdout)
    assert [(e["actor"], e["event"]) for e in log][-2:] == [("alice", "claimed"), ("alice", "completed")]
    done = lambda: "Write parser" in text_of(browser, ".column.completed")  # noqa: E731
    wait(browser, done, "the card never moved to Done")
    assert errors(browser) == []


def named(browser, server, name: str = "alice") -> None:
    """The page user's name, as the browser remembers it once asked."""
    browser.get(server.url + "/")
    browser.add_cookie({"name": "tasks_name", "value": name, "path": "/"})
    browser.get(server.url + "/")


def rename(driver, name: str) -> None:
    """Name yourself on the page, as a person does (the form at the top)."""
    field = driver.find_element(By.ID, "who-name")
    field.clear()
    field.send_keys(name)
    driver.find_element(By.CSS_SELECTOR, "#who button").click()
    wait(driver, lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-user") == name, "no name")


def test_a_refused_action_shows_the_command_lines_message(browser, tmp_path):
    """A page that offers an action the board then refuses: bob's page offers Complete on
    #1, which bob holds; in another tab of the same browser its user names themselves alice
    (the name is the browser's; nothing on the board changed, so no feed tells bob's page).
    The Complete still shown is refused to alice with the words `tasks --as alice done 1`
    says, nothing is written, and the page then offers alice no Complete there and says
    she is alice.

    Deterministic: the board is this test's own and nothing writes to it once the server
    has started, so no live update can take the button away before the click."""
    board = tmp_path / ".tasks"
    assert tasks(board, "create", "Held by bob").returncode == 0
    assert tasks(board, "claim", "1", caller="bob").returncode == 0
    before = (board / "task_1.json").read_bytes()
    served = Served(board)
    first = None
    try:
        named(browser, served, "bob")
        first = browser.current_window_handle
        assert browser.find_elements(By.ID, "complete-1") != []
        browser.switch_to.new_window("tab")
        browser.get(served.url + "/")
        rename(browser, "alice")
        wait(browser, lambda: browser.find_elements(By.ID, "complete-1") == [], "this tab never caught up")
        browser.close()
        browser.switch_to.window(first)
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-user") == "bob"  # left as it was
        click(browser, "complete-1")
        flash = browser.find_element(By.ID, "flash")
        wait(browser, lambda: flash.is_displayed() and flash.text, "no answer shown")
        cli = tasks(board, "done", "1", caller="alice")  # after the page: nothing writes while it is open
        assert cli.returncode == 4
        assert flash.text == cli.stderr.strip().removeprefix("tasks: error: ")
        assert "held by bob" in flash.text and "you are alice" in flash.text
        assert flash.get_attribute("role") == "alert"
        assert (board / "task_1.json").read_bytes() == before  # nothing written
        gone = lambda: browser.find_elements(By.ID, "complete-1") == []  # noqa: E731
        wait(browser, gone, "the page went on offering alice bob's Complete")
        said = browser.execute_script("return [document.getElementById('who-name').value, document.body.dataset.user]")
        assert said == ["alice", "alice"]  # and says who the board now takes its user to be
        assert errors(browser) == []  # a refusal is an answer, not a failed request
    finally:
        if first is not None and browser.current_window_handle != first:
            browser.close()
            browser.switch_to.window(first)
        browser.get("about:blank")  # leave before the server stops: its feed failing is no error of the page
        served.stop()


def test_a_page_left_stale_is_refused_with_what_changed(browser, tmp_path):
    """A page whose live update has not come yet still offers Claim on #1 after bob claimed
    it at the shell: alice's click is refused with what changed since her page showed it
    (DESIGN §12), nothing is written, and the page catches up at once.

    Deterministic: the page's change feed is held back in the browser's own network stack
    (DevTools' Fetch domain pauses the /events request), so the page cannot learn of bob's
    claim before the click; let go, the feed delivers the next change as ever."""
    board = tmp_path / ".tasks"
    assert tasks(board, "create", "Up for grabs").returncode == 0
    served = Served(board)
    try:
        browser.get(served.url + "/")
        browser.add_cookie({"name": "tasks_name", "value": "alice", "path": "/"})
        browser.execute_cdp_cmd("Fetch.enable", {"patterns": [{"urlPattern": "*/events*", "requestStage": "Request"}]})
        browser.get(served.url + "/")
        assert tasks(board, "claim", "1", caller="bob").returncode == 0
        click(browser, "claim-1")  # still there: nothing told the page
        flash = browser.find_element(By.ID, "flash")
        wait(browser, lambda: flash.is_displayed() and flash.text, "no answer shown")
        assert flash.text.startswith(
            '#1 changed since your page showed it: status "pending" → "in_progress"; owner "" → "bob"; '
            "nothing was written"
        ), flash.text
        assert flash.get_attribute("role") == "alert"
        log = json.loads(tasks(board, "log", "1", "--json").stdout)
        assert [(e["actor"], e["event"]) for e in log][-1] == ("bob", "claimed")
        assert record(board, 1)["owner"] == "bob"
        gone = lambda: browser.find_elements(By.ID, "claim-1") == []  # noqa: E731
        wait(browser, gone, "the page never caught up after the refusal")
        browser.execute_cdp_cmd("Fetch.disable", {})  # the held feed goes through
        live(browser)
        assert tasks(board, "done", "1", caller="bob").returncode == 0
        done = lambda: "Up for grabs" in text_of(browser, ".column.completed")  # noqa: E731
        wait(browser, done, "the feed, let go, never delivered the next change")
        assert errors(browser) == []
    finally:
        browser.execute_cdp_cmd("Fetch.disable", {})
        browser.get("about:blank")  # leave before the server stops: its feed failing is no error of the page
        served.stop()


def test_a_task_held_by_someone_else_offers_neither_complete_nor_release(browser, server, board):
    """bob holds #3: alice's page offers neither Complete nor Release on its card or its
    page (the board would refuse her both, DESIGN §3), nor does a page whose user has not
    said who they are (it asks first, and is not bob by default); bob's does, and naming
    yourself bob on the page brings them without a reload."""
    for name in ("alice", ""):
        if name:
            named(browser, server, name)
        else:
            browser.get(server.url + "/")
            browser.delete_cookie("tasks_name")
        for path in ("/", "/task/3"):
            browser.get(server.url + path)
            assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-user") == name
            assert "@bob" in text_of(browser, "main")
            assert browser.find_elements(By.CSS_SELECTOR, "#complete-3, #release-3") == [], (name, path)
    browser.get(server.url + "/")
    browser.execute_script("window.__same_page = 'yes'")
    rename(browser, "bob")
    offered = lambda: len(browser.find_elements(By.CSS_SELECTOR, "#complete-3, #release-3")) == 2  # noqa: E731
    wait(browser, offered, "bob's page never offered Complete and Release")
    assert browser.execute_script("return window.__same_page") == "yes"
    browser.get(server.url + "/task/3")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#complete-3, #release-3")) == 2
    assert record(board, 3)["owner"] == "bob" and record(board, 3)["status"] == "in_progress"
    assert errors(browser) == []


def test_a_keyboard_alone_can_claim(browser, server, board):
    from selenium.webdriver.common.keys import Keys

    named(browser, server, "kim")
    body = browser.find_element(By.TAG_NAME, "body")
    for _ in range(300):
        if browser.execute_script("return document.activeElement.id") == "claim-4":
            break
        browser.switch_to.active_element.send_keys(Keys.TAB) if browser.switch_to.active_element else body.send_keys(
            Keys.TAB
        )
    assert browser.execute_script("return document.activeElement.id") == "claim-4"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait(browser, lambda: record(board, 4)["owner"] == "kim", "Enter on the focused Claim button claimed nothing")
    assert errors(browser) == []


def test_375_pixels_wide(browser, server):
    """A phone's width (headless Chromium's window is never narrower than 500 px: the
    viewport is emulated): nothing wider than the screen, the columns stacked."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 375, "height": 800, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        for path in ("/", "/task/2", "/graph", "/journal"):
            browser.get(server.url + path)
            width = browser.execute_script("return document.documentElement.clientWidth")
            assert width == 375
            assert browser.execute_script("return document.documentElement.scrollWidth") <= width, path
            for control in browser.find_elements(By.CSS_SELECTOR, "button, input:not([type=hidden]), select, textarea"):
                if control.is_displayed():
                    right = control.location["x"] + control.size["width"]
                    assert right <= width + 1, (path, control.get_attribute("outerHTML"))
            if path == "/":
                columns = browser.find_elements(By.CSS_SELECTOR, ".column")
                assert len({column.location["x"] for column in columns}) == 1  # stacked, one above the other
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert errors(browser) == []


def test_every_control_has_a_label(browser, server):
    for path in ("/", "/task/2", "/graph", "/journal"):
        browser.get(server.url + path)
        unlabelled = browser.execute_script(
            "return Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))"
            ".filter(c => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim())"
            ".map(c => c.outerHTML)"
        )
        assert unlabelled == [], path
    assert errors(browser) == []


def test_cards_show_parents_and_dates_and_follow_the_command_line(browser, tmp_path):
    """A parent's progress, a child's parent, due and overdue on the cards (the terminal's
    words, DESIGN §14), and a child finished at the shell moves its parent's count live."""
    board = tmp_path / ".tasks"
    for args in (
        ("create", "Epic"),
        ("create", "Child one", "--parent", "1", "--due", "2099-01-01"),
        ("create", "Child two", "--parent", "1", "--due", "2020-01-01"),
    ):
        assert tasks(board, *args).returncode == 0
    served = Served(board)
    try:
        browser.get(served.url + "/")
        live(browser)
        assert text_of(browser, ".column.blocked .plan") == "0/2 done"
        plans = browser.execute_script(
            "return Array.from(document.querySelectorAll('.column.ready .card'))"
            ".map(c => [c.querySelector('.id').textContent, c.querySelector('.plan').textContent,"
            " c.querySelector('.plan').className, getComputedStyle(c.querySelector('.plan')).color])"
        )
        by_id = {task_id: rest for task_id, *rest in plans}
        assert by_id["#2"][:2] == ["part of #1 · due 2099-01-01", "plan"]
        assert by_id["#3"][:2] == ["part of #1 · overdue since 2020-01-01", "plan overdue"]
        assert by_id["#3"][2] != by_id["#2"][2]  # overdue is told in the trouble colour
        assert tasks(board, "claim", "2", caller="ann").returncode == 0
        assert tasks(board, "done", "2", caller="ann").returncode == 0
        moved = lambda: text_of(browser, ".column.blocked .plan") == "1/2 done"  # noqa: E731
        wait(browser, moved, "the parent's progress never moved")
        assert text_of(browser, ".column.completed .plan") == "part of #1"
        assert errors(browser) == []
    finally:
        browser.get("about:blank")  # leave before the server stops: its feed failing is no error of the page
        served.stop()


def test_a_task_reserved_for_someone_else_offers_no_claim_until_you_are_them(browser, tmp_path):
    """A ready task reserved for bob: alice's page offers no Claim (the command line would
    refuse hers); naming yourself bob on the page brings it, without a reload."""
    board = tmp_path / ".tasks"
    assert tasks(board, "create", "For bob", "--owner", "bob").returncode == 0
    served = Served(board)
    try:
        named(browser, served, "alice")
        assert "For bob" in text_of(browser, ".column.ready") and "@bob" in text_of(browser, ".column.ready")
        assert browser.find_elements(By.ID, "claim-1") == []
        browser.execute_script("window.__same_page = 'yes'")
        name = browser.find_element(By.ID, "who-name")
        name.clear()
        name.send_keys("bob")
        browser.find_element(By.CSS_SELECTOR, "#who button").click()
        wait(browser, lambda: browser.find_elements(By.ID, "claim-1") != [], "bob's page never offered the claim")
        assert browser.execute_script("return window.__same_page") == "yes"
        click(browser, "claim-1")
        wait(browser, lambda: record(board, 1)["status"] == "in_progress", "bob's claim never reached the board")
        assert errors(browser) == []
    finally:
        browser.get("about:blank")  # leave before the server stops: its feed failing is no error of the page
        served.stop()


def test_a_page_that_lost_its_server_says_so_and_catches_up(browser, tmp_path):
    import socket

    board = tmp_path / ".tasks"
    assert tasks(board, "create", "Before the restart").returncode == 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = Served(board, port=port)
    try:
        browser.get(first.url + "/")
        live(browser)
    finally:
        first.stop()
    banner = browser.find_element(By.ID, "connection")
    wait(browser, banner.is_displayed, "the page never said it lost the server")
    assert "lost" in banner.text
    assert tasks(board, "create", "Made while it was away").returncode == 0
    second = Served(board, port=port)
    try:
        wait(browser, lambda: not banner.is_displayed(), "the page never said it was back")
        ready = lambda: "Made while it was away" in text_of(browser, ".column.ready")  # noqa: E731
        wait(browser, ready, "the page never caught up")
    finally:
        second.stop()
    severe = [entry["message"] for entry in errors(browser)]
    # only the feed's own failed reconnects, and the page's icon when the browser asked for
    # it (it does so when it pleases, after the page loaded) while the server was away
    assert all("/events" in message or "/static/icon.svg" in message for message in severe), severe
