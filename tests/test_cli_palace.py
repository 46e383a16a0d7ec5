"""`memcastle wing|room|drawer ...` against a real daemon: JSON when piped, tables and cards on
a terminal, prompts before deletes, paths checked before any request, memory modes."""

from __future__ import annotations

import json

from tests.support.cli import cli, cli_json, in_terminal, refused, together
from tests.support.daemon import Daemon


def test_wings_rooms_and_drawers_piped(daemon: Daemon, wing_name: str) -> None:
    wing = cli_json(daemon, "wing", "create", wing_name, "--description", "work")
    assert wing["created"] is True and wing["description"] == "work"
    room = cli_json(daemon, "rooms", "create", f"{wing_name}/style")
    assert room["created"] is True and room["wing"] == wing["id"]
    drawer = cli_json(
        daemon, "drawer", "create", f"{wing_name}/style/fmt", "--content", "Run the formatter."
    )
    assert drawer["provenance"]["requested_by"] == "cli"
    assert drawer["name"] == "fmt"

    path = f"{wing_name}/style/fmt"
    shown, listed, rooms, every, wing_shown, wings = together(
        lambda: cli_json(daemon, "drawer", "show", path),
        lambda: cli_json(daemon, "drawers", "list", "--room", f"{wing_name}/style"),
        lambda: cli_json(daemon, "room", "list", "--wing", wing_name),
        lambda: cli_json(daemon, "room", "list"),
        lambda: cli_json(daemon, "wing", "show", wing_name),
        lambda: cli_json(daemon, "wings", "list"),
    )
    assert shown["id"] == drawer["id"]
    assert [d["id"] for d in listed["drawers"]] == [drawer["id"]]
    assert [r["name"] for r in rooms["rooms"]] == ["style"]
    assert any(group["wing"]["name"] == wing_name for group in every["wings"])
    assert wing_shown["counts"] == {"rooms": 1, "drawers": 1}
    assert wing_name in [w["name"] for w in wings["wings"]]

    # supersede and mention print JSON even without --json; the content comes from stdin.
    superseded = cli_json(
        daemon,
        "drawer",
        "supersede",
        f"{wing_name}/style/fmt",
        "--file",
        "-",
        input="Run ruff format.",
    )
    assert superseded["replacement"]["content"] == "Run ruff format."
    assert superseded["replacement"]["provenance"]["requested_by"] == "cli"
    history, duplicates, mention = together(
        lambda: cli_json(daemon, "drawer", "history", path),
        lambda: cli_json(daemon, "drawer", "duplicates", path),
        lambda: cli_json(daemon, "drawer", "mention", path, "--name", "Ruff", "--kind", "tool"),
    )
    assert [v["content"] for v in history["versions"]] == ["Run the formatter.", "Run ruff format."]
    assert duplicates["similar"] == []
    assert mention["entity"]["name"] == "Ruff"

    # Without a terminal a delete does not ask.
    deleted = cli_json(daemon, "drawer", "delete", f"{wing_name}/style/fmt")
    assert deleted["drawers"] == 1
    assert cli_json(daemon, "room", "delete", f"{wing_name}/style", "--yes")["rooms"] == 1
    assert cli_json(daemon, "wing", "delete", wing_name)["wings"] == 1
    assert wing_exists(daemon, wing_name) is False


def wing_exists(daemon: Daemon, wing: str) -> bool:
    """Asked over HTTP: what the CLI did is checked without another CLI run."""
    with daemon.client() as client:
        return client.get(f"/api/wings/{wing}").status_code == 200


def test_palace_on_a_terminal(daemon: Daemon, wing_name: str) -> None:
    with daemon.client() as client:
        created = client.post(
            f"/api/wings/{wing_name}/rooms/style/drawers",
            json={"name": "fmt", "content": "Use tabs."},
        )
        assert created.status_code == 201
    wings, drawer, highlighted, plain = together(
        lambda: in_terminal(daemon, "wing", "list"),
        lambda: in_terminal(daemon, "drawer", "show", f"{wing_name}/style/fmt"),
        # --json on a terminal: highlighted JSON.
        lambda: in_terminal(daemon, "--json", "room", "list", "--wing", wing_name),
        # NO_COLOR wins on a terminal.
        lambda: in_terminal(daemon, "rooms", "list", "--wing", wing_name, env={"NO_COLOR": ""}),
    )
    assert wings[0] == 0
    assert "WING" in wings[1] and "DRAWERS" in wings[1] and wing_name in wings[1]
    assert not wings[1].lstrip().startswith("{")
    assert drawer[0] == 0
    assert "\x1b[1mfmt\x1b[0m" in drawer[1] and "Use tabs." in drawer[1]
    assert highlighted[0] == 0 and '\x1b[34m"rooms"\x1b[0m' in highlighted[1]
    assert plain[0] == 0 and "\x1b[" not in plain[1] and "ROOM" in plain[1]


def test_a_delete_asks_first_on_a_terminal(daemon: Daemon, wing_name: str) -> None:
    with daemon.client() as client:
        assert client.post("/api/wings", json={"name": wing_name}).status_code == 201
    status, shown = in_terminal(daemon, "wing", "delete", wing_name, answer="n")
    assert status == 1
    assert f"Delete wing {wing_name} with everything in it? [y/N]" in shown
    assert "memcastle::cli::aborted" in shown
    assert wing_exists(daemon, wing_name)

    status, shown = in_terminal(daemon, "wing", "delete", wing_name, answer="y")
    assert status == 0, shown
    assert "Deleted 1 wings" in shown
    assert not wing_exists(daemon, wing_name)


def test_paths_are_checked_before_any_request(daemon: Daemon) -> None:
    diagnostic = refused(
        cli(daemon, "drawer", "show", "only/two"), "memcastle::palace::path_invalid"
    )
    assert "WING/ROOM/DRAWER" in diagnostic


def test_memory_modes_are_sent_with_each_request(daemon: Daemon, wing_name: str) -> None:
    write, read, disabled = together(
        lambda: cli(daemon, "--mode", "read_only", "wing", "create", wing_name),
        lambda: cli(daemon, "wing", "list", "--mode", "read_only"),
        lambda: cli(daemon, "wing", "list", env={"MEMCASTLE_MODE": "disabled"}),
    )
    forbidden = "memcastle::client::remote_rejected (403, memcastle::mode::forbidden)"
    assert "read_only" in refused(write, forbidden)
    assert read.returncode == 0, read.stderr
    assert wing_name not in [w["name"] for w in json.loads(read.stdout)["wings"]]
    assert "disabled" in refused(disabled, forbidden)
