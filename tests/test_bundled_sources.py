"""The bundled sources end to end: built by the set-up from this repository, recorded by a real
daemon as installed, enabled without consent (enabling is the consent), and mined from fixture
transcripts the tests generate: a first mine files each session, an unchanged re-mine files
nothing, and an edited session supersedes what it changed."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import transcripts
from tests.support.daemon import Daemon
from tests.support.http import assert_error, drawer, room_drawers, submit, wait_job

LATER = transcripts.START + dt.timedelta(days=3)
SESSIONS = 3


@dataclass(frozen=True)
class Case:
    """How to lay out a source's transcripts under `home`, and how to edit one of them."""

    name: str
    locator: Callable[[Path], Path | None]
    edit: Callable[[Path], None]


def claude(home: Path) -> Path:
    root = home / ".claude" / "projects"
    transcripts.claude_tree(root, sessions=SESSIONS)
    return root


def edit_claude(home: Path) -> None:
    path = _first_session(home / ".claude" / "projects")
    transcripts.append_claude(path, "and one more question about the tide", LATER)


def codex(home: Path) -> Path:
    root = home / ".codex" / "sessions"
    transcripts.codex_tree(root, sessions=SESSIONS)
    return root


def edit_codex(home: Path) -> None:
    path = _first_session(home / ".codex" / "sessions")
    transcripts.append_codex(path, "and one more question about the tide", LATER)


def pi(home: Path) -> Path:
    root = home / ".pi" / "agent" / "sessions"
    transcripts.pi_tree(root, sessions=SESSIONS)
    return root


def edit_pi(home: Path) -> None:
    path = _first_session(home / ".pi" / "agent" / "sessions")
    transcripts.append_pi(path, "and one more question about the tide", LATER)


def chatgpt(home: Path) -> Path:
    root = home / "export"
    transcripts.chatgpt_export(root, conversations=SESSIONS)
    return root


def edit_chatgpt(home: Path) -> None:
    conversations = json.loads((home / "export" / "conversations.json").read_text())
    first = conversations[0]["id"]
    transcripts.append_chatgpt(home / "export", first, "and one more question", LATER)


def opencode(home: Path) -> None:
    (home / ".local" / "share" / "opencode").mkdir(parents=True, exist_ok=True)
    transcripts.opencode_fixture(home / "opencode.json", sessions=SESSIONS)
    return None


def edit_opencode(home: Path) -> None:
    fixture = home / "opencode.json"
    first = json.loads(fixture.read_text())["sessions"][0]["info"]["id"]
    transcripts.append_opencode(fixture, first, "and one more question about the tide", LATER)


def _first_session(root: Path) -> Path:
    return sorted(path for path in root.rglob("*.jsonl") if not path.name.startswith("agent-"))[0]


CASES = [
    Case("claude", claude, edit_claude),
    Case("codex", codex, edit_codex),
    Case("pi", pi, edit_pi),
    Case("chatgpt", chatgpt, edit_chatgpt),
    Case("opencode", opencode, edit_opencode),
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon whose home holds the agents' transcripts, and whose PATH a stand-in `opencode`
    answering from a fixture (the bundled sources are built by the session's set-up)."""
    root = tmp_path_factory.mktemp("bundled")
    home = root / "home"
    home.mkdir()
    stub_bin = root / "bin"
    transcripts.opencode_stub(stub_bin, home / "opencode.json")
    running = Daemon(
        root,
        env={"HOME": str(home), "PATH": f"{stub_bin}{os.pathsep}{os.environ['PATH']}"},
    ).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.client() as opened:
        yield opened


def home_of(daemon: Daemon) -> Path:
    return Path(daemon.env["HOME"])


def test_the_bundled_sources_are_installed_from_the_start_and_need_enabling(
    client: httpx.Client,
) -> None:
    listed = {entry["name"]: entry for entry in client.get("/api/sources").json()["adapters"]}
    for name in ("claude", "codex", "chatgpt", "opencode", "pi"):
        assert listed[name]["origin"] == "bundled", listed[name]
        assert listed[name]["state"] in ("installed", "enabled"), listed[name]
        assert listed[name]["permissions"] is not None
    assert_error(client.delete("/api/source-packages/claude"), 400, "memcastle::source::bundled")


def mine(client: httpx.Client, name: str, locator: Path | None) -> dict[str, object]:
    body: dict[str, object] = {"type": "mine", "source": name}
    if locator is not None:
        body["locator"] = str(locator)
    return wait_job(client, submit(client, body)["id"], timeout=120)


def filed_text(client: httpx.Client, wing: str) -> str:
    rooms = client.get(f"/api/wings/{wing}/rooms")
    assert rooms.status_code == 200, rooms.text
    texts = []
    for room in rooms.json()["rooms"]:
        for listed in room_drawers(client, wing, room["name"]):
            texts.append(drawer(client, listed["id"])["content"])
    return "\n".join(texts)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_bundled_source_mines_its_transcripts_incrementally(
    daemon: Daemon, client: httpx.Client, case: Case
) -> None:
    home = home_of(daemon)
    locator = case.locator(home)
    refused = client.post("/api/jobs", json={"type": "mine", "source": case.name})
    if client.get(f"/api/source-packages/{case.name}").json()["state"] != "enabled":
        assert_error(refused, 409, "memcastle::source::not_enabled")
    enabled = client.post(f"/api/source-packages/{case.name}/enable")
    assert enabled.status_code == 200 and enabled.json()["state"] == "enabled", enabled.text

    first = mine(client, case.name, locator)["result"]
    assert first["documents"] == SESSIONS and first["created"] >= SESSIONS, first
    text = filed_text(client, case.name)
    assert transcripts.THINKING not in text and transcripts.TOOL_OUTPUT not in text
    assert "[tool: " in text and "user" in text and "assistant" in text

    again = mine(client, case.name, locator)["result"]
    assert again["created"] == 0 and again["superseded"] == 0, again

    case.edit(home)
    edited = mine(client, case.name, locator)["result"]
    assert edited["documents"] >= 1 and edited["superseded"] + edited["created"] >= 1, edited
    assert "one more question" in filed_text(client, case.name)
