"""Reading and writing memory through the CLI: notes, diary, wake-up, search and recall, the
checkpoint and the knowledge graph, piped and on a terminal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import cli, cli_json, in_terminal, refused, together
from tests.support.daemon import Daemon


def test_notes_take_words_stdin_and_the_project_file(
    daemon: Daemon, wing_name: str, tmp_path: Path
) -> None:
    words = cli_json(daemon, "note", "--wing", wing_name, "--", "-dash", " kept  exactly ")
    assert words["content"] == "-dash  kept  exactly "
    assert words["provenance"]["requested_by"] == "cli"

    project = tmp_path / "project"
    (project / ".config").mkdir(parents=True)
    (project / ".config" / "memcastle.toml").write_text(
        f'[memcastle]\nwing = "{wing_name}"\nroom = "ideas"\n'
    )
    (project / "src").mkdir()
    piped = cli(daemon, "note", input="from stdin\n\n", cwd=project / "src")
    assert piped.returncode == 0, piped.stderr
    drawer = json.loads(piped.stdout)
    assert drawer["content"] == "from stdin"
    assert drawer["source"] == {"kind": "note", "uri": str(project / "src")}
    listed = cli_json(daemon, "drawer", "list", "--room", f"{wing_name}/ideas")
    assert [d["id"] for d in listed["drawers"]] == [drawer["id"]]

    empty, bad = together(
        lambda: cli(daemon, "note", "--wing", wing_name, input="  \n"),
        lambda: cli(daemon, "note", "x", env={"MEMCASTLE_WING": "a/b"}),
    )
    refused(empty, "memcastle::input::invalid")
    refused(bad, "memcastle::project::invalid")


def test_diary_wake_up_search_and_recall(daemon: Daemon, wing_name: str) -> None:
    agent = f"agent-{wing_name}"
    entry = cli_json(
        daemon,
        "diary",
        "write",
        "--agent-identity",
        agent,
        "--wing",
        wing_name,
        "finished the parser for zanzibar",
    )
    assert entry["source"]["agent"] == agent
    diary, woken, found, recalled, searched, awake, read = together(
        lambda: cli_json(daemon, "diary", "read", "--agent-identity", agent, "--wing", wing_name),
        lambda: cli_json(
            daemon, "wake-up", "--agent-identity", agent, "--wing", wing_name, "--max-items", "3"
        ),
        lambda: cli_json(daemon, "search", "zanzibar", "--wing", wing_name, "--ranking", "lexical"),
        lambda: cli_json(daemon, "recall", "zanzibar", "--wing", wing_name, "--limit", "1"),
        lambda: in_terminal(daemon, "search", "zanzibar", "--wing", wing_name),
        lambda: in_terminal(daemon, "wake_up", "--agent-identity", agent, "--wing", wing_name),
        lambda: in_terminal(
            daemon, "diary", "read", "--agent-identity", agent, "--wing", wing_name
        ),
    )
    assert [e["id"] for e in diary["entries"]] == [entry["id"]]
    assert woken["diary"]["id"] == entry["id"]
    assert [hit["id"] for hit in found["results"]] == [entry["id"]]
    assert [hit["id"] for hit in recalled["results"]] == [entry["id"]]
    assert searched[0] == 0
    assert "1 hits" in searched[1] and "finished the parser for zanzibar" in searched[1]
    assert awake[0] == 0 and "recent highlights (0)" in awake[1]
    assert read[0] == 0 and "finished the parser" in read[1]

    result = cli(daemon, "search", "zanzibar", "--as-of", "yesterday")
    refused(result, "memcastle::client::remote_rejected (400, memcastle::input::invalid)")


def test_a_checkpoint_fact_and_the_graph(daemon: Daemon, wing_name: str, tmp_path: Path) -> None:
    payload = tmp_path / "payload.json"
    payload.write_text(
        json.dumps(
            {
                "items": [
                    {
                        "destination": "project",
                        "wing": wing_name,
                        "content": "Ada works on MemCastle.",
                        "tags": [],
                        "source": {"kind": "manual"},
                        "fact": {
                            "op": "add",
                            "subject": f"Ada-{wing_name}",
                            "predicate": "works_on",
                            "object": f"MemCastle-{wing_name}",
                            "confidence": 0.9,
                        },
                    }
                ]
            }
        )
    )
    job = cli_json(daemon, "checkpoint", "--payload", str(payload), "--wait")
    assert job["status"] == "completed" and job["requested_by"] == "cli"

    entities = cli_json(daemon, "entity", "list", "--name", f"ada-{wing_name}")
    ada = entities["entities"][0]
    shown, relationships, aliased, candidates, mentions, on_terminal = together(
        lambda: cli_json(daemon, "entity", "show", ada["id"]),
        lambda: cli_json(daemon, "entity", "relationships", ada["id"]),
        lambda: cli_json(daemon, "entity", "alias", ada["id"], "Ada L."),
        lambda: cli_json(daemon, "entity", "candidates", ada["id"]),
        lambda: cli_json(daemon, "entity", "mentions", ada["id"]),
        lambda: in_terminal(daemon, "entity", "relationships", ada["id"]),
    )
    assert shown["counts"]["relationships"] >= 1
    assert "Ada L." in aliased["aliases"]
    assert candidates["candidates"] == []
    assert "mentions" in mentions
    assert on_terminal[0] == 0
    assert "works_on" in on_terminal[1] and f"MemCastle-{wing_name}" in on_terminal[1]

    fact = relationships["relationships"][0]
    history, on_terminal = together(
        lambda: cli_json(daemon, "fact", "history", fact["id"]),
        lambda: in_terminal(daemon, "fact", "history", fact["id"]),
    )
    assert fact["id"] in [assertion["id"] for assertion in history["assertions"]]
    assert on_terminal[0] == 0 and "PREDICATE" in on_terminal[1]
