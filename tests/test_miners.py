"""Miners: the `[[miners]]` section of the configuration file, managed by `/api/miners`, the
`memcastle miner` commands and read by MCP.

The rules (names, keys, secret-looking options, flattening, broadening) are checked on the
functions; the file's handling (only the section rewritten, hand edits, an invalid file) on
the service in this process and then through a real daemon, its REST, CLI and MCP."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from kernel.context import RequestContext
from kernel.errors import ConfigInvalid, InputInvalid, MemCastleError
from memcastle_project.composition import Services
from sources.miner_service import MinerService
from sources.miners import (
    Credential,
    DefinitionError,
    Miner,
    NotRunnable,
    broadening,
    flatten,
    looks_secret,
    parse_miner,
)
from tests.support.cli import cli, cli_json, refused
from tests.support.daemon import Daemon
from tests.support.http import assert_error, wait_job
from tests.support.mcp_client import call, connect

HEAD = """# MemCastle configuration, kept by hand.
[logging]
level = "info"   # the daemon's own

# Miners follow.
"""
SECTION = """[[miners]]
name = "notes"        # my notes
source = "directory"
locator = "/srv/notes"
enabled = false

[miners.scope]
since = "2026-01"
"""
TAIL = """
# What comes after the miners is never touched.
[dedup]
enabled = true
"""
FILE = HEAD + SECTION + TAIL


# The rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["password", "api_key", "apiKey", "github-token", "Client_Secret", "private_key"]
)
def test_secret_looking_keys_are_recognized(key: str) -> None:
    assert looks_secret(key)


@pytest.mark.parametrize("key", ["since", "include", "tokenizer", "author", "keys", "max_items"])
def test_ordinary_keys_are_not_secrets(key: str) -> None:
    assert not looks_secret(key)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"name": "Docs", "source": "directory"}, "name"),
        ({"name": "reload", "source": "directory"}, "name"),
        ({"name": "x" * 65, "source": "directory"}, "name"),
        ({"name": "docs"}, "source"),
        ({"name": "docs", "source": "directory", "colour": "blue"}, "colour"),
        ({"name": "docs", "source": "directory", "enabled": "yes"}, "enabled"),
        ({"name": "docs", "source": "directory", "trigger": {"every": "1h"}}, "trigger"),
        ({"name": "docs", "source": "d", "credential": {"type": "env"}}, "credential.name"),
        ({"name": "docs", "source": "d", "credential": {"type": "ssh"}}, "credential"),
        (
            {"name": "d", "source": "d", "credential": {"type": "file", "path": "rel"}},
            "credential.path",
        ),
        ({"name": "docs", "source": "d", "scope": {"api_key": "x"}}, "scope.api_key"),
        ({"name": "docs", "source": "d", "config": {"auth": {"token": "x"}}}, "config.auth.token"),
        ({"name": "docs", "source": "d", "scope": {"nested": {"a": 1}}}, "scope.nested"),
        ({"name": "docs", "source": "d", "scope": {"list": [1, 2]}}, "scope.list"),
    ],
)
def test_a_definition_that_breaks_a_rule_names_the_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(DefinitionError) as refused_with:
        parse_miner(raw)
    assert refused_with.value.key == key


def test_a_definition_takes_every_documented_key() -> None:
    miner = parse_miner(
        {
            "name": "work-notes_2",
            "source": "directory",
            "enabled": False,
            "locator": "/srv",
            "wing": "work",
            "credential": {"type": "env", "name": "NOTES_TOKEN"},
            "scope": {"since": "2026-01", "include": ["a", "b"], "deep": True, "n": 3},
            "config": {"section": {"depth": 2}},
        }
    )

    assert miner.credential == Credential("env", "NOTES_TOKEN")
    assert parse_miner(miner.definition()) == miner


def test_flattening_turns_scope_then_config_into_text() -> None:
    miner = Miner(
        "m", "s", scope={"include": ["a", "b"], "deep": True, "n": 3}, config={"ratio": 0.5}
    )

    assert flatten(miner, {"n": 4}) == {"include": "a,b", "deep": "true", "n": "4", "ratio": "0.5"}


@pytest.mark.parametrize(
    "miner",
    [
        Miner("m", "s", scope={"since": "2026"}, config={"since": "2025"}),
        Miner("m", "s", config={"section": {"depth": 2}}),
    ],
)
def test_a_key_in_both_tables_or_a_nested_table_is_not_runnable(miner: Miner) -> None:
    with pytest.raises(NotRunnable):
        flatten(miner)


BREADTHS = {"since": "since", "include": "include", "exclude": "exclude", "extra": "opt_in_include"}


@pytest.mark.parametrize(
    ("before", "after", "broader"),
    [
        ({"since": "2026-01"}, {"since": "2025-06"}, True),
        ({"since": "2026-01"}, {"since": "2026-03"}, False),
        ({"since": "2026-01"}, {}, True),
        ({}, {"since": "2026-01"}, False),
        ({"exclude": "a,b"}, {"exclude": "a"}, True),
        ({"exclude": "a"}, {"exclude": ["a", "b"]}, False),
        ({"include": "a"}, {"include": "a,b"}, True),
        ({"include": "a,b"}, {"include": "a"}, False),
        ({}, {"include": "a"}, False),
        ({}, {"extra": True}, True),
        ({"extra": True}, {}, False),
        ({}, {"undeclared": "x"}, True),
    ],
)
def test_broadening_follows_each_options_breadth(
    before: dict[str, object], after: dict[str, object], broader: bool
) -> None:
    old = Miner("m", "s", scope=before)  # type: ignore[arg-type]
    new = Miner("m", "s", scope=after)  # type: ignore[arg-type]

    assert bool(broadening(old, new, BREADTHS)) is broader


def test_another_source_or_place_is_broader() -> None:
    old = Miner("m", "directory", locator="/a")

    assert broadening(old, Miner("m", "directory", locator="/b"), {}) == ["locator"]
    assert broadening(old, Miner("m", "other", locator="/a"), {}) == ["source"]


# The service, in this process -------------------------------------------------------------------


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(FILE)
    path.chmod(0o640)
    return path


def service(services: Services, path: Path, **environ: str) -> MinerService:
    return MinerService(path, services.sources.packages, services.jobs, environ=environ)


def test_a_created_miner_is_appended_and_nothing_else_changes(
    services: Services, config_file: Path, tmp_path: Path, ctx: RequestContext
) -> None:
    miners = service(services, config_file)

    shown = miners.create({"name": "docs", "source": "directory", "locator": str(tmp_path)})

    text = config_file.read_text()
    assert text.startswith(HEAD + SECTION) and text.endswith(TAIL)
    assert '[[miners]]\nname = "docs"' in text
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o640
    assert shown["credential"] is None and shown["enabled"] is True
    assert [m["name"] for m in miners.list(ctx)["miners"]] == ["docs", "notes"]


def test_a_change_keeps_the_comments_of_the_table_it_rewrites(
    services: Services, config_file: Path
) -> None:
    miners = service(services, config_file)

    miners.change("notes", {"wing": "mine", "scope": {"since": "2026-02"}})

    text = config_file.read_text()
    assert 'name = "notes"        # my notes' in text and 'since = "2026-02"' in text
    assert text.startswith(HEAD) and text.endswith(TAIL)


def test_removing_the_last_miner_leaves_the_rest(services: Services, config_file: Path) -> None:
    miners = service(services, config_file)

    assert miners.remove("notes") == {"removed": "notes"}

    assert config_file.read_text() == HEAD + TAIL


def test_the_first_write_creates_the_file_private(
    services: Services, tmp_path: Path, ctx: RequestContext
) -> None:
    path = tmp_path / "new" / "config.toml"
    miners = service(services, path)

    miners.create({"name": "docs", "source": "directory", "enabled": False})

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert miners.get(ctx, "docs")["enabled"] is False


def test_an_enabled_miner_must_be_able_to_run(
    services: Services, config_file: Path, tmp_path: Path
) -> None:
    miners = service(services, config_file)
    cases: list[tuple[dict[str, object], str]] = [
        ({"source": "nowhere"}, "nowhere"),
        ({"source": "directory", "locator": "relative"}, "absolute"),
        ({"locator": str(tmp_path), "scope": {"depth": 2}}, "depth"),
        ({"locator": str(tmp_path), "credential": {"type": "env", "name": "UNSET"}}, "credential"),
        ({"locator": str(tmp_path), "credential": {"type": "oauth"}}, "sign-in"),
    ]
    for fields, named in cases:
        with pytest.raises(MemCastleError) as refused_with:
            miners.create({"name": "docs", "source": "directory", **fields})
        assert refused_with.value.code == "memcastle::miner::invalid"
        assert named in refused_with.value.message
    assert config_file.read_text() == FILE


def test_a_credential_is_shown_as_its_kind_and_availability(
    services: Services, config_file: Path, tmp_path: Path, ctx: RequestContext
) -> None:
    miners = service(services, config_file, NOTES_TOKEN="set")
    credential = {"type": "env", "name": "NOTES_TOKEN"}

    miners.create({"name": "a", "source": "directory", "locator": "/", "credential": credential})

    assert miners.get(ctx, "a")["credential"] == {"kind": "env", "available": True}
    assert "NOTES_TOKEN" in config_file.read_text()


def test_a_secret_looking_option_is_refused(services: Services, config_file: Path) -> None:
    miners = service(services, config_file)

    with pytest.raises(MemCastleError) as refused_with:
        miners.create({"name": "a", "source": "directory", "scope": {"password": "hunter2"}})

    assert refused_with.value.code == "memcastle::miner::invalid"
    assert "scope.password" in refused_with.value.message


def test_an_unknown_field_of_a_change_is_refused(services: Services, config_file: Path) -> None:
    with pytest.raises(InputInvalid, match="colour"):
        service(services, config_file).change("notes", {"colour": "blue"})


def test_a_hand_edit_is_picked_up_and_reported_by_reload(
    services: Services, config_file: Path, ctx: RequestContext
) -> None:
    miners = service(services, config_file)
    config_file.write_text(
        FILE.replace("enabled = false\n", "")
        + '\n[[miners]]\nname = "added"\nsource = "directory"\n'
    )

    assert [m["name"] for m in miners.list(ctx)["miners"]] == ["added", "notes"]
    assert miners.reload() == {
        "added": ["added"],
        "removed": [],
        "changed": ["notes"],
        "enabled": ["notes"],
        "disabled": [],
        "broadened": [],
    }
    assert not any(miners.reload().values())


def test_an_invalid_hand_edit_keeps_the_last_good_set_and_refuses_writes(
    services: Services, config_file: Path, ctx: RequestContext
) -> None:
    miners = service(services, config_file)
    config_file.write_text(FILE.replace('source = "directory"', 'source = "directory"\ncolour = 1'))

    assert [m["name"] for m in miners.list(ctx)["miners"]] == ["notes"]
    for write in (lambda: miners.disable("notes"), miners.reload):
        with pytest.raises(MemCastleError) as refused_with:
            write()
        assert refused_with.value.code == "memcastle::miner::config_file"
        assert "line 9" in refused_with.value.message and "colour" in refused_with.value.message

    config_file.write_text(FILE)
    assert miners.disable("notes")["enabled"] is False


def test_an_invalid_file_stops_the_service_from_starting(
    services: Services, config_file: Path
) -> None:
    config_file.write_text(FILE.replace("[miners.scope]", "[miners.trigger]"))

    with pytest.raises(ConfigInvalid, match="line 12"):
        service(services, config_file)


def test_a_run_submits_a_mine_job_with_the_flattened_options(
    services: Services, config_file: Path, tmp_path: Path, ctx: RequestContext
) -> None:
    miners = service(services, config_file)
    miners.create({"name": "docs", "source": "directory", "locator": str(tmp_path), "wing": "docs"})

    job = miners.run(ctx, "docs", {"options": {"since": "2026-01"}, "full": True})

    assert job["kind"] == {
        "type": "mine",
        "source": "directory",
        "locator": str(tmp_path),
        "options": {"since": "2026-01"},
        "wing": "docs",
        "full": True,
    }


def test_a_run_is_refused_when_the_miner_cannot_run(
    services: Services, config_file: Path, tmp_path: Path
) -> None:
    miners = service(services, config_file)
    miners.create({"name": "docs", "source": "directory", "locator": str(tmp_path)})
    read_only = RequestContext.build(mode="read_only")
    cases = [
        (read_only, "docs", {}, "memcastle::mode::forbidden"),
        (RequestContext.build(), "notes", {}, "memcastle::miner::disabled"),
        (
            RequestContext.build(),
            "docs",
            {"options": {"depth": 1}},
            "memcastle::miner::not_runnable",
        ),
        (RequestContext.build(), "nobody", {}, "memcastle::miner::not_found"),
    ]
    for ctx, name, body, code in cases:
        with pytest.raises(MemCastleError) as refused_with:
            miners.run(ctx, name, body)
        assert refused_with.value.code == code


def test_broadening_needs_allow_broaden(services: Services, config_file: Path) -> None:
    miners = service(services, config_file)

    with pytest.raises(MemCastleError) as refused_with:
        miners.change("notes", {"scope": {"since": "2020-01"}})
    assert refused_with.value.code == "memcastle::miner::scope_broadened"
    assert "since" in refused_with.value.message
    assert config_file.read_text() == FILE

    changed = miners.change("notes", {"scope": {"since": "2020-01"}, "allow_broaden": True})
    assert changed["scope"] == {"since": "2020-01"}


# Through a daemon -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon whose configuration file has comments, other tables and one miner."""
    root = tmp_path_factory.mktemp("miners")
    path = root / "config" / "memcastle" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(FILE)
    path.chmod(0o640)
    running = Daemon(root, env={"MINER_TOKEN": "present"}).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.client() as opened:
        yield opened


