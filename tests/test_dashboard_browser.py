"""The dashboard in a real browser (Debian's Chromium, driven by Playwright) against a real
daemon with authentication on: signing in, browsing, searching, the graph, jobs launched and
cancelled, live updates, read-only mode, and every page at a desk's and a phone's width with
no console error and no request but to `/api` and `/ui`.

One daemon and one browser serve the module; each test works in a wing of its own. The last
test writes a screenshot of every page at both sizes into docs/dashboard/, which
docs/dashboard.md shows.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.auth import AUTH_ENV, SECRET
from tests.support.browser import PHONE, WIDE, Tab, chromium, open_tab
from tests.support.daemon import REPO, Daemon
from tests.support.http import submit, wait_job

SCREENSHOTS = REPO / "docs" / "dashboard"
WAIT_MS = 15_000
# Each page, with what the earlier tests left in the palace to show (the diary's entry is
# written by the last test itself).
PAGES = (
    "overview",
    "palace",
    "search?q=database&temporal=all",
    "graph",
    "diary?agent=screenshots",
    "jobs",
    "launch",
    "triggers",
    "maintenance",
    "settings",
)
# What a browser logs when a request it made is refused: expected where a test is refused.
REFUSED = re.compile(r"Failed to load resource: the server responded with a status of (401|403)")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    env = {**AUTH_ENV, "MEMCASTLE_WEB_ENABLE": "true", "MEMCASTLE_EXTRACTION_PROVIDER": "heuristic"}
    running = Daemon(tmp_path_factory.mktemp("dashboard"), env=env).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


@pytest.fixture
def client(served: Daemon) -> Iterator[httpx.Client]:
    with served.client(Authorization=f"Bearer {SECRET}") as opened:
        yield opened


@pytest.fixture
def tab(browser: Any, served: Daemon) -> Iterator[Tab]:
    """A signed-in tab at a desk's width; the test's own console must stay clean."""
    opened = open_tab(browser, served.base_url, token=SECRET)
    yield opened
    opened.page.context.close()
    assert opened.errors == [], opened.errors
    assert opened.foreign_requests() == []


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def go(tab: Tab, hash_path: str) -> Any:
    page = tab.page
    page.goto(f"{tab.origin}/ui/#/{hash_path}")  # type: ignore[attr-defined]
    expect(page.locator("h1#page-title")).to_be_visible(timeout=WAIT_MS)  # type: ignore[attr-defined]
    return page


def file_drawer(client: httpx.Client, wing: str, room: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/wings/{wing}/rooms/{room}/drawers", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_sign_in_refuses_a_wrong_token_and_sign_out_forgets_it(
    browser: Any, served: Daemon
) -> None:
    tab = open_tab(browser, served.base_url)
    page: Any = tab.page
    page.goto(f"{served.base_url}/ui/")
    expect(page.get_by_role("heading", name="MemCastle")).to_be_visible(timeout=WAIT_MS)
    page.get_by_label("Password (the API token)").fill("not-the-token-at-all")
    page.get_by_role("button", name="Sign in").click()
    refusal = page.locator(".error")
    expect(refusal).to_contain_text("memcastle::auth::unauthorized", timeout=WAIT_MS)
    expect(refusal.locator(".help")).to_contain_text("Authorization: Bearer")
    assert page.evaluate("sessionStorage.getItem('memcastle.token')") is None

    page.get_by_label("Password (the API token)").fill(SECRET)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".badge")).to_have_text("Live", timeout=WAIT_MS)
    assert page.evaluate("sessionStorage.getItem('memcastle.token')") == SECRET

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('memcastle.token')") is None
    page.context.close()
    assert [e for e in tab.errors if not REFUSED.search(e)] == []
    assert tab.foreign_requests() == []


def test_browse_to_a_drawer_verbatim_with_its_history(
    tab: Tab, client: httpx.Client, wing_name: str
) -> None:
    content = "We deploy with Atlas on Fridays.\n  Indented, verbatim."
    first = file_drawer(client, wing_name, "ops", content=content, name="ops/deploy.md")
    corrected = client.post(
        f"/api/drawers/{first['id']}/supersede", json={"content": "We deploy on Thursdays."}
    )
    assert corrected.status_code == 200, corrected.text
    page = go(tab, "palace")
    page.get_by_role("link", name=wing_name).click()
    page.get_by_role("link", name="ops", exact=True).click()
    page.get_by_role("link", name="ops/deploy.md").first.click()
    expect(page.locator("[data-testid=drawer-content]")).to_be_visible(timeout=WAIT_MS)
    shown = page.locator("[data-testid=drawer-content]").text_content()
    assert shown in (content, "We deploy on Thursdays.")
    expect(page.get_by_role("heading", name="History (2 versions)")).to_be_visible()
    expect(page.get_by_role("heading", name="Likely copies")).to_be_visible()
    expect(page.get_by_role("heading", name="Validity")).to_be_visible()


def test_a_drawer_written_over_rest_appears_on_the_open_page(
    tab: Tab, client: httpx.Client, wing_name: str
) -> None:
    file_drawer(client, wing_name, "notes", content="The first note.")
    page = go(tab, f"palace/{wing_name}/notes")
    expect(page.get_by_text("The first note.")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".badge")).to_have_text("Live", timeout=WAIT_MS)
    written = f"Written over REST while the page was open {uuid.uuid4().hex[:8]}"
    file_drawer(client, wing_name, "notes", content=written)
    expect(page.get_by_text(written)).to_be_visible(timeout=WAIT_MS)


def test_search_with_each_ranking_and_in_time(
    tab: Tab, client: httpx.Client, wing_name: str
) -> None:
    old = file_drawer(client, wing_name, "facts", content="The database we use is Postgres.")
    time.sleep(1.2)
    replaced = client.post(
        f"/api/drawers/{old['id']}/supersede",
        json={"content": "The database we use is SurrealDB."},
    ).json()["replacement"]
    # Vectors of their own, so semantic ranking has something to rank without a model run.
    for drawer, first in ((old, 1.0), (replaced, 0.5)):
        vector = {"profile": "local", "embedding": [first, 1.0] + [0.0] * 382}
        answer = client.put(f"/api/drawers/{drawer['id']}/embedding", json=vector)
        assert answer.status_code == 200, answer.text

    page = go(tab, "search")
    for ranking in ("lexical", "semantic", "hybrid", "auto"):
        page.get_by_label("Query").fill("database we use")
        page.get_by_label("Ranking").select_option(ranking)
        options = page.locator("details", has_text="Scope and options")
        if options.get_attribute("open") is None:
            options.locator("summary").click()
        page.get_by_label("Wing").fill(wing_name)
        page.get_by_label("Embedding profile").fill("local")
        page.get_by_role("button", name="Search").click()
        results = page.get_by_role("region", name="Results")
        if ranking != "auto":
            expect(page.locator("[data-testid=ranking]")).to_have_text(ranking, timeout=WAIT_MS)
        expect(results.locator(".hit")).to_have_count(1, timeout=WAIT_MS)
        expect(results).to_contain_text("SurrealDB")
        expect(results.locator(".score")).to_contain_text("score")
        leg = {"lexical": "lexical", "semantic": "semantic", "hybrid": "semantic"}.get(ranking)
        if leg:
            expect(results.locator(".hit .meta")).to_contain_text(leg)

    # As of a second before the correction, the database was Postgres.
    before = dt.datetime.fromisoformat(old["valid_from"]) + dt.timedelta(seconds=1)
    page.get_by_label("Ranking").select_option("lexical")
    page.get_by_label("Time").select_option("as_of")
    page.get_by_label("As of", exact=True).fill(before.strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Search").click()
    results = page.get_by_role("region", name="Results")
    expect(results).to_contain_text("Postgres", timeout=WAIT_MS)
    expect(results).not_to_contain_text("SurrealDB")
    page.get_by_label("Time").select_option("all")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("region", name="Results").locator(".hit")).to_have_count(
        2, timeout=WAIT_MS
    )


def test_the_graph_page_draws_an_entity_neighbourhood(
    tab: Tab, client: httpx.Client, wing_name: str
) -> None:
    person = f"Dana{uuid.uuid4().hex[:6]}"
    items = [
        {
            "destination": "project",
            "wing": wing_name,
            "content": f"{person} lives in {city}.",
            "tags": [],
            "fact": {
                "op": "add",
                "subject": {"name": person, "kind": "person"},
                "predicate": "located_in",
                "object": {"name": city, "kind": "place"},
            },
        }
        for city in ("Lyon", "Nice")
    ]
    wait_job(client, submit(client, {"type": "checkpoint", "payload": {"items": items}})["id"])
    found = client.get("/api/entities", params={"name": person}).json()["entities"]
    entity = next(each for each in found if each["name"] == person)
    page = go(tab, f"graph?entity={entity['id']}")
    drawing = page.locator("svg.graph")
    expect(drawing.locator("circle")).to_have_count(3, timeout=WAIT_MS)
    expect(drawing).to_contain_text("Lyon")
    expect(drawing).to_contain_text("located in")
    facts = page.locator("table.facts-table tbody tr")
    expect(facts).to_have_count(2)
    expect(facts.first).to_contain_text("checkpoint")
    # A neighbour is a link to its own neighbourhood.
    drawing.get_by_role("link", name=re.compile("Nice")).click()
    expect(page.locator(".graph-head h2")).to_contain_text("Nice", timeout=WAIT_MS)


@pytest.mark.slow
def test_a_job_launched_shows_progress_live_and_is_cancelled_from_jobs(
    tab: Tab, client: httpx.Client, wing_name: str, tmp_path: Path
) -> None:
    """A mine of 2,000 files of 16 KB: long enough to watch and to cancel."""
    tree = tmp_path / "tree"
    tree.mkdir()
    line = "MemCastle keeps what agents learn, verbatim. " * 8 + "\n"
    for index in range(2000):
        (tree / f"note-{index:04}.md").write_text(f"# Note {index}\n" + line * 45)
    page = go(tab, "launch")
    page.get_by_role("textbox", name=re.compile("^Directory")).fill(str(tree))
    page.locator("form", has_text="Start mining").get_by_label("Wing").fill(wing_name)
    page.get_by_role("button", name="Start mining").click()
    followed = page.locator("li.job[data-job]").first
    expect(followed).to_be_visible(timeout=WAIT_MS)
    job_id = followed.get_attribute("data-job")
    progress = followed.locator(".progress-text")

    def current() -> int:
        text = progress.text_content() or "0"
        return int(re.match(r"\d+", text)[0]) if re.match(r"\d+", text) else 0

    seen = {current()}
    deadline = time.monotonic() + 60
    while len({n for n in seen if n > 0}) < 2:
        assert time.monotonic() < deadline, f"no progress shown live: {seen}"
        page.wait_for_timeout(100)
        seen.add(current())

    page.get_by_role("link", name="Jobs", exact=True).click()
    row = page.locator(f'li.job[data-job="{job_id}"]')
    expect(row).to_be_visible(timeout=WAIT_MS)
    row.get_by_role("button", name=f"Cancel job {job_id}").click()
    expect(row).to_have_attribute("data-status", "cancelled", timeout=60_000)
    assert client.get(f"/api/jobs/{job_id}").json()["status"] == "cancelled"


def test_a_trigger_is_enabled_and_fired_from_its_page(
    tab: Tab, client: httpx.Client, tmp_path: Path
) -> None:
    (tmp_path / "note.md").write_text("# Triggered\n\nMined when the trigger fires.\n")
    miner = {"name": "ui-notes", "source": "directory", "locator": str(tmp_path)}
    assert client.post("/api/miners", json=miner).status_code == 201
    trigger = {"name": "ui-hourly", "miner": "ui-notes", "type": "schedule"}
    created = client.post("/api/triggers", json={**trigger, "settings": {"every": "1h"}})
    assert created.status_code == 201, created.text
    try:
        page = go(tab, "triggers")
        card = page.locator("[data-trigger=ui-hourly]")
        expect(card).to_contain_text("disabled", timeout=WAIT_MS)
        card.get_by_role("button", name="Enable").click()
        expect(card).to_contain_text("active", timeout=WAIT_MS)
        expect(card).to_contain_text("Next due")
        card.get_by_role("button", name="Fire now").click()
        expect(card).to_contain_text("Fired: job", timeout=WAIT_MS)
        fired = client.get("/api/triggers/ui-hourly").json()["state"]
        assert fired["fires"] == 1 and fired["last_job"]
        wait_job(client, fired["last_job"])
    finally:
        client.delete("/api/triggers/ui-hourly")
        client.delete("/api/miners/ui-notes")


def test_read_only_mode_disables_every_write_control_and_a_forced_write_is_refused(
    browser: Any, served: Daemon, client: httpx.Client, wing_name: str
) -> None:
    file_drawer(client, wing_name, "notes", content="Read, never written.")
    submit(client, {"type": "demo", "steps": 200, "step_ms": 100})
    tab = open_tab(browser, served.base_url, token=SECRET)
    page = go(tab, "overview")
    page.get_by_label("Memory mode").select_option("read_only")
    expect(page.get_by_text("Read-only mode: every write control is disabled.")).to_be_visible()
    for where in (f"palace/{wing_name}/notes", "launch", "jobs", "maintenance", "diary?agent=a"):
        page = go(tab, where)
        expect(page.locator("[data-write]").first).to_be_attached(timeout=WAIT_MS)
        for control in page.locator("[data-write]").all():
            expect(control).to_be_disabled()
    assert page.evaluate("sessionStorage.getItem('memcastle.mode')") == "read_only"

    # Forced: the controls enabled by hand, the daemon still refuses, and the page says why.
    page = go(tab, f"palace/{wing_name}/notes")
    page.get_by_text("File a drawer here").click()
    page.evaluate(
        "document.querySelectorAll('fieldset, [data-write]').forEach(e => e.disabled = false)"
    )
    page.get_by_label("Content").fill("Forced through a read-only tab.")
    page.get_by_role("button", name="File").click()
    refusal = page.locator(".error")
    expect(refusal).to_contain_text("memcastle::mode::forbidden", timeout=WAIT_MS)
    expect(refusal.locator(".help")).to_contain_text("Full mode")
    listed = client.get(f"/api/wings/{wing_name}/rooms/notes/drawers").json()["drawers"]
    assert [d["preview"] for d in listed] == ["Read, never written."]
    page.context.close()
    assert [e for e in tab.errors if not REFUSED.search(e)] == []


@pytest.mark.slow
@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["wide", "phone"])
def test_every_page_renders_without_console_errors_and_fits_the_screen(
    browser: Any, served: Daemon, client: httpx.Client, viewport: dict[str, int]
) -> None:
    """Every page at 1280x800 and at 390 px wide, keyboard-reachable from the skip link, with
    no error logged, no request but to `/api` and `/ui`, and nothing wider than the screen.
    Each is saved as docs/dashboard/<page>-<size>.png."""
    size = "wide" if viewport == WIDE else "phone"
    tab = open_tab(browser, served.base_url, viewport=viewport, token=SECRET)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    entry = {"agent_identity": "screenshots", "wing": "journal", "content": "Saw every page."}
    assert client.post("/api/diary", json=entry).status_code in (200, 201)
    for address in PAGES:
        name = address.split("?")[0]
        page = go(tab, address)
        expect(page.locator("[aria-busy=true]")).to_have_count(0, timeout=WAIT_MS)
        expect(page.locator(".badge")).to_have_text("Live", timeout=WAIT_MS)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} is {overflow}px wider than the {size} screen"
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{size}.png"), full_page=True)
    # From a fresh load, the keyboard reaches the skip link first, then the page's controls.
    page.reload()
    expect(page.locator("h1#page-title")).to_be_visible(timeout=WAIT_MS)
    focused = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.textContent.trim()"))
        if focused[-1] == "Refresh":
            break
    assert focused[0] == "Skip to content" and focused[-1] == "Refresh", focused
    if size == "phone":
        page.get_by_role("button", name="Menu").click()
        page.get_by_role("link", name="Settings").click()
        expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    page.context.close()
    assert tab.errors == []
    assert tab.foreign_requests() == []
