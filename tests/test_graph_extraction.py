"""The extract job end to end, over real HTTP against real daemons (graph.md sections 3 to 5).

A daemon with the heuristic provider mines generated directories and files notes; the extract
job the daemon queues by itself after each mine and note reads them, and the graph routes show
what it found: entities with their kinds, relationships with provenance and validity, and, once
a mined file is edited and mined again, the old facts closed and superseded by the new ones.
Refusals: no provider (400 not_configured), a read-only session (403). A daemon with a command
provider that fails shows the job failing with 502 `memcastle::extract::failed` and the next run
reading what the failed one did not reach.

Every wait polls a condition with a deadline. A run started after a mine completed (or a note was
filed) has seen its drawers, so that is what the tests wait for.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.events import EventStream, Frame, expect_open
from tests.support.files import BASE_NS, SECOND, tree, write
from tests.support.http import TERMINAL, Job, assert_error, submit, wait_job
from tests.support.instants import instant
from tests.support.waits import wait_for

WAIT = 60.0
READ_ONLY = {"X-MemCastle-Mode": "read_only"}


def at_ns(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns / SECOND, dt.UTC)


def extract_jobs(client: httpx.Client) -> list[Job]:
    response = client.get("/api/jobs", params={"kind": "extract", "limit": 200})
    assert response.status_code == 200, response.text
    return response.json()["jobs"]


def extracted_after(client: httpx.Client, since: str, status: str = "completed") -> Job:
    """The first extract job that started after `since` (an RFC 3339 instant), once it ended."""

    def found() -> Job | None:
        ended = [
            job
            for job in extract_jobs(client)
            if job["started_at"]
            and instant(job["started_at"], require_z=False) > instant(since, require_z=False)
            and job["status"] in TERMINAL
        ]
        return min(ended, key=lambda job: job["started_at"]) if ended else None

    job = wait_for(found, timeout=WAIT, what=f"an extract job started after {since}")
    assert job["status"] == status, job
    return job


def mine(client: httpx.Client, path: Path, wing: str) -> Job:
    return wait_job(
        client,
        submit(client, {"type": "mine", "path": str(path), "wing": wing})["id"],
        timeout=WAIT,
    )


def entity(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.get("/api/entities", params={"name": name, "limit": 200})
    assert response.status_code == 200, response.text
    found = [row for row in response.json()["entities"] if row["name"] == name]
    assert len(found) == 1, (name, response.json())
    return found[0]


def no_entity(client: httpx.Client, name: str) -> bool:
    response = client.get("/api/entities", params={"name": name, "limit": 200})
    return all(row["name"] != name for row in response.json()["entities"])


def relationships(client: httpx.Client, entity_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/entities/{entity_id}/relationships", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    names = {key: ref["name"] for key, ref in body["entities"].items()}
    return [
        {**row, "from_name": names[row["from"]], "to_name": names[row["to"]]}
        for row in body["relationships"]
    ]


def room_drawers(client: httpx.Client, wing: str, room: str = "files") -> list[dict[str, Any]]:
    response = client.get(f"/api/wings/{wing}/rooms/{room}/drawers", params={"limit": 200})
    assert response.status_code == 200, response.text
    return response.json()["drawers"]


@pytest.fixture(scope="module")
def extracting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon whose extraction provider is the heuristic one."""
    running = Daemon(
        tmp_path_factory.mktemp("extracting"), {"MEMCASTLE_EXTRACTION_PROVIDER": "heuristic"}
    ).start()
    yield running
    running.stop()


@pytest.fixture
def client(extracting: Daemon) -> Iterator[httpx.Client]:
    with extracting.client() as opened:
        yield opened


TEAM = """# Team

Alice works on Atlas. Alice is a member of the Platform Team.
The Platform Team uses PostgreSQL and Grafana.
"""
INFRA = """Atlas depends on PostgreSQL. Atlas is based in Berlin.

```
Nobody uses This Code.
```
"""


