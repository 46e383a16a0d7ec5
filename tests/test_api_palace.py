"""Wings, rooms and drawers over real HTTP against a real daemon."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.http import assert_error


def test_wing_lifecycle(client: httpx.Client, wing_name: str) -> None:
    created = client.post("/api/wings", json={"name": wing_name, "description": "d"})
    assert created.status_code == 201
    assert created.json()["created"] is True
    again = client.post("/api/wings", json={"name": wing_name})
    assert again.status_code == 200
    assert again.json()["created"] is False
    wing_id = created.json()["id"]

    listed = {wing["name"]: wing for wing in client.get("/api/wings").json()["wings"]}
    assert listed[wing_name]["counts"] == {"rooms": 0, "drawers": 0}
    assert client.get(f"/api/wings/{wing_id}").json()["name"] == wing_name
    assert client.get(f"/api/wings/{wing_name}").json()["description"] == "d"

    assert client.delete(f"/api/wings/{wing_name}").json() == {
        "wings": 1,
        "rooms": 0,
        "drawers": 0,
    }
    assert_error(
        client.get(f"/api/wings/{wing_name}"),
        404,
        "memcastle::palace::wing_not_found",
        explained=False,
    )


def test_room_and_drawer_routes(client: httpx.Client, wing_name: str) -> None:
    room = client.post(f"/api/wings/{wing_name}/rooms", json={"name": "notes"})
    assert room.status_code == 201
    base = f"/api/wings/{wing_name}/rooms/notes"
    assert client.get(f"/api/wings/{wing_name}/rooms").json()["rooms"][0]["name"] == "notes"
    assert client.get(f"/api/wings/{wing_name}/rooms/{room.json()['id']}").status_code == 200

    filed = client.post(
        f"{base}/drawers",
        json={"content": "We deploy on Fridays.", "name": "ops/deploy.md", "tags": ["ops"]},
    )
    assert filed.status_code == 201
    drawer = filed.json()
    assert drawer["provenance"]["requested_by"] == "http"
    assert drawer["valid_from"].endswith("Z")

    by_name = client.get(f"{base}/drawers/ops/deploy.md")
    by_uuid = client.get(f"{base}/drawers/{drawer['id']}")
    by_id = client.get(f"/api/drawers/{drawer['id']}")
    assert by_name.json() == by_uuid.json() == by_id.json()
    assert by_id.json()["content"] == "We deploy on Fridays."

    listing = client.get(f"{base}/drawers").json()
    assert listing["total"] == 1
    assert "content" not in listing["drawers"][0]
    assert listing["drawers"][0]["preview"] == "We deploy on Fridays."

    assert client.get(f"/api/wings/{wing_name}").json()["counts"] == {"rooms": 1, "drawers": 1}
    assert client.delete(f"{base}/drawers/ops/deploy.md").json()["drawers"] == 1
    assert client.delete(base).json() == {"wings": 0, "rooms": 1, "drawers": 0}
    assert_error(client.get(base), 404, "memcastle::palace::room_not_found", explained=False)


def test_creating_a_drawer_creates_its_wing_and_room(client: httpx.Client, wing_name: str) -> None:
    response = client.post(f"/api/wings/{wing_name}/rooms/new/drawers", json={"content": "x"})
    assert response.status_code == 201
    assert client.get(f"/api/wings/{wing_name}").json()["counts"] == {"rooms": 1, "drawers": 1}


def test_identical_drawer_answers_200_not_created(client: httpx.Client, wing_name: str) -> None:
    url = f"/api/wings/{wing_name}/rooms/r/drawers"
    first = client.post(url, json={"content": "same words"})
    second = client.post(url, json={"content": "same words"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json()["created"] is False
    assert second.json()["id"] == first.json()["id"]


def test_drawer_name_taken_is_409(client: httpx.Client, wing_name: str) -> None:
    url = f"/api/wings/{wing_name}/rooms/r/drawers"
    client.post(url, json={"content": "one", "name": "n"}).raise_for_status()
    body = assert_error(
        client.post(url, json={"content": "two", "name": "n"}),
        409,
        "memcastle::palace::drawer_name_taken",
        explained=False,
    )
    assert "'n'" in body["error"]


def test_cli_channel_is_recorded(client: httpx.Client, wing_name: str) -> None:
    response = client.post(
        f"/api/wings/{wing_name}/rooms/r/drawers",
        json={"content": "from a script", "requested_by": "cli"},
    )
    assert response.json()["provenance"] == {"requested_by": "cli", "job_id": None}


def test_unknown_places_are_404_with_their_own_codes(client: httpx.Client, wing_name: str) -> None:
    client.post(f"/api/wings/{wing_name}/rooms", json={"name": "r"}).raise_for_status()
    assert_error(
        client.get("/api/wings/ghost-wing"),
        404,
        "memcastle::palace::wing_not_found",
        explained=False,
    )
    assert_error(
        client.get(f"/api/wings/{wing_name}/rooms/ghost"),
        404,
        "memcastle::palace::room_not_found",
        explained=False,
    )
    assert_error(
        client.get(f"/api/wings/{wing_name}/rooms/r/drawers/ghost"),
        404,
        "memcastle::palace::drawer_not_found",
        explained=False,
    )
    assert_error(
        client.get(f"/api/drawers/{uuid.uuid4()}"),
        404,
        "memcastle::palace::drawer_not_found",
        explained=False,
    )


def test_a_uuid_in_a_filing_path_that_names_nothing_is_unknown_not_a_name(
    client: httpx.Client, wing_name: str
) -> None:
    """Filing creates the wing and room it names, but a UUID is an id, never a name: one that
    names no wing or room is a 404, and nothing is created."""
    drawer = {"content": "filed by id"}
    assert_error(
        client.post(f"/api/wings/{uuid.uuid4()}/rooms/r/drawers", json=drawer),
        404,
        "memcastle::palace::wing_not_found",
        explained=False,
    )
    assert_error(
        client.post(f"/api/wings/{wing_name}/rooms/{uuid.uuid4()}/drawers", json=drawer),
        404,
        "memcastle::palace::room_not_found",
        explained=False,
    )
    room = client.post(f"/api/wings/{wing_name}/rooms", json={"name": "by-id"}).json()
    filed = client.post(f"/api/wings/{room['wing']}/rooms/{room['id']}/drawers", json=drawer)
    assert filed.status_code == 201
    assert filed.json()["room"] == room["id"]
    body = assert_error(
        client.post(f"/api/wings/{wing_name}/rooms", json={"name": str(uuid.uuid4())}),
        400,
        "memcastle::palace::path_invalid",
        explained=False,
    )
    assert "looks like a UUID" in body["error"]
    rooms = client.get(f"/api/wings/{wing_name}/rooms").json()["rooms"]
    assert [room["name"] for room in rooms] == ["by-id"]


def test_validation_errors_name_the_field(client: httpx.Client, wing_name: str) -> None:
    url = f"/api/wings/{wing_name}/rooms/r/drawers"
    body = assert_error(
        client.post(url, json={"tags": ["a"]}), 400, "memcastle::input::invalid", explained=False
    )
    assert "`content`" in body["error"]
    body = assert_error(
        client.post(url, json={"content": "x", "tags": "a"}),
        400,
        "memcastle::input::invalid",
        explained=False,
    )
    assert "`tags`" in body["error"]
    assert_error(
        client.post("/api/wings", json={"name": "a/b"}),
        400,
        "memcastle::palace::path_invalid",
        explained=False,
    )
    body = assert_error(
        client.get("/api/drawers/123"), 400, "memcastle::input::invalid", explained=False
    )
    assert "`id`" in body["error"]
    assert_error(
        client.post("/api/wings", json=["name"]), 400, "memcastle::input::invalid", explained=False
    )
    names = {wing["name"] for wing in client.get("/api/wings").json()["wings"]}
    assert wing_name not in names
    assert "a/b" not in names


def test_limit_is_validated(client: httpx.Client, wing_name: str) -> None:
    client.post(f"/api/wings/{wing_name}/rooms", json={"name": "r"}).raise_for_status()
    url = f"/api/wings/{wing_name}/rooms/r/drawers"
    body = assert_error(
        client.get(f"{url}?limit=lots"), 400, "memcastle::input::invalid", explained=False
    )
    assert "`limit`" in body["error"]
    assert client.get(f"{url}?limit=999").json()["limit"] == 200
    assert client.get(f"{url}?limit=0").json()["limit"] == 50


def test_http_level_failures_share_the_error_body(client: httpx.Client) -> None:
    assert_error(
        client.get("/api/no-such-route"), 404, "memcastle::http::not_found", explained=False
    )
    assert_error(client.get("/nowhere"), 404, "memcastle::http::not_found", explained=False)
    assert_error(client.get("/api/wings/"), 404, "memcastle::http::not_found", explained=False)
    wrong = client.put("/api/wings", json={})
    assert_error(wrong, 405, "memcastle::http::method_not_allowed", explained=False)
    assert "POST" in wrong.headers["allow"]
    malformed = client.post(
        "/api/wings", content=b"{not json", headers={"content-type": "application/json"}
    )
    body = assert_error(malformed, 400, "memcastle::input::invalid", explained=False)
    assert "`body`" in body["error"]


def test_answers_are_json_whatever_accept_says(client: httpx.Client) -> None:
    listing = client.get("/api/wings", headers={"Accept": "text/html"})
    assert listing.status_code == 200
    assert listing.headers["content-type"] == "application/json"
    missing = client.get("/api/wings/ghost-wing", headers={"Accept": "text/html"})
    assert_error(missing, 404, "memcastle::palace::wing_not_found", explained=False)


def test_status_report(client: httpx.Client, daemon: Daemon) -> None:
    status = client.get("/api/status").json()
    assert status["pid"] == daemon.process.pid
    assert status["palace"] == str(daemon.palace)
    assert status["store"] == {"mode": "embedded"}
    assert status["datastore"] == {"healthy": True}
    assert status["migrations"]["pending"] == 0
    assert status["migrations"]["applied"] == status["migrations"]["available"] >= 1
    assert isinstance(status["drawers"], int)
    assert status["auth_enabled"] is False
    assert status["mode"] == "full"
    assert status["uptime_secs"] >= 0
    assert status["version"]


def test_status_counts_drawers(client: httpx.Client, wing_name: str) -> None:
    before = client.get("/api/status").json()["drawers"]
    client.post(f"/api/wings/{wing_name}/rooms/r/drawers", json={"content": "one more"})
    assert client.get("/api/status").json()["drawers"] == before + 1


@pytest.mark.parametrize(
    "path",
    [
        "/api/status?verbose=1",
        "/api/wings?limt=5",
        "/api/jobs?stauts=running",
        "/api/wake-up?agent_identity=a&maxitems=1",
        "/api/diary?agent_identity=a&limt=1",
        "/api/entities?nme=x",
        "/api/graph?dept=2",
        "/api/sources?all=1",
    ],
)
def test_an_unknown_query_parameter_is_refused_naming_it(client: httpx.Client, path: str) -> None:
    """A misspelt option is never silently ignored."""
    response = client.get(path)
    assert response.status_code == 400, response.text
    name = path.split("?")[1].split("&")[-1].split("=")[0]
    assert response.json()["error"].startswith(f"`{name}` is not a parameter of this route")


def test_the_format_parameter_is_accepted_everywhere(client: httpx.Client) -> None:
    assert client.get("/api/wings?format=json").status_code == 200


@pytest.mark.parametrize("path", ["/api/auth/token", f"/api/jobs/{uuid.uuid4()}/pause"])
def test_a_route_without_body_fields_refuses_one(client: httpx.Client, path: str) -> None:
    refused = client.post(path, json={"bogus": 1})
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"].startswith("`bogus` is not a field of this route")


def test_requested_by_alone_is_accepted_by_a_route_without_body_fields(
    client: httpx.Client,
) -> None:
    unknown_job = client.post(f"/api/jobs/{uuid.uuid4()}/pause", json={"requested_by": "cli"})
    assert unknown_job.json()["code"] == "memcastle::jobs::not_found"