@pytest.fixture
def file(daemon: Daemon) -> Iterator[Path]:
    """The daemon's configuration file, put back as it was after each test."""
    path = daemon.root / "config" / "memcastle" / "config.toml"
    yield path
    path.write_text(FILE)
    with daemon.client() as client:
        assert client.post("/api/miners/reload").status_code == 200


def test_rest_create_appears_in_the_file_and_nothing_else_changes(
    client: httpx.Client, file: Path, tmp_path: Path
) -> None:
    response = client.post(
        "/api/miners",
        json={"name": "docs", "source": "directory", "locator": str(tmp_path), "wing": "docs"},
    )

    assert response.status_code == 201, response.text
    text = file.read_text()
    assert text.startswith(HEAD + SECTION) and text.endswith(TAIL)
    assert stat.S_IMODE(file.stat().st_mode) == 0o640
    assert [m["name"] for m in client.get("/api/miners").json()["miners"]] == ["docs", "notes"]
    again = client.post("/api/miners", json={"name": "docs", "source": "directory"})
    assert_error(again, 400, "memcastle::miner::invalid")


def test_rest_refusals(client: httpx.Client, file: Path) -> None:
    secret = {"name": "a", "source": "directory", "scope": {"api_key": "x"}}
    assert_error(client.post("/api/miners", json=secret), 400, "memcastle::miner::invalid")
    assert_error(client.get("/api/miners/nobody"), 404, "memcastle::miner::not_found")
    for channel in ("", None, "x" * 65):
        unnamed = {"name": "b", "source": "directory", "requested_by": channel}
        body = assert_error(
            client.post("/api/miners", json=unnamed), 400, "memcastle::input::invalid"
        )
        assert "`requested_by`" in body["error"]
    assert "b" not in [m["name"] for m in client.get("/api/miners").json()["miners"]]
    broader = client.put("/api/miners/notes", json={"scope": {"since": None}})
    assert_error(broader, 409, "memcastle::miner::scope_broadened")
    assert_error(client.post("/api/miners/notes/run"), 409, "memcastle::miner::disabled")
    disabled = {"X-MemCastle-Mode": "disabled"}
    assert_error(client.get("/api/miners", headers=disabled), 403, "memcastle::mode::forbidden")
    assert client.post("/api/miners/notes/disable", headers=disabled).status_code == 200
    assert file.read_text() == FILE


