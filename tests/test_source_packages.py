"""Installed sources end to end: a real component built by the tests' set-up, installed into a
real daemon through `/api/source-packages`, consented to, enabled, mined, updated, disabled and
removed; and each way a hostile source misbehaves failing only its own job, with its code, the
daemon serving and the palace unchanged."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sources.manifest import consent_digest, parse_manifest
from sources.mining import BATCH
from tests.support.components import built, manifest, package
from tests.support.daemon import Daemon
from tests.support.http import assert_error, drawer, room_drawers, submit, wait_job, watch
from tests.support.mcp_client import call, connect, failure, finished, wait_for_job

GZIP = {"Content-Type": "application/gzip"}
PROBE_DIGEST = consent_digest("probe", parse_manifest(manifest("probe")).permissions)
# The cursor, time and memory caps of the module's daemon: small, so a runaway source is
# stopped quickly.
TIMEOUT_SECS = 3


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    package("probe")  # built before the daemon starts, so no test pays for it under a timeout
    running = Daemon(
        tmp_path_factory.mktemp("sources"),
        env={
            "MEMCASTLE_MINING_SOURCE_TIMEOUT_SECS": str(TIMEOUT_SECS),
            "MEMCASTLE_MINING_SOURCE_MEMORY_MIB": "96",
            "PROBE_LISTED": "listed-value",
            "PROBE_SECRET": "never-passed",
        },
    ).start()
    yield running
    running.stop()


def install_probe(client: httpx.Client, *, enable: bool = True) -> dict[str, Any]:
    """The probe source installed with consent (and enabled)."""
    params = {"consent": PROBE_DIGEST, **({"enable": "true"} if enable else {})}
    response = client.post(
        "/api/source-packages", content=package("probe"), headers=GZIP, params=params
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def installed(daemon: Daemon) -> str:
    """The probe source installed with consent and enabled, once for the module."""
    with daemon.client() as client:
        install_probe(client)
    return "probe"


def notes(root: Path, count: int = 3) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (root / f"note-{index}.txt").write_text(f"note {index}\n\nabout the tide tables {index}\n")
    return root


def mine(client: httpx.Client, locator: Path, **extra: Any) -> dict[str, Any]:
    return submit(client, {"type": "mine", "source": "probe", "locator": str(locator), **extra})


def drawers_in(client: httpx.Client, wing: str) -> int:
    response = client.get(f"/api/wings/{wing}")
    if response.status_code == 404:
        return 0
    assert response.status_code == 200, response.text
    return response.json()["counts"]["drawers"]


def test_a_package_asking_for_permissions_is_refused_without_consent_naming_its_digest(
    daemon: Daemon,
) -> None:
    with daemon.client() as client:
        refused = client.post("/api/source-packages", content=package("probe"), headers=GZIP)
        body = assert_error(refused, 400, "memcastle::source::consent_required")
        assert PROBE_DIGEST in body["help"]
        wrong = client.post(
            "/api/source-packages",
            content=package("probe"),
            headers=GZIP,
            params={"consent": "0" * 64},
        )
        assert_error(wrong, 400, "memcastle::source::consent_required")
        listed = client.get("/api/sources").json()["adapters"]
        assert [entry["name"] for entry in listed if entry["origin"] == "package"] in (
            [],
            ["probe"],
        )


def test_a_body_that_is_not_a_package_is_refused(daemon: Daemon) -> None:
    with daemon.client() as client:
        refused = client.post("/api/source-packages", content=b"not a tarball", headers=GZIP)
        assert_error(refused, 400, "memcastle::source::package_invalid")
        empty = client.post("/api/source-packages", content=b"", headers=GZIP)
        assert_error(empty, 400, "memcastle::input::invalid")


@pytest.mark.parametrize(
    ("changes", "code", "named"),
    [
        ({"contract": '"0.3"'}, "memcastle::source::incompatible", "0.3"),
        ({"memcastle": '">=9.0"'}, "memcastle::source::incompatible", "9.0"),
        ({"format": "2"}, "memcastle::source::incompatible", "format"),
        ({"name": '"directory"'}, "memcastle::source::manifest_invalid", "directory"),
        ({"incremental": '"yes"'}, "memcastle::source::manifest_invalid", "incremental"),
    ],
)
def test_a_package_this_host_cannot_run_is_refused_naming_why_and_nothing_is_installed(
    daemon: Daemon, changes: dict[str, str], code: str, named: str
) -> None:
    with daemon.client() as client:
        refused = client.post(
            "/api/source-packages",
            content=package("probe", manifest("probe", **changes)),
            headers=GZIP,
            params={"consent": PROBE_DIGEST},
        )
        assert named in assert_error(refused, 400, code)["error"]
        unknown_key = manifest("probe") + "\n[permissions.filesystem.write]\nall = true\n"
        refused = client.post(
            "/api/source-packages", content=package("probe", unknown_key), headers=GZIP
        )
        assert "write" in assert_error(refused, 400, "memcastle::source::manifest_invalid")["error"]


def test_an_installed_source_is_shown_with_what_it_may_do(daemon: Daemon, installed: str) -> None:
    with daemon.client() as client:
        shown = client.get(f"/api/source-packages/{installed}")
        assert shown.status_code == 200, shown.text
        source = shown.json()
        assert source["state"] == "enabled" and source["origin"] == "package"
        assert source["version"] == "1.0.0"
        assert source["permissions"]["process"] == ["echo", "printenv"]
        assert source["consent_digest"] == PROBE_DIGEST
        assert [option["name"] for option in source["options"]] == ["mode"]
        listed = {entry["name"]: entry for entry in client.get("/api/sources").json()["adapters"]}
        assert listed["probe"]["state"] == "enabled"
        assert listed["directory"]["origin"] == "builtin"
        assert_error(
            client.get("/api/source-packages/probe", headers={"X-MemCastle-Mode": "disabled"}),
            403,
            "memcastle::mode::forbidden",
        )


def test_an_installed_source_is_mined_like_the_directory_source(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "notes")
    with daemon.client() as client:
        first = wait_job(client, mine(client, place, wing="probe-mined")["id"])
        assert first["result"]["documents"] == 3 and first["result"]["created"] == 3
        assert drawers_in(client, "probe-mined") == 3
        again = wait_job(client, mine(client, place, wing="probe-mined", full=True)["id"])
        assert again["result"]["unchanged"] == 3 and again["result"]["created"] == 0
        (place / "note-1.txt").write_text("note 1\n\nthe tide tables changed\n")
        edited = wait_job(client, mine(client, place, wing="probe-mined", full=True)["id"])
        assert edited["result"]["superseded"] == 1
        # The superseded version stays, closed.
        assert drawers_in(client, "probe-mined") == 4


@pytest.mark.anyio
async def test_an_agent_mines_an_installed_source_over_mcp_with_the_same_refusals(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "mcp", count=2)
    async with connect(daemon.base_url) as mcp:
        job = await call(
            mcp, "memcastle_mine", {"source": "probe", "locator": str(place), "wing": "probe-mcp"}
        )
        done = await wait_for_job(mcp, job["id"], finished)
        assert done["status"] == "completed" and done["result"]["created"] == 2
        refused = await failure(mcp, "memcastle_mine", {"source": "nope", "locator": str(place)})
        assert refused.code == "memcastle::input::invalid"
        assert "probe" in refused.body["error"] and "directory" in refused.body["error"]


def test_mining_refuses_an_undeclared_option_at_submission(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    with daemon.client() as client:
        response = client.post(
            "/api/jobs",
            json={
                "type": "mine",
                "source": "probe",
                "locator": str(notes(tmp_path)),
                "options": {"since": "2026-01"},
            },
        )
        body = assert_error(response, 400, "memcastle::input::invalid")
        assert "mode" in body["error"]


def test_an_update_asking_for_no_more_keeps_consent_and_state_and_a_wider_one_needs_new(
    daemon: Daemon, installed: str
) -> None:
    with daemon.client() as client:
        same = client.post(
            "/api/source-packages",
            content=package("probe", manifest("probe", version='"1.0.1"')),
            headers=GZIP,
        )
        assert same.status_code == 200, same.text
        assert same.json()["replaced"] is True
        assert same.json()["source"]["state"] == "enabled"
        assert same.json()["source"]["version"] == "1.0.1"
        wider = manifest("probe", version='"1.1.0"', process='["echo", "cat"]')
        refused = client.post("/api/source-packages", content=package("probe", wider), headers=GZIP)
        body = assert_error(refused, 400, "memcastle::source::consent_required")
        assert consent_digest("probe", parse_manifest(wider).permissions) in body["help"]
        assert client.get("/api/source-packages/probe").json()["version"] == "1.0.1"


def test_built_in_and_unknown_sources_cannot_be_disabled_or_removed(daemon: Daemon) -> None:
    with daemon.client() as client:
        for action in ("disable",):
            assert_error(
                client.post(f"/api/source-packages/directory/{action}"),
                400,
                "memcastle::source::builtin",
            )
        assert_error(
            client.delete("/api/source-packages/directory"), 400, "memcastle::source::builtin"
        )
        assert client.post("/api/source-packages/directory/enable").json()["state"] == "enabled"
        for response in (
            client.get("/api/source-packages/nothing-here"),
            client.post("/api/source-packages/nothing-here/enable"),
            client.delete("/api/source-packages/nothing-here"),
        ):
            assert_error(response, 404, "memcastle::source::not_found")


# Each way a source misbehaves, with the code its job fails with.
HOSTILE = {
    "passwd": "memcastle::source::failed",
    "dotdot": "memcastle::source::failed",
    "symlink": "memcastle::source::failed",
    "unlisted": "memcastle::source::permission_denied",
    "shell": "memcastle::source::permission_denied",
    "loop": "memcastle::source::timeout",
    "oom": "memcastle::source::failed",
    "malformed": "memcastle::source::failed",
}


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_a_hostile_source_fails_only_its_job_with_its_code(
    daemon: Daemon, installed: str, tmp_path: Path, mode: str
) -> None:
    place = notes(tmp_path / "inside", count=1)
    (tmp_path / "outside.txt").write_text("a secret outside the grant\n")
    (place / "link.out").symlink_to(tmp_path / "outside.txt")
    wing = f"hostile-{mode}"
    with daemon.client() as client:
        job = mine(client, place, wing=wing, options={"mode": mode})
        failed = wait_job(client, job["id"], "failed", timeout=TIMEOUT_SECS + 30)
        assert failed["error_code"] == HOSTILE[mode], failed
        assert "secret" not in json.dumps(failed)
        assert drawers_in(client, wing) == 0
        assert client.get("/api/health").status_code == 200
        # The daemon keeps serving, and the same source mines well behaved right after.
        fine = wait_job(client, mine(client, place, wing=wing)["id"])
        assert fine["result"]["created"] >= 1


def test_the_listed_program_runs_with_its_output(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "listed", count=1)
    with daemon.client() as client:
        job = wait_job(
            client, mine(client, place, wing="probe-listed", options={"mode": "listed"})["id"]
        )
        assert job["result"]["created"] >= 1


def filed(client: httpx.Client, wing: str) -> str:
    return "\n".join(
        drawer(client, listed["id"])["content"] for listed in room_drawers(client, wing, "notes")
    )


def test_a_program_gets_path_home_and_the_listed_variables_only(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "environ", count=1)
    with daemon.client() as client:
        mined = mine(client, place, wing="probe-environ", options={"mode": "environ"})
        wait_job(client, mined["id"])
        names = {line.split("=", 1)[0] for line in filed(client, "probe-environ").splitlines()}
        assert names == {"PATH", "HOME", "PROBE_LISTED"}


def test_the_source_itself_sees_home_and_nothing_else_of_the_environment(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "guestenv", count=1)
    with daemon.client() as client:
        mined = mine(client, place, wing="probe-guestenv", options={"mode": "guestenv"})
        wait_job(client, mined["id"])
        assert json.loads(filed(client, "probe-guestenv")) == ["HOME"]


def test_a_cursor_the_source_refuses_fails_with_cursor_invalid(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    place = notes(tmp_path / "cursor", count=2)
    with daemon.client() as client:
        wait_job(client, mine(client, place, wing="probe-cursor")["id"])
        job = mine(client, place, wing="probe-cursor", options={"mode": "foreign"})
        failed = wait_job(client, job["id"], "failed")
        assert failed["error_code"] == "memcastle::source::cursor_invalid"
        assert wait_job(client, mine(client, place, wing="probe-cursor", full=True)["id"])


def test_an_altered_component_makes_the_source_unavailable(
    tmp_path: Path,
) -> None:
    running = Daemon(tmp_path).start()
    try:
        with running.client() as client:
            install_probe(client)
            component = tmp_path / "sources" / "probe" / "source.wasm"
            original = component.read_bytes()
            component.unlink()
            missing = client.get("/api/source-packages/probe").json()
            assert missing["state"] == "unavailable", missing
            assert "missing" in missing["unavailable_reason"]
            component.write_bytes(original + b"\0")
            shown = client.get("/api/source-packages/probe").json()
            assert shown["state"] == "unavailable"
            assert "altered" in shown["unavailable_reason"]
            refused = client.post(
                "/api/jobs",
                json={"type": "mine", "source": "probe", "locator": str(notes(tmp_path / "n"))},
            )
            assert_error(refused, 409, "memcastle::source::not_enabled")
            assert_error(
                client.post("/api/source-packages/probe/enable"),
                409,
                "memcastle::source::not_enabled",
            )
            removed = client.delete("/api/source-packages/probe")
            assert removed.json() == {"removed": "probe"}
            assert not component.parent.exists()
    finally:
        running.stop()


def test_disable_is_idempotent_a_disabled_source_is_refused_and_remove_keeps_drawers(
    tmp_path: Path,
) -> None:
    running = Daemon(tmp_path).start()
    try:
        with running.client() as client:
            install_probe(client, enable=False)
            place = notes(tmp_path / "n", count=2)
            assert_error(
                client.post(
                    "/api/jobs", json={"type": "mine", "source": "probe", "locator": str(place)}
                ),
                409,
                "memcastle::source::not_enabled",
            )
            assert client.post("/api/source-packages/probe/enable").json()["state"] == "enabled"
            wait_job(client, mine(client, place)["id"])
            for _ in range(2):
                disabled = client.post("/api/source-packages/probe/disable")
                assert disabled.status_code == 200 and disabled.json()["state"] == "disabled"
            assert_error(
                client.post(
                    "/api/jobs", json={"type": "mine", "source": "probe", "locator": str(place)}
                ),
                409,
                "memcastle::source::not_enabled",
            )
            assert client.delete("/api/source-packages/probe").status_code == 200
            assert drawers_in(client, "probe") == 2
            assert_error(
                client.get("/api/source-packages/probe"), 404, "memcastle::source::not_found"
            )
    finally:
        running.stop()


def test_a_component_is_compiled_once_and_the_next_start_reads_the_compiled_form(
    tmp_path: Path,
) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    digest = hashlib.sha256(built("probe").read_bytes()).hexdigest()
    compiling = f"compiling the component {digest}"
    (tmp_path / "first").mkdir()
    first = Daemon(tmp_path / "first", env=env).start()
    try:
        with first.client() as client:
            install_probe(client)
    finally:
        first.stop()
    assert first.log().count(compiling) == 1
    assert list((tmp_path / "cache" / "memcastle" / "components").glob(f"{digest}.*.cwasm"))
    second = Daemon(tmp_path / "first", env=env).start()
    try:
        with second.client() as client:
            job = wait_job(client, mine(client, notes(tmp_path / "n"))["id"])
            assert job["result"]["created"] == 3
    finally:
        second.stop()
    # One log for both starts, on one palace: one compilation in all.
    assert second.log().count(compiling) == 1, "the second start compiled it again"


def test_a_mine_of_an_installed_source_pauses_resumes_and_cancels_between_batches(
    daemon: Daemon, installed: str, tmp_path: Path
) -> None:
    count = 300  # six batches
    place = notes(tmp_path / "batches", count=count)
    with daemon.client() as client:
        job_id = mine(client, place, wing="probe-batches")["id"]
        watch(client, job_id, lambda job: job["progress"].get("current", 0) >= BATCH, "a batch")
        requested = client.post(f"/api/jobs/{job_id}/pause")
        assert requested.status_code == 200, f"the mine ended before the pause: {requested.text}"
        paused = wait_job(client, job_id, "paused")
        stopped_at = paused["checkpoint"]["next_index"]
        assert BATCH <= stopped_at < count and stopped_at % BATCH == 0
        assert drawers_in(client, "probe-batches") == stopped_at
        assert client.post(f"/api/jobs/{job_id}/resume").status_code == 200
        done = wait_job(client, job_id, timeout=120)
        assert done["result"]["created"] == count
        assert drawers_in(client, "probe-batches") == count, "nothing was filed twice"

        more = notes(tmp_path / "cancelled", count=count)
        job_id = mine(client, more, wing="probe-cancelled")["id"]
        watch(client, job_id, lambda job: job["progress"].get("current", 0) >= BATCH, "a batch")
        requested = client.post(f"/api/jobs/{job_id}/cancel")
        assert requested.status_code == 200, f"the mine ended before the cancel: {requested.text}"
        stopped_at = wait_job(client, job_id, "cancelled")["checkpoint"]["next_index"]
        rest = wait_job(client, mine(client, more, wing="probe-cancelled")["id"], timeout=120)
        assert rest["result"]["created"] == count - stopped_at
        assert drawers_in(client, "probe-cancelled") == count
