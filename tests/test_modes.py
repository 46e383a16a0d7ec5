"""Memory modes: one gate in the services, before any store access, the same on every route."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from kernel.context import Mode, RequestContext
from kernel.errors import InputInvalid, ModeForbidden
from tests.support.daemon import Daemon
from tests.support.palace_services import Palace, build


class UntouchableStore:
    """A store that fails the test if a query reaches it."""

    # Which engine the palace runs on is configuration, read once when the repositories are built.
    mode = "embedded"

    def one(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the store was touched before the mode gate")

    query = transaction = one


@pytest.fixture
def gated() -> Palace:
    return build(UntouchableStore())  # type: ignore[arg-type]


def test_absent_header_means_full() -> None:
    assert RequestContext.build().mode is Mode.FULL


def test_unknown_mode_is_refused_naming_the_header() -> None:
    with pytest.raises(InputInvalid) as caught:
        RequestContext.build(mode="everything")
    assert caught.value.field == "x-memcastle-mode"


@pytest.mark.parametrize(
    "call",
    [
        lambda p, c: p.hierarchy.list_wings(c),
        lambda p, c: p.hierarchy.show_wing(c, "w"),
        lambda p, c: p.hierarchy.list_rooms(c, "w"),
        lambda p, c: p.hierarchy.show_room(c, "w", "r"),
        lambda p, c: p.hierarchy.list_drawers(c, "w", "r"),
        lambda p, c: p.hierarchy.show_drawer(c, "w", "r", "d"),
        lambda p, c: p.hierarchy.show_drawer_by_id(c, "0b2e6f1c-9a8b-4f3e-8d2c-1a2b3c4d5e6f"),
    ],
)
def test_disabled_refuses_reads_before_the_store(gated: Palace, call) -> None:
    with pytest.raises(ModeForbidden) as caught:
        call(gated, RequestContext.build(mode="disabled"))
    assert "not permitted in disabled mode" in caught.value.message


@pytest.mark.parametrize("mode", ["read_only", "disabled"])
@pytest.mark.parametrize(
    ("operation", "call"),
    [
        ("create_wing", lambda p, c: p.hierarchy.create_wing(c, {"name": "w"})),
        ("delete_wing", lambda p, c: p.hierarchy.delete_wing(c, "w")),
        ("create_room", lambda p, c: p.hierarchy.create_room(c, "w", {"name": "r"})),
        ("delete_room", lambda p, c: p.hierarchy.delete_room(c, "w", "r")),
        ("create_drawer", lambda p, c: p.filing.create_drawer(c, "w", "r", {"content": "x"})),
        ("delete_drawer", lambda p, c: p.hierarchy.delete_drawer(c, "w", "r", "d")),
    ],
)
def test_writes_are_refused_before_the_store(
    gated: Palace, mode: str, operation: str, call
) -> None:
    with pytest.raises(ModeForbidden) as caught:
        call(gated, RequestContext.build(mode=mode))
    assert caught.value.message == f"`{operation}` is not permitted in {mode} mode"
    assert caught.value.code == "memcastle::mode::forbidden"
    assert caught.value.status == 403


def _mode(value: str) -> dict[str, str]:
    return {"X-MemCastle-Mode": value}


@pytest.mark.parametrize(
    ("mode", "read_status", "write_status"),
    [("full", 200, 201), ("read_only", 200, 403), ("disabled", 403, 403)],
)
def test_every_mode_against_a_read_and_a_write(
    daemon: Daemon, wing_name: str, mode: str, read_status: int, write_status: int
) -> None:
    with daemon.client() as client:
        client.post(f"/api/wings/{wing_name}/rooms", json={"name": "r"}).raise_for_status()
        read = client.get(f"/api/wings/{wing_name}/rooms", headers=_mode(mode))
        write = client.post(
            f"/api/wings/{wing_name}/rooms/r/drawers",
            json={"content": f"written in {mode}"},
            headers=_mode(mode),
        )
        drawers = client.get(f"/api/wings/{wing_name}/rooms/r/drawers").json()
    assert read.status_code == read_status
    assert write.status_code == write_status
    if write_status == 403:
        assert write.json() == {
            "error": f"`create_drawer` is not permitted in {mode} mode",
            "code": "memcastle::mode::forbidden",
            "help": (
                "switch the session/request to Full mode to allow writes, "
                "or to Full/ReadOnly to allow reads"
            ),
        }
        assert drawers["total"] == 0
    else:
        assert drawers["total"] == 1
    if read_status == 403:
        assert read.json()["code"] == "memcastle::mode::forbidden"


def test_unrecognized_header_is_a_400_everywhere_it_is_read(daemon: Daemon) -> None:
    with daemon.client(**_mode("loose")) as client:
        for response in (client.get("/api/wings"), client.get("/api/status")):
            assert response.status_code == 400
            body = response.json()
            assert body["code"] == "memcastle::input::invalid"
            assert "x-memcastle-mode" in body["error"]


def test_status_reports_the_mode_and_health_ignores_it(daemon: Daemon) -> None:
    with daemon.client() as client:
        for mode in ("full", "read_only", "disabled"):
            status = client.get("/api/status", headers=_mode(mode))
            assert status.status_code == 200
            assert status.json()["mode"] == mode
        assert client.get("/api/status").json()["mode"] == "full"
        health = client.get("/api/health", headers=_mode("nonsense"))
        assert health.json() == {"status": "ok"}


def test_shutdown_ignores_the_mode(fresh_daemon: Daemon) -> None:
    fresh_daemon.start()
    response = httpx.post(f"{fresh_daemon.base_url}/api/shutdown", headers=_mode("nonsense"))
    assert response.status_code == 202
    assert fresh_daemon.wait() == 0


@pytest.mark.parametrize("mode", ["read_only", "disabled"])
@pytest.mark.parametrize(
    ("body", "operation"),
    [
        ({"type": "embed", "wing": "no-such-wing"}, "embed"),
        ({"type": "extract", "wing": "no-such-wing"}, "extract"),
        ({"type": "mine", "path": "/no/such/directory"}, "mine"),
        ({"type": "mine", "source": "no-such-source"}, "mine"),
        ({"type": "repair", "dry_run": False, "based_on_job": str(uuid.uuid4())}, "repair"),
        ({"type": "checkpoint", "payload": "{broken", "emergency": True}, "emergency_checkpoint"),
    ],
    ids=["embed", "extract", "mine-path", "mine-source", "repair", "checkpoint"],
)
def test_a_refused_job_is_refused_before_its_parameters_are_looked_up(
    daemon: Daemon, mode: str, body: dict[str, Any], operation: str
) -> None:
    """The gate comes before anything the parameters name is read (a wing, a directory, an
    audit job), so a session the mode refuses learns nothing from the answer."""
    with daemon.client() as client:
        refused = client.post("/api/jobs", json=body, headers=_mode(mode))
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == f"`{operation}` is not permitted in {mode} mode"
