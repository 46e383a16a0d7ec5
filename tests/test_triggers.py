"""Triggers: the `[[triggers]]` section of the configuration file, managed by `/api/triggers`
and `memcastle trigger`, read by MCP, and run by the daemon's supervisor.

The rules (settings per type, durations, timetables) are checked on the functions; the rest
through real daemons: REST and the file, a schedule that fires, coalesces and survives a
restart, a watch that fires once for a burst of changes, and the CLI. The webhook listener has
its own module (`test_webhooks.py`).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sources.section_file import DefinitionError
from sources.triggers import next_due, parse_duration, parse_trigger
from tests.support.cli import cli_json
from tests.support.daemon import Daemon
from tests.support.events import EventStream, Frame, expect_open
from tests.support.http import assert_error, submit, wait_job
from tests.support.mcp_client import call, connect
from tests.support.waits import wait_for

HEAD = """# Kept by hand.
[logging]
level = "info"
"""


def miners(directory: Path) -> str:
    return f"""
[[miners]]
name = "notes"
source = "directory"
locator = "{directory}"
wing = "triggered"
"""


TAIL = """
# After the triggers.
[dedup]
enabled = true
"""


# The rules ---------------------------------------------------------------------------------------

T = {"name": "t", "miner": "m"}


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"name": "T", "miner": "m", "type": "schedule", "every": "1h"}, "name"),
        ({"name": "reload", "miner": "m", "type": "schedule", "every": "1h"}, "name"),
        ({"name": "t", "type": "schedule", "every": "1h"}, "miner"),
        ({**T, "type": "cron"}, "type"),
        ({**T, "type": "schedule"}, "every"),
        ({**T, "type": "schedule", "every": "0s"}, "every"),
        ({**T, "type": "schedule", "every": "500ms"}, "every"),
        ({**T, "type": "schedule", "every": "hourly"}, "every"),
        ({**T, "type": "schedule", "every": "1h", "at": "03:00"}, "at"),
        ({**T, "type": "schedule", "every": "1d", "at": "25:00"}, "at"),
        ({**T, "type": "schedule", "every": "1h", "path": "/x"}, "path"),
        ({**T, "type": "poll", "every": "1h", "max_backoff": "1m"}, "max_backoff"),
        ({**T, "type": "watch"}, "path"),
        ({**T, "type": "watch", "path": "rel"}, "path"),
        ({**T, "type": "watch", "path": "/x", "debounce": "50ms"}, "debounce"),
        ({**T, "type": "watch", "path": "/x", "debounce": "2h"}, "debounce"),
        ({**T, "type": "watch", "path": "/x", "recursive": "no"}, "recursive"),
        ({**T, "type": "webhook", "auth": "basic"}, "auth"),
        ({**T, "type": "webhook", "encoding": "base32"}, "encoding"),
        ({**T, "type": "webhook", "header": "a b"}, "header"),
        (
            {**T, "type": "schedule", "every": "1h",
             "credential": {"type": "env", "name": "X"}},
            "credential",
        ),
        ({**T, "type": "webhook", "credential": {"type": "oauth"}}, "credential"),
        ({**T, "type": "schedule", "every": "1h", "enabled": 1}, "enabled"),
    ],
)  # fmt: skip
def test_a_definition_that_breaks_a_rule_names_the_key(raw: dict[str, Any], key: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        parse_trigger(raw)
    assert refused.value.key == key


def test_every_type_takes_its_documented_settings() -> None:
    for raw in (
        {"type": "schedule", "every": "1d", "at": "03:30"},
        {"type": "poll", "every": "5m", "max_backoff": "1h"},
        {"type": "watch", "path": "/srv/notes", "debounce": "250ms", "recursive": False},
        {
            "type": "webhook",
            "auth": "token",
            "header": "X-Secret",
            "prefix": "",
            "encoding": "base64",
            "delivery_header": "X-GitHub-Delivery",
            "credential": {"type": "env", "name": "HOOK_SECRET"},
        },
    ):
        trigger = parse_trigger({"name": "t", "miner": "m", **raw})
        assert not trigger.enabled
        assert parse_trigger(trigger.definition()) == trigger


def test_durations_and_defaults() -> None:
    assert parse_duration("90s", "every", low=1) == 90
    assert parse_duration("2h", "every", low=1) == 7200
    assert parse_duration("250ms", "debounce", low=0.1) == 0.25
    poll = parse_trigger({"name": "p", "miner": "m", "type": "poll", "every": "5m"})
    assert poll.max_backoff == 40 * 60
    watch = parse_trigger({"name": "w", "miner": "m", "type": "watch", "path": "/x"})
    assert (watch.debounce, watch.recursive) == (2.0, True)
    hook = parse_trigger({"name": "h", "miner": "m", "type": "webhook"})
    assert (hook.auth, hook.header, hook.prefix, hook.encoding) == (
        "hmac-sha256",
        "x-hub-signature-256",
        "sha256=",
        "hex",
    )
    token = parse_trigger({"name": "h", "miner": "m", "type": "webhook", "auth": "token"})
    assert (token.header, token.prefix) == ("x-memcastle-token", "")


def test_a_timetable_is_due_one_interval_on_or_at_its_clock_time() -> None:
    now = dt.datetime(2026, 12, 4, 15, 0, 30, tzinfo=dt.UTC)
    hourly = parse_trigger({"name": "t", "miner": "m", "type": "schedule", "every": "1h"})
    assert next_due(hourly, now) == now + dt.timedelta(hours=1)
    assert next_due(hourly, now, interval=120) == now + dt.timedelta(minutes=2)
    daily = parse_trigger(
        {"name": "t", "miner": "m", "type": "schedule", "every": "1d", "at": "03:00"}
    )
    assert next_due(daily, now) == dt.datetime(2026, 12, 5, 3, 0, tzinfo=dt.UTC)
    early = dt.datetime(2026, 12, 4, 2, 0, tzinfo=dt.UTC)
    assert next_due(daily, early) == dt.datetime(2026, 12, 4, 3, 0, tzinfo=dt.UTC)
    weekly = parse_trigger(
        {"name": "t", "miner": "m", "type": "schedule", "every": "7d", "at": "03:00"}
    )
    assert next_due(weekly, now) == dt.datetime(2026, 12, 11, 3, 0, tzinfo=dt.UTC)


# Through a daemon -------------------------------------------------------------------------------


def _config(root: Path) -> Path:
    return root / "config" / "memcastle" / "config.toml"


def _daemon(root: Path, notes: Path, **env: str) -> Daemon:
    path = _config(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + miners(notes) + TAIL)
    return Daemon(root, env=env)


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("notes")
    (directory / "first.md").write_text("# First\n\nA note the triggers mine.\n")
    return directory


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, notes: Path) -> Iterator[Daemon]:
    running = _daemon(tmp_path_factory.mktemp("triggers"), notes).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.client() as opened:
        yield opened
        for trigger in opened.get("/api/triggers").json()["triggers"]:
            opened.delete(f"/api/triggers/{trigger['name']}")


def _schedule(name: str, every: str, *, enabled: bool = False) -> dict[str, Any]:
    settings = {"every": every}
    return {
        "name": name,
        "miner": "notes",
        "type": "schedule",
        "settings": settings,
        "enabled": enabled,
    }


def _trigger(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.get(f"/api/triggers/{name}")
    assert response.status_code == 200, response.text
    return response.json()


def _fired(client: httpx.Client, name: str, times: int = 1) -> dict[str, Any]:
    return wait_for(
        lambda: (t := _trigger(client, name))["state"]["fires"] >= times and t,
        timeout=30,
        what=f"trigger {name} to fire {times} time(s)",
    )


def test_a_defined_trigger_is_disabled_and_written_beside_the_rest(
    daemon: Daemon, client: httpx.Client, notes: Path
) -> None:
    before = _config(daemon.root).read_text()
    body = {"name": "hourly", "miner": "notes", "type": "schedule", "settings": {"every": "1h"}}

    response = client.post("/api/triggers", json=body)

    assert response.status_code == 201, response.text
    shown = response.json()
    assert shown["status"] == "disabled" and shown["state"]["next_due"] is None
    text = _config(daemon.root).read_text()
    assert text.startswith(before) and text.endswith(
        '[[triggers]]\nname = "hourly"\nminer = "notes"\ntype = "schedule"\nevery = "1h"\n'
    )
    assert [t["name"] for t in client.get("/api/triggers").json()["triggers"]] == ["hourly"]


def test_refusals(client: httpx.Client) -> None:
    bad = {"name": "t", "miner": "notes", "type": "schedule", "settings": {"every": "soon"}}
    body = assert_error(client.post("/api/triggers", json=bad), 400, "memcastle::trigger::invalid")
    assert "every" in body["error"]
    stray = {"name": "t", "miner": "notes", "type": "schedule", "every": "1h"}
    assert_error(client.post("/api/triggers", json=stray), 400, "memcastle::trigger::invalid")
    orphan = {"name": "orphan", "miner": "nobody", "type": "schedule", "settings": {"every": "1h"}}
    assert client.post("/api/triggers", json=orphan).status_code == 201
    refused = assert_error(
        client.post("/api/triggers/orphan/enable"), 409, "memcastle::trigger::not_activatable"
    )
    assert "nobody" in refused["error"]
    assert_error(client.post("/api/triggers/orphan/fire"), 409, "memcastle::trigger::disabled")
    assert_error(client.get("/api/triggers/none"), 404, "memcastle::trigger::not_found")
    assert_error(client.post("/api/triggers/none/fire"), 404, "memcastle::trigger::not_found")
    gone = {"name": "w", "miner": "notes", "type": "watch", "settings": {"path": "/nonexistent"}}
    missing = assert_error(
        client.post("/api/triggers", json={**gone, "enabled": True}),
        409,
        "memcastle::trigger::not_activatable",
    )
    assert "/nonexistent" in missing["error"]
    read_only = {"X-MemCastle-Mode": "read_only"}
    assert_error(
        client.post("/api/triggers/orphan/fire", headers=read_only),
        403,
        "memcastle::mode::forbidden",
    )
    disabled = {"X-MemCastle-Mode": "disabled"}
    assert_error(client.get("/api/triggers", headers=disabled), 403, "memcastle::mode::forbidden")
    assert client.post("/api/triggers/orphan/disable", headers=disabled).status_code == 200


def test_a_schedule_fires_one_interval_after_enabling_and_then_again(
    client: httpx.Client,
) -> None:
    assert client.post("/api/triggers", json=_schedule("often", "1s")).status_code == 201

    enabled = client.post("/api/triggers/often/enable").json()
    first_due = dt.datetime.fromisoformat(enabled["state"]["next_due"])
    assert enabled["status"] == "active"

    fired = _fired(client, "often", 2)
    assert dt.datetime.fromisoformat(fired["state"]["last_fired"]) >= first_due
    job = wait_job(client, fired["state"]["last_job"])
    assert job["requested_by"] == "trigger" and job["kind"]["source"] == "directory"
    assert client.post("/api/triggers/often/disable").json()["state"]["next_due"] is None


def test_a_fire_joins_a_run_of_its_miner_still_queued(tmp_path: Path, notes: Path) -> None:
    running = _daemon(tmp_path, notes, MEMCASTLE_JOBS_MAX_CONCURRENCY="1").start()
    try:
        with running.client() as client:
            body = {
                "name": "now",
                "miner": "notes",
                "type": "schedule",
                "settings": {"every": "1d"},
            }
            assert client.post("/api/triggers", json={**body, "enabled": True}).status_code == 201
            holder = submit(client, {"type": "demo", "steps": 1, "step_ms": 600_000})["id"]
            wait_for(
                lambda: client.get(f"/api/jobs/{holder}").json()["status"] == "running",
                timeout=30,
                what="the demo job to hold the only worker",
            )

            first = client.post("/api/triggers/now/fire")
            second = client.post("/api/triggers/now/fire")
            by_hand = client.post("/api/miners/notes/run")

            assert first.status_code == 202, first.text
            assert first.json()["status"] == "queued"
            assert second.json() == {"status": "coalesced", "job": first.json()["job"]}
            assert by_hand.json()["id"] == first.json()["job"]
            assert client.post(f"/api/jobs/{holder}/cancel").status_code == 200
            assert wait_job(client, first.json()["job"])["status"] == "completed"
            assert _trigger(client, "now")["state"]["fires"] == 2
    finally:
        running.stop()


@pytest.mark.slow
def test_a_missed_slot_fires_once_after_a_restart(tmp_path: Path, notes: Path) -> None:
    daemon = _daemon(tmp_path, notes).start()
    with daemon.client() as client:
        body = {
            "name": "nightly",
            "miner": "notes",
            "type": "schedule",
            "settings": {"every": "2s"},
        }
        enabled = client.post("/api/triggers", json={**body, "enabled": True}).json()
    daemon.stop()
    due = dt.datetime.fromisoformat(enabled["state"]["next_due"])
    # Three slots pass while the daemon is down.
    wait_for(
        lambda: dt.datetime.now(dt.UTC) > due + dt.timedelta(seconds=4.5),
        timeout=15,
        what="three slots to pass",
        interval=0.1,
    )

    daemon.start()
    try:
        with daemon.client() as client:
            fired = _fired(client, "nightly")
            last = dt.datetime.fromisoformat(fired["state"]["last_fired"])
            next_time = dt.datetime.fromisoformat(fired["state"]["next_due"])
            assert fired["state"]["fires"] == 1
            assert next_time - last >= dt.timedelta(seconds=1.9)
            jobs = client.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
            assert sum(job["requested_by"] == "trigger" for job in jobs) == 1
    finally:
        daemon.stop()


def test_a_watch_fires_once_for_a_burst_of_changes(client: httpx.Client, tmp_path: Path) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    miner = {"name": "watched", "source": "directory", "locator": str(watched), "wing": "w"}
    assert client.post("/api/miners", json=miner).status_code == 201
    body = {
        "name": "on-change",
        "miner": "watched",
        "type": "watch",
        "settings": {"path": str(watched), "debounce": "400ms"},
        "enabled": True,
    }
    try:
        assert client.post("/api/triggers", json=body).status_code == 201
        wait_for(
            lambda: _trigger(client, "on-change")["state"]["watching"],
            timeout=15,
            what="the watch to be set up",
        )

        for index in range(10):
            (watched / f"note-{index}.md").write_text(f"# Note {index}\n\nWritten in a burst.\n")
            time.sleep(0.02)

        fired = _fired(client, "on-change")
        job = wait_job(client, fired["state"]["last_job"])
        assert job["status"] == "completed" and job["result"]["created"] == 10
        # The mine read every file it was told about: reading is not a change.
        assert _trigger(client, "on-change")["state"]["fires"] == 1
    finally:
        client.delete("/api/triggers/on-change")
        client.delete("/api/miners/watched")


def test_a_hand_edit_is_picked_up_and_reload_reports_it(
    daemon: Daemon, client: httpx.Client
) -> None:
    path = _config(daemon.root)
    original = path.read_text()
    path.write_text(
        original
        + '\n[[triggers]]\nname = "by-hand"\nminer = "notes"\ntype = "poll"\nevery = "1h"\n'
    )
    try:
        assert [t["name"] for t in client.get("/api/triggers").json()["triggers"]] == ["by-hand"]
        assert client.post("/api/triggers/reload").json()["added"] == ["by-hand"]
        path.write_text(original + '\n[[triggers]]\nname = "by-hand"\ncolour = "blue"\n')
        listed = client.get("/api/triggers").json()["triggers"]
        assert [t["name"] for t in listed] == ["by-hand"]
        body = assert_error(
            client.post("/api/triggers/reload"), 409, "memcastle::trigger::config_file"
        )
        assert "colour" in body["error"]
    finally:
        path.write_text(original)
    assert client.post("/api/triggers/reload").json()["removed"] == ["by-hand"]


def test_each_change_and_fire_is_announced_on_the_event_stream(
    daemon: Daemon, client: httpx.Client
) -> None:
    stream = EventStream(daemon)
    try:
        expect_open(stream)
        assert client.post("/api/triggers", json=_schedule("told", "1d")).status_code == 201
        assert client.post("/api/triggers/told/enable").status_code == 200
        fired = client.post("/api/triggers/told/fire").json()
        assert client.delete("/api/triggers/told").status_code == 200
        stream.wait(
            lambda item: isinstance(item, Frame) and item.data.get("event") == "removed",
            what="the trigger's removal",
        )
    finally:
        stream.close()

    told = [(frame.data["action"], frame.data["event"]) for frame in stream.frames("trigger")]
    assert told == [
        ("created", "defined"),
        ("updated", "enabled"),
        ("updated", fired["status"].replace("queued", "fired")),
        ("deleted", "removed"),
    ]
    assert all(set(f.data) == {"kind", "action", "name", "event"} for f in stream.frames("trigger"))


def test_mcp_reads_the_same_triggers(daemon: Daemon, client: httpx.Client) -> None:
    body = {"name": "mcp", "miner": "notes", "type": "poll", "settings": {"every": "1h"}}
    assert client.post("/api/triggers", json=body).status_code == 201

    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with connect(daemon.base_url) as session:
            listed = await call(session, "memcastle_trigger_list")
            return listed, await call(session, "memcastle_trigger_get", {"name": "mcp"})

    listed, trigger = anyio.run(read)

    assert listed == client.get("/api/triggers").json()
    assert trigger == _trigger(client, "mcp")


def test_the_cli_sets_lists_fires_and_removes(daemon: Daemon, client: httpx.Client) -> None:
    created = cli_json(
        daemon, "trigger", "set", "cli", "--miner", "notes", "--type", "schedule",
        "--setting", "every=1d", "--setting", "at=03:00",
    )  # fmt: skip
    assert created["settings"] == {"every": "1d", "at": "03:00"}
    assert not created["enabled"]
    retyped = cli_json(
        daemon, "trigger", "set", "cli", "--type", "poll", "--setting", "every=10m", "--enable"
    )
    assert retyped["settings"] == {"every": "10m"} and retyped["status"] == "active"
    assert [t["name"] for t in cli_json(daemon, "trigger", "list")] == ["cli"]
    fired = cli_json(daemon, "trigger", "fire", "cli")
    assert fired["status"] in ("queued", "coalesced")
    assert cli_json(daemon, "trigger", "disable", "cli")["status"] == "disabled"
    assert cli_json(daemon, "trigger", "remove", "cli", "--yes") == {"removed": "cli"}
    assert "cli" not in _config(daemon.root).read_text()


def test_the_daemon_refuses_to_start_with_an_invalid_section(
    fresh_daemon: Daemon, notes: Path
) -> None:
    path = _config(fresh_daemon.root)
    path.parent.mkdir(parents=True)
    path.write_text(
        HEAD + miners(notes) + '\n[[triggers]]\nname = "bad"\nminer = "notes"\n'
        'type = "schedule"\nevery = "fortnightly"\n'
    )

    log = fresh_daemon.start_refused()

    assert "memcastle::config::invalid" in log and "line 15" in log and "every" in log