def test_a_mined_directory_is_read_into_entities_and_relations(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tree(tmp_path / "docs", {"team.md": TEAM, "infra.md": INFRA})
    mined = mine(client, root, wing_name)
    job = extracted_after(client, mined["completed_at"])
    assert job["requested_by"] == "auto"
    assert job["kind"] == {"type": "extract"}
    assert job["priority"] == 25
    assert job["result"]["drawers"] >= 2
    drawers = {row["source"]["origin"]["document"]: row for row in room_drawers(client, wing_name)}

    kinds = {
        name: entity(client, name)["kind"]
        for name in ("Alice", "Atlas", "Platform Team", "PostgreSQL", "Grafana", "Berlin")
    }
    assert kinds == {
        "Alice": "other",
        "Atlas": "project",
        "Platform Team": "organization",
        "PostgreSQL": "tool",
        "Grafana": "other",
        "Berlin": "place",
    }
    assert no_entity(client, "Team")  # a heading alone at the start of its sentence
    assert no_entity(client, "This Code")  # inside a fenced code block

    facts = {
        (row["from_name"], row["predicate"], row["to_name"]): row
        for name in ("Alice", "Atlas", "Platform Team")
        for row in relationships(client, entity(client, name)["id"])
    }
    assert set(facts) == {
        ("Alice", "works_on", "Atlas"),
        ("Alice", "member_of", "Platform Team"),
        ("Platform Team", "uses", "PostgreSQL"),
        ("Atlas", "depends_on", "PostgreSQL"),
        ("Atlas", "located_in", "Berlin"),
    }
    works = facts[("Alice", "works_on", "Atlas")]
    assert works["confidence"] == 0.6
    assert works["valid_to"] is None
    assert works["lifecycle"]["state"] == "current"
    # Valid from the file's modification time, the time the source gives for the document.
    assert instant(works["valid_from"], require_z=False) == at_ns(BASE_NS)
    assert instant(
        facts[("Atlas", "located_in", "Berlin")]["valid_from"], require_z=False
    ) == at_ns(BASE_NS + SECOND)
    provenance = works["provenance"]
    assert provenance["drawer"] == drawers["team.md"]["id"]
    assert provenance["extractor"] == "heuristic"
    assert provenance["job_id"] == job["id"]
    assert provenance["origin"]["document"] == "team.md"
    assert provenance["origin"]["source"] == "directory"

    # Read once: a run by hand finds nothing left in the wing.
    again = wait_job(
        client, submit(client, {"type": "extract", "wing": wing_name})["id"], timeout=WAIT
    )
    assert again["kind"] == {"type": "extract", "wing": wing_name}
    assert again["result"] == {"drawers": 0, "entities": 0, "relations": 0, "closed": 0}


def test_an_edited_file_closes_its_facts_and_the_new_ones_supersede_them(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tree(tmp_path / "moves", {"orion.md": "Orion is based in Lisbon.\n"})
    extracted_after(client, mine(client, root, wing_name)["completed_at"])
    (old_drawer,) = room_drawers(client, wing_name)
    write(root, "orion.md", "Orion is based in Madrid.\n", BASE_NS + 10 * SECOND)
    second = mine(client, root, wing_name)
    assert second["result"]["superseded"] == 1
    job = extracted_after(client, second["completed_at"])
    assert job["result"]["closed"] >= 1
    closed_at = client.get(f"/api/drawers/{old_drawer['id']}").json()["valid_to"]
    assert closed_at is not None

    orion = entity(client, "Orion")
    assert [(r["predicate"], r["to_name"]) for r in relationships(client, orion["id"])] == [
        ("located_in", "Madrid")
    ]
    every = {r["to_name"]: r for r in relationships(client, orion["id"], include_expired="true")}
    lisbon, madrid = every["Lisbon"], every["Madrid"]
    assert lisbon["valid_to"] is not None
    assert instant(lisbon["valid_to"], require_z=False) == instant(closed_at, require_z=False)
    assert lisbon["lifecycle"]["state"] == "superseded"
    assert madrid["valid_to"] is None
    assert madrid["lifecycle"]["state"] == "current"
    assert instant(madrid["valid_from"], require_z=False) == at_ns(BASE_NS + 10 * SECOND)
    assert madrid["provenance"]["drawer"] != old_drawer["id"]
    (link,) = [link for link in lisbon["lifecycle"]["links"] if link["kind"] == "supersedes"]
    assert (link["from"], link["to"], link["origin"]) == (madrid["id"], lisbon["id"], "inferred")
    assert link["evidence"] == madrid["provenance"]["drawer"]
    # Before the edited file was written, Lisbon was the current fact.
    earlier = at_ns(BASE_NS + 5 * SECOND).isoformat().replace("+00:00", "Z")
    (then,) = relationships(client, orion["id"], as_of=earlier)
    assert (then["to_name"], then["lifecycle"]["state"]) == ("Lisbon", "current")
    # From the edit (the new revision's time) to the mine that closed Lisbon both held: the
    # new revision supersedes the old one's fact, it does not contradict it.
    assert [link["kind"] for link in lisbon["lifecycle"]["links"]] == ["supersedes"]
    between = at_ns(BASE_NS + 20 * SECOND).isoformat().replace("+00:00", "Z")
    states = {
        row["to_name"]: row["lifecycle"]["state"]
        for row in relationships(client, orion["id"], as_of=between)
    }
    assert states == {"Lisbon": "current", "Madrid": "current"}


def test_notes_are_read_and_manual_drawers_are_not(client: httpx.Client, wing_name: str) -> None:
    manual = client.post(
        f"/api/wings/{wing_name}/rooms/desk/drawers", json={"content": "Quinn uses Vim."}
    )
    assert manual.status_code == 201, manual.text
    diary = client.post(
        "/api/diary",
        json={"wing": wing_name, "agent_identity": "bot", "content": "Ursula uses Nano."},
    )
    assert diary.status_code == 201, diary.text
    note = client.post("/api/notes", json={"wing": wing_name, "content": "Zed uses Emacs."})
    assert note.status_code == 201, note.text
    filed = dt.datetime.now(dt.UTC).isoformat()
    job = extracted_after(client, filed)
    assert job["requested_by"] == "auto"
    zed = entity(client, "Zed")
    (uses,) = relationships(client, zed["id"])
    assert (uses["predicate"], uses["to_name"]) == ("uses", "Emacs")
    assert uses["provenance"]["drawer"] == note.json()["id"]
    assert "origin" not in uses["provenance"] or not uses["provenance"]["origin"]
    assert no_entity(client, "Quinn") and no_entity(client, "Ursula")


def test_what_extraction_records_is_announced_on_the_event_stream(
    extracting: Daemon, client: httpx.Client, wing_name: str
) -> None:
    stream = EventStream(extracting)
    try:
        assert stream.response.status_code == 200
        expect_open(stream)
        note = client.post("/api/notes", json={"wing": wing_name, "content": "Wendolyn uses Kak."})
        assert note.status_code == 201, note.text
        extracted_after(client, dt.datetime.now(dt.UTC).isoformat())
        for name in ("Wendolyn", "Kak"):
            found = entity(client, name)["id"]
            frame = stream.wait(
                lambda item, found=found: (
                    isinstance(item, Frame)
                    and item.event == "entity"
                    and item.data.get("id") == found
                    and item.data.get("action") == "created"
                ),
                what=f"{name} created",
            )
            assert frame.data == {"kind": "entity", "action": "created", "id": found}
    finally:
        stream.close()


def test_extract_is_a_write_refused_in_a_read_only_session(client: httpx.Client) -> None:
    refused = client.post("/api/jobs", json={"type": "extract"}, headers=READ_ONLY)
    assert (
        "`extract`"
        in assert_error(refused, 403, "memcastle::mode::forbidden", explained=False)["error"]
    )
    bad = client.post("/api/jobs", json={"type": "extract", "path": "/tmp"})
    assert_error(bad, 400, "memcastle::input::invalid", explained=False)
    missing = client.post("/api/jobs", json={"type": "extract", "wing": "no-such-wing-here"})
    assert missing.status_code == 404, missing.text


def test_without_a_provider_extract_is_not_configured(daemon: Daemon) -> None:
    with daemon.client() as client:
        refused = client.post("/api/jobs", json={"type": "extract"})
        body = assert_error(refused, 400, "memcastle::extract::not_configured", explained=False)
        assert "[extraction]" in body["help"]
        assert extract_jobs(client) == [], "nothing queues an extract job without a provider"


FAILING = r"""
import json, os, sys
request = json.load(sys.stdin)
if os.path.exists(sys.argv[1]) and any("Broken" in text for text in request["texts"]):
    sys.stderr.write("the model crashed\n")
    sys.exit(1)
out = []
for text in request["texts"]:
    first, _, last = text.strip().rstrip(".").partition(" uses ")
    out.append({
        "entities": [{"name": first, "kind": "person"}, {"name": last, "kind": "Tool"}],
        "relations": [{"subject": first, "predicate": "USES", "object": last, "confidence": 0.8},
                      {"subject": first, "predicate": "owns", "object": last, "confidence": 0.1}],
    })
print(json.dumps({"extractions": out}))
"""


def test_a_failing_command_fails_the_job_and_the_next_run_reads_what_is_left(
    fresh_daemon: Daemon, tmp_path: Path, wing_name: str
) -> None:
    script = tmp_path / "extract.py"
    script.write_text(FAILING)
    flag = tmp_path / "broken"
    flag.touch()
    config = tmp_path / "memcastle.toml"
    argv = json.dumps([sys.executable, str(script), str(flag)])
    config.write_text(f'[extraction]\nprovider = "command"\ncommand = {argv}\nbatch_size = 1\n')
    fresh_daemon.env["MEMCASTLE_CONFIG"] = str(config)
    fresh_daemon.start()
    root = tree(
        tmp_path / "src",
        {"a.md": "Amber uses Vim.", "b.md": "Broken uses Glue.", "c.md": "Cyrus uses Git."},
    )
    with fresh_daemon.client() as client:
        # Queued at start-up, before the daemon serves: it finds nothing to read.
        (first,) = extract_jobs(client)
        assert first["requested_by"] == "auto"
        assert wait_job(client, first["id"], timeout=WAIT)["result"]["drawers"] == 0
        mined = mine(client, root, wing_name)
        failed = extracted_after(client, mined["completed_at"], status="failed")
        assert failed["error_code"] == "memcastle::extract::failed"
        assert "exited with status 1: the model crashed" in failed["error"]
        # The drawer before the failing one was read; those from it on were not.
        amber = entity(client, "Amber")
        assert amber["kind"] == "person"
        (uses,) = relationships(client, amber["id"])
        assert (uses["predicate"], uses["to_name"], uses["confidence"]) == ("uses", "Vim", 0.8)
        assert uses["provenance"]["extractor"] == "command"
        assert entity(client, "Vim")["kind"] == "tool"
        assert no_entity(client, "Cyrus")

        flag.unlink()
        again = wait_job(client, submit(client, {"type": "extract"})["id"], timeout=WAIT)
        assert again["result"] == {"drawers": 2, "entities": 4, "relations": 2, "closed": 0}
        assert entity(client, "Cyrus")["kind"] == "person"
        assert [r["to_name"] for r in relationships(client, entity(client, "Broken")["id"])] == [
            "Glue"
        ]