def test_a_hand_edit_is_picked_up_on_the_next_request(client: httpx.Client, file: Path) -> None:
    file.write_text(FILE + '\n[[miners]]\nname = "by-hand"\nsource = "directory"\n')

    miners = client.get("/api/miners").json()["miners"]

    assert [m["name"] for m in miners] == ["by-hand", "notes"]
    assert client.post("/api/miners/reload").json()["added"] == ["by-hand"]


def test_an_invalid_hand_edit_keeps_the_last_good_set(client: httpx.Client, file: Path) -> None:
    file.write_text(FILE.replace("[miners.scope]", "[miners.scope]\npassword = 'x'"))

    assert [m["name"] for m in client.get("/api/miners").json()["miners"]] == ["notes"]
    body = assert_error(
        client.post("/api/miners/notes/enable"), 409, "memcastle::miner::config_file"
    )
    assert "line 12" in body["error"] and "password" in body["error"]
    assert_error(client.post("/api/miners/reload"), 409, "memcastle::miner::config_file")


def test_a_run_files_the_directory_it_mines(
    client: httpx.Client, file: Path, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# Miners\n\nA miner is a saved mine job.\n")
    definition = {"name": "run-me", "source": "directory", "locator": str(tmp_path)}
    assert client.post("/api/miners", json={**definition, "wing": "miner-run"}).status_code == 201

    response = client.post("/api/miners/run-me/run", json={"full": True})

    assert response.status_code == 201, response.text
    job = wait_job(client, response.json()["id"])
    assert job["kind"]["source"] == "directory" and job["result"]["created"] >= 1
    rooms = client.get("/api/wings/miner-run/rooms")
    assert rooms.status_code == 200, rooms.text
    read_only = {"X-MemCastle-Mode": "read_only"}
    refusal = client.post("/api/miners/run-me/run", headers=read_only)
    assert_error(refusal, 403, "memcastle::mode::forbidden")


def test_mcp_reads_the_same_miners(daemon: Daemon, client: httpx.Client, file: Path) -> None:
    credential = {"type": "env", "name": "MINER_TOKEN"}
    definition = {"name": "mcp", "source": "directory", "enabled": False, "credential": credential}
    assert client.post("/api/miners", json=definition).status_code == 201

    async def read() -> tuple[dict[str, object], dict[str, object]]:
        async with connect(daemon.base_url) as session:
            listed = await call(session, "memcastle_miner_list")
            return listed, await call(session, "memcastle_miner_get", {"name": "mcp"})

    listed, miner = anyio.run(read)

    assert listed == client.get("/api/miners").json()
    assert miner["credential"] == {"kind": "env", "available": True}
    assert "MINER_TOKEN" not in str(miner)


def test_the_cli_sets_lists_runs_and_removes(daemon: Daemon, file: Path, tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# CLI\n\nMined by a miner set from the command line.\n")

    created = cli_json(
        daemon, "miner", "set", "cli", "--source", "directory", "--locator", str(tmp_path),
        "--wing", "miner-cli", "--option", "since=2020-01",
    )  # fmt: skip
    assert created["scope"] == {"since": "2020-01"}
    refused(
        cli(daemon, "miner", "set", "cli", "--unset-option", "since"),
        "memcastle::client::remote_rejected",
    )
    changed = cli_json(daemon, "miner", "set", "cli", "--unset-option", "since", "--allow-broaden")
    assert changed["scope"] == {}
    assert "cli" in [m["name"] for m in cli_json(daemon, "miner", "list")]
    job = cli_json(daemon, "miner", "run", "cli", "--full")
    assert job["kind"]["type"] == "mine"
    assert cli_json(daemon, "miner", "remove", "cli", "--yes") == {"removed": "cli"}
    assert file.read_text().endswith(TAIL) and "cli" not in file.read_text()


def test_the_daemon_refuses_to_start_with_an_invalid_section(fresh_daemon: Daemon) -> None:
    path = fresh_daemon.root / "config" / "memcastle" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(FILE.replace("enabled = false", "enabled = false\nschedule = 'daily'"))

    log = fresh_daemon.start_refused()

    assert "memcastle::config::invalid" in log and "line 11" in log and "schedule" in log


def test_the_file_is_created_on_the_first_write(fresh_daemon: Daemon) -> None:
    path = fresh_daemon.root / "config" / "memcastle" / "config.toml"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        response = client.post(
            "/api/miners", json={"name": "new", "source": "directory", "enabled": False}
        )
    fresh_daemon.stop()

    assert response.status_code == 201, response.text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.path.getsize(path) > 0
