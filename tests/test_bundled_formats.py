"""The bundled transcript sources' plain Python, in CPython: what each format files and leaves
out, the cursors, the options and the refusals. The component glue (`app.py`) is not here."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palace.embeddings.passages import passages
from sources.chunking import chunk

BUNDLED = Path(__file__).resolve().parent.parent / "sources" / "bundled"
for directory in ("common", "claude", "codex", "chatgpt", "pi", "opencode"):
    if str(BUNDLED / directory) not in sys.path:
        sys.path.insert(0, str(BUNDLED / directory))

import chatgpt_format  # noqa: E402
import claude_format  # noqa: E402
import codex_format  # noqa: E402
import memcastle_transcripts as mt  # noqa: E402
import opencode_format  # noqa: E402
import pi_format  # noqa: E402

from tests.support import transcripts  # noqa: E402
from tests.support.transcripts import THINKING, TOOL_OUTPUT, answer, at, question  # noqa: E402


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME, the one variable a source sees, is this test's directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def everything(source: Any, ref: mt.Ref) -> list[mt.Candidate]:
    return source.discover(ref, "null", 1000).candidates


def documents(source: Any, ref: mt.Ref) -> list[tuple[mt.RawDoc, mt.Canonical]]:
    """Each candidate read and normalized, skipped ones left out."""
    found = []
    for candidate in everything(source, ref):
        raw = source.read(ref, candidate)
        if raw is not None:
            found.append((raw, source.normalize(raw)))
    return found


def filed_text(document: mt.Canonical) -> str:
    return "".join(document.segments)


def assert_left_out(document: mt.Canonical) -> None:
    text = filed_text(document)
    assert THINKING not in text
    assert TOOL_OUTPUT not in text


# Options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("2026-09", "2026-09-01T00:00:00Z"),
        ("2026-09-14", "2026-09-14T00:00:00Z"),
        ("2026-09-14T12:30:00+02:00", "2026-09-14T10:30:00Z"),
        ("2026-09-14T10:30:00.250Z", "2026-09-14T10:30:00.250Z"),
    ],
)
def test_since_is_a_month_a_day_or_an_instant_in_utc(value: str, instant: str) -> None:
    assert mt.parse_options("pi", [("since", value)], ("since",)) == {"since": instant}


@pytest.mark.parametrize("value", ["yesterday", "2026-09-14T10:00:00", "2026-13", ""])
def test_since_without_a_date_or_a_zone_is_refused(value: str) -> None:
    with pytest.raises(mt.InvalidInput, match="since"):
        mt.parse_since(value)


def test_an_unknown_option_is_refused_naming_it_and_the_accepted_ones() -> None:
    with pytest.raises(mt.InvalidInput) as refused:
        mt.parse_options("claude", [("project", "x")], ("since", "dir"))
    assert "'project'" in str(refused.value)
    assert "since, dir" in str(refused.value)


@pytest.mark.parametrize("value", ["app", " /home/alice", "/home/alice ", ""])
def test_dir_must_be_an_absolute_path_or_a_pattern(value: str) -> None:
    with pytest.raises(mt.InvalidInput, match="dir"):
        mt.check_dir(value)


def test_dir_is_spelt_one_way_and_selects_the_place() -> None:
    options = mt.parse_options("claude", [("dir", "/home/alice/app/")], ("since", "dir"))
    assert options == {"dir": "/home/alice/app"}
    assert mt.dir_account(options) == "dir=/home/alice/app"
    assert mt.dir_account({"since": "2026-09-01T00:00:00Z"}) is None


@pytest.mark.parametrize(
    ("pattern", "cwd", "matches"),
    [
        ("/home/alice/app", "/home/alice/app", True),
        ("/home/alice/app", "/home/alice/app/src", True),
        ("/home/alice/app", "/home/alice/app2", False),
        ("/", "/srv", True),
        ("*/app", "/home/alice/app", True),
        ("*/app", "/home/alice/app/src", False),
        ("/home/*", "/home/alice/app", True),
        ("/home/*/app", "/home/a/b/app", True),
        ("/tmp/a.b", "/tmp/axb", False),
        ("/tmp/a.b*", "/tmp/a.b-c", True),
        ("*", None, False),
    ],
)
def test_dir_matches_a_directory_or_a_star_pattern(
    pattern: str, cwd: str | None, matches: bool
) -> None:
    assert mt.dir_matches(pattern, cwd) is matches


# Rooms, titles, markers, segments --------------------------------------------------------------


@pytest.mark.parametrize(
    ("cwd", "room"),
    [
        ("/home/alice/app", "home-alice-app"),
        ("/home/alice/app/", "home-alice-app"),
        ("/", "root"),
        (" /srv/x ", "srv-x"),
        ("", None),
        (None, None),
    ],
)
def test_the_room_is_the_working_directory_without_slashes(cwd: str | None, room: str) -> None:
    assert mt.room_for(cwd) == room


def test_a_tool_call_is_one_short_line_naming_what_it_did() -> None:
    assert mt.tool_marker("Bash", {"command": "ls -la", "description": "list"}) == (
        "[tool: Bash ls -la]"
    )
    assert mt.tool_marker("Read", {"file_path": "/a/b.py"}) == "[tool: Read /a/b.py]"
    assert mt.tool_marker("shell", '{"command": ["bash", "-lc", "make test"]}') == (
        "[tool: shell make test]"
    )
    assert mt.tool_marker("TodoWrite", {}) == "[tool: TodoWrite]"
    long = mt.tool_marker("Bash", {"command": "echo one\n" + "x" * 500})
    assert "\n" not in long
    assert long.endswith("…]")
    assert len(long) <= len("[tool: Bash ]") + mt.MARKER_CHARS


def test_consecutive_messages_of_one_role_are_one_turn_stamped_with_its_first_time() -> None:
    first = dt.datetime(2026, 9, 14, 10, 2, 30, tzinfo=dt.UTC)
    turns = [
        mt.Turn("user", first, ("Please list the files",)),
        mt.Turn("assistant", first + dt.timedelta(minutes=1), ("[tool: Bash ls]",)),
        mt.Turn("assistant", None, ("There are two.",)),
        mt.Turn("user", None, ("Thanks",)),
    ]
    assert mt.segments(turns) == [
        "[2026-09-14 10:02 UTC] user: Please list the files\n",
        "[2026-09-14 10:03 UTC] assistant: [tool: Bash ls]\nThere are two.\n",
        "user: Thanks\n",
    ]


def test_a_chunk_of_a_transcript_holds_each_turn_on_lines_of_its_own() -> None:
    """The core packs segments into a chunk as they are: each turn begins a line, so the chunk
    reads as the conversation and is embedded with its passages of turns."""
    start = dt.datetime(2026, 9, 14, 10, 0, tzinfo=dt.UTC)
    turns = [
        mt.Turn(role, start + dt.timedelta(minutes=n), (f"message {n}", "[tool: Bash ls]"))
        for n, role in enumerate(["user", "assistant"] * 4)
    ]
    (text,) = chunk(mt.segments(turns), 6000)
    lines = text.splitlines()
    assert lines[0] == "[2026-09-14 10:00 UTC] user: message 0"
    assert lines[2] == "[2026-09-14 10:01 UTC] assistant: message 1"
    assert len(lines) == 16 and text.endswith("[tool: Bash ls]\n")
    assert len(passages(text)) == 8 - 6 + 1


def test_the_title_is_the_first_user_message_on_one_line_of_80_characters() -> None:
    said = "Why   does\nthe deploy " + "really " * 30 + "time out?"
    transcript = mt.Transcript(
        None,
        None,
        None,
        [mt.Turn("assistant", None, ("Hello",)), mt.Turn("user", None, (said,))],
    )
    title = mt.title_of(transcript)
    assert title is not None
    assert title.startswith("Why does the deploy really")
    assert len(title) == mt.TITLE_CHARS
    assert "\n" not in title


def test_a_raw_document_without_a_message_is_not_normalized() -> None:
    with pytest.raises(mt.InvalidInput, match="no message"):
        mt.canonical("pi", mt.Transcript(None, None, None, []), name=None, uri=None)


# Cursors and discovery -------------------------------------------------------------------------


@pytest.mark.parametrize("cursor", ["null", "{}"])
def test_null_is_the_start(cursor: str) -> None:
    assert mt.load_cursor(cursor, "mtime_ns", "pi") is None


@pytest.mark.parametrize(
    "cursor",
    [
        '"yesterday"',
        "not json",
        '{"mtime_ns": true, "key": "a"}',
        '{"mtime_ns": 1.5, "key": "a"}',
        '{"mtime_ns": 1, "key": "a", "more": 1}',
        '{"time_updated": 1, "key": "a"}',
        "[1, 2]",
    ],
)
def test_a_foreign_cursor_is_refused(cursor: str) -> None:
    with pytest.raises(mt.CursorInvalid):
        mt.load_cursor(cursor, "mtime_ns", "pi")


def test_pages_are_strictly_after_the_cursor_in_mark_then_key_order() -> None:
    found = [(2, "b"), (1, "z"), (2, "a"), (3, "a")]
    assert mt.page_after(found, None, 2) == ([(1, "z"), (2, "a")], False)
    assert mt.page_after(found, (2, "a"), 2) == ([(2, "b"), (3, "a")], True)
    assert mt.page_after(found, (3, "a"), 5) == ([], True)


def test_jsonl_files_are_found_to_a_depth_without_following_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for relative in ("a.jsonl", "d1/b.jsonl", "d1/d2/c.jsonl", "d1/notes.txt"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("{}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.jsonl").write_text("{}\n")
    (root / "linked-dir").symlink_to(outside)
    (root / "linked.jsonl").symlink_to(outside / "x.jsonl")
    names = sorted(os.path.relpath(path, root) for _, path in mt.scan_jsonl(str(root), 1))
    assert names == ["a.jsonl", "d1/b.jsonl"]


def test_lines_that_are_not_json_objects_are_skipped() -> None:
    body = '{"a": 1}\nnot json\n\n[1, 2]\r\n{"b": "x\u2028y"}\n{"half": '
    assert list(mt.json_lines(body)) == [{"a": 1}, {"b": "x\u2028y"}]


# Claude Code -----------------------------------------------------------------------------------


@pytest.fixture
def claude(home: Path) -> list[Path]:
    return transcripts.claude_tree(home / ".claude" / "projects", sessions=3, turns=2)


def test_claude_files_each_session_as_its_turns(claude: list[Path], home: Path) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [])
    assert ref.locator == str(home / ".claude" / "projects")
    filed = documents(source, ref)
    assert len(filed) == 3
    raw, document = filed[0]
    assert raw.external_id == f"-home-alice-app/{claude[0].name}"
    assert raw.occurred_at == "2026-09-14T10:00:00Z"
    assert raw.metadata == {
        "session_id": claude[0].stem,
        "cwd": "/home/alice/app",
        "model": "claude-x-1",
        "path": str(claude[0]),
    }
    assert document.room == "home-alice-app"
    assert document.name == claude[0].stem
    assert document.uri == str(claude[0])
    assert document.tags == ["transcript", "claude"]
    assert document.title == question(0, 0)
    assert document.segments[:2] == [
        f"[2026-09-14 10:00 UTC] user: {question(0, 0)}\n",
        f"[2026-09-14 10:00 UTC] assistant: {answer(0, 0)}\n[tool: Bash ls -la]\n"
        "Done with turn 0.\n",
    ]
    assert len(document.segments) == 4
    assert_left_out(document)
    assert "Caveat" not in filed_text(document)


def test_claude_leaves_out_subagents_meta_and_local_command_output(home: Path) -> None:
    body = "\n".join(
        json.dumps(entry)
        for entry in [
            {"type": "user", "isSidechain": True, "message": {"content": "subagent"}},
            {"type": "user", "isMeta": True, "message": {"content": "meta"}},
            {
                "type": "user",
                "message": {
                    "content": "<command-name>/model</command-name>\n"
                    "<command-message>model</command-message>\n<command-args>opus</command-args>"
                },
            },
            {
                "type": "user",
                "message": {"content": "<local-command-stdout>Set</local-command-stdout>"},
            },
            {"type": "assistant", "isApiErrorMessage": True, "message": {"content": "API Error"}},
            {"type": "system", "content": "Conversation compacted"},
            {"type": "assistant", "message": {"content": [{"type": "redacted_thinking"}]}},
        ]
    )
    transcript = claude_format.parse(body)
    assert [(turn.role, turn.parts) for turn in transcript.turns] == [("user", ("/model opus",))]


def test_claude_pages_by_modification_time_strictly_after_the_cursor(claude: list[Path]) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [])
    first = source.discover(ref, "null", 2)
    assert [candidate.handle for candidate in first.candidates] == [str(p) for p in claude[:2]]
    assert not first.exhausted
    rest = source.discover(ref, first.candidates[-1].cursor_after, 2)
    assert [candidate.handle for candidate in rest.candidates] == [str(claude[2])]
    assert rest.exhausted
    assert source.discover(ref, rest.candidates[-1].cursor_after, 2).candidates == []


def test_the_cursor_stays_before_sessions_modified_within_the_settling_time(
    claude: list[Path],
) -> None:
    """A session modified less than two seconds before the run looked may be appended to within
    the same (coarse) modification time: it is read, but the cursor does not pass it."""
    newest = claude[-1].stat().st_mtime_ns
    source = dataclasses.replace(claude_format.SOURCE, clock_ns=lambda: newest + mt.SETTLING_NS - 1)
    ref = source.identify(None, [])
    page = source.discover(ref, "null", 10)
    assert [candidate.handle for candidate in page.candidates] == [str(p) for p in claude]
    settled = page.candidates[1].cursor_after
    assert page.candidates[2].cursor_after == settled
    transcripts.append_claude(claude[2], "Appended within the same second", at(2, 1))
    os.utime(claude[2], ns=(newest, newest))
    again = source.discover(ref, page.candidates[-1].cursor_after, 10).candidates
    assert [candidate.handle for candidate in again] == [str(claude[2])]
    after = source.read(ref, again[0])
    assert after is not None and "Appended within the same second" in after.body

    settled_source = dataclasses.replace(source, clock_ns=lambda: newest + mt.SETTLING_NS + 1)
    last = settled_source.discover(ref, "null", 10).candidates[-1].cursor_after
    assert settled_source.discover(ref, last, 10).candidates == []


def test_an_edited_claude_session_comes_again_with_a_new_revision(claude: list[Path]) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [])
    candidates = everything(source, ref)
    before = source.read(ref, candidates[0])
    transcripts.append_claude(claude[0], "One more question", at(5, 0))
    again = source.discover(ref, candidates[-1].cursor_after, 10).candidates
    assert [candidate.handle for candidate in again] == [str(claude[0])]
    after = source.read(ref, again[0])
    assert before is not None and after is not None
    assert after.external_id == before.external_id
    assert after.revision != before.revision
    assert source.normalize(after).segments[-2].endswith("user: One more question\n")


def test_claude_since_skips_sessions_modified_before_it(claude: list[Path]) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [("since", "2026-09-14T11:00:00Z")])
    assert [candidate.handle for candidate in everything(source, ref)] == [
        str(p) for p in claude[1:]
    ]


def test_claude_dir_selects_sessions_by_working_directory(claude: list[Path]) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [("dir", "*/api")])
    assert ref.account == "dir=*/api"
    assert [raw.metadata["cwd"] for raw, _ in documents(source, ref)] == ["/home/alice/api"]


def test_claude_identify_canonicalises_the_locator(claude: list[Path], home: Path) -> None:
    source = claude_format.SOURCE
    projects = home / ".claude" / "projects"
    (home / "link").symlink_to(projects)
    assert source.identify(f"{projects}/", []).locator == str(projects)
    assert source.identify(str(home / "link"), []).locator == str(projects)
    assert source.identify("~/.claude/projects", []).locator == str(projects)
    with pytest.raises(mt.InvalidInput, match="not a directory"):
        source.identify(str(home / "missing"), [])
    with pytest.raises(mt.InvalidInput, match="absolute"):
        source.identify("projects", [])


def test_claude_skips_a_file_without_a_message_and_refuses_to_normalize_one(home: Path) -> None:
    project = home / ".claude" / "projects" / "-srv"
    project.mkdir(parents=True)
    (project / "empty.jsonl").write_text('{"type": "file-history-snapshot"}\nnot json\n')
    source = claude_format.SOURCE
    ref = source.identify(None, [])
    assert [source.read(ref, candidate) for candidate in everything(source, ref)] == [None]
    raw = mt.RawDoc("x", "r", "garbage\n", {"path": str(project / "empty.jsonl")})
    with pytest.raises(mt.InvalidInput):
        source.normalize(raw)


def test_a_candidate_outside_the_locator_is_refused(claude: list[Path], home: Path) -> None:
    source = claude_format.SOURCE
    ref = source.identify(None, [])
    with pytest.raises(mt.CursorInvalid):
        source.read(ref, mt.Candidate("x", "null", str(home / "elsewhere.jsonl")))


# Codex -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("legacy", [False, True])
def test_codex_files_what_was_said_without_the_injected_context(home: Path, legacy: bool) -> None:
    written = transcripts.codex_tree(home / ".codex" / "sessions", sessions=2, legacy=legacy)
    source = codex_format.SOURCE
    filed = documents(source, source.identify(None, []))
    assert len(filed) == 2
    raw, document = filed[0]
    assert raw.external_id == os.path.relpath(written[0], home / ".codex" / "sessions")
    assert raw.metadata["cwd"] == "/home/alice/app"
    assert raw.metadata["session_id"] == transcripts.ident("codex", 0)
    assert raw.occurred_at == "2026-09-14T10:00:00Z"
    assert document.room == "home-alice-app"
    assert document.name == written[0].stem
    assert document.title == question(0, 0)
    stamp = "" if legacy else "[2026-09-14 10:00 UTC] "
    assert document.segments[:2] == [
        f"{stamp}user: {question(0, 0)}\n",
        f"{stamp}assistant: [tool: shell ls -la]\n{answer(0, 0)}\n",
    ]
    assert len(document.segments) == 4
    text = filed_text(document)
    for injected in ("AGENTS.md", "environment_context", "You are Codex"):
        assert injected not in text
    assert_left_out(document)
    if not legacy:
        assert raw.metadata["model"] == "gpt-x-codex"


def test_codex_marks_a_patch_by_the_files_it_touches() -> None:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: t.py\n+x\n"
    body = json.dumps(
        {
            "timestamp": "2026-09-14T10:00:00Z",
            "type": "response_item",
            "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": patch},
        }
    )
    transcript = codex_format.parse(body)
    assert transcript.turns[0].parts == ("[tool: apply_patch src/app.py, t.py]",)


def test_codex_reads_rollouts_three_directories_deep(home: Path) -> None:
    root = home / ".codex" / "sessions"
    transcripts.codex_tree(root, sessions=1)
    deeper = root / "2026" / "09" / "14" / "extra" / "rollout-x.jsonl"
    deeper.parent.mkdir()
    deeper.write_text("{}\n")
    source = codex_format.SOURCE
    assert len(everything(source, source.identify(None, []))) == 1


# pi --------------------------------------------------------------------------------------------


def test_pi_files_sessions_of_format_3(home: Path) -> None:
    written = transcripts.pi_tree(home / ".pi" / "agent" / "sessions", sessions=2)
    source = pi_format.SOURCE
    ref = source.identify(None, [])
    assert len(everything(source, ref)) == 2  # the subagent artefact is two levels down
    raw, document = documents(source, ref)[1]
    assert raw.metadata["session_id"] == transcripts.ident("pi", 1)
    assert raw.metadata["cwd"] == "/home/alice/api"
    assert raw.metadata["model"] == "claude-x-1"
    assert raw.occurred_at == "2026-09-14T11:00:00Z"
    assert document.room == "home-alice-api"
    assert document.name == written[1].stem
    assert document.segments[1] == (
        f"[2026-09-14 11:00 UTC] assistant: {answer(1, 0)}\n[tool: bash ls -la]\n"
    )
    assert_left_out(document)


def test_pi_keeps_user_commands_as_markers_and_leaves_out_summaries() -> None:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "s",
            "timestamp": "2026-09-14T10:00:00Z",
            "cwd": "/",
        },
        {
            "type": "message",
            "timestamp": "2026-09-14T10:01:00Z",
            "message": {"role": "bashExecution", "command": "git status", "output": TOOL_OUTPUT},
        },
        {"type": "message", "message": {"role": "compactionSummary", "summary": "earlier"}},
        {"type": "message", "message": {"role": "custom", "content": "extension"}},
        {"type": "compaction", "summary": "earlier"},
    ]
    transcript = pi_format.parse("\n".join(json.dumps(line) for line in lines))
    assert transcript.cwd == "/"
    assert [(turn.role, turn.parts) for turn in transcript.turns] == [
        ("user", ("[tool: bash git status]",))
    ]


def test_pi_dir_option_reads_only_matching_sessions(home: Path) -> None:
    transcripts.pi_tree(home / ".pi" / "agent" / "sessions", sessions=3)
    source = pi_format.SOURCE
    ref = source.identify(None, [("dir", "/home/alice/app")])
    assert [raw.metadata["session_id"] for raw, _ in documents(source, ref)] == [
        transcripts.ident("pi", 0),
        transcripts.ident("pi", 2),
    ]


# ChatGPT ---------------------------------------------------------------------------------------


@pytest.fixture
def export(home: Path) -> Path:
    return transcripts.chatgpt_export(home / "export", conversations=3, turns=2)


def test_chatgpt_files_the_shown_branch_of_each_conversation(export: Path) -> None:
    source = chatgpt_format.SOURCE
    ref = source.identify(str(export), [])
    assert ref.locator == str(export.parent)
    filed = documents(source, ref)
    assert len(filed) == 3
    raw, document = filed[0]
    conversation_id = transcripts.ident("chatgpt", 0)
    assert raw.external_id == conversation_id
    assert raw.occurred_at == "2026-09-14T10:00:00Z"
    assert raw.metadata["title"] == "Deploy timeouts 0"
    assert document.title == "Deploy timeouts 0"
    assert document.room is None  # the source's default room, `conversations`
    assert document.name == conversation_id
    assert document.uri == f"https://chatgpt.com/c/{conversation_id}"
    assert document.segments[:2] == [
        f"[2026-09-14 10:00 UTC] user: {question(0, 0)}\n",
        f"[2026-09-14 10:00 UTC] assistant: [tool: python print(1)]\n{answer(0, 0)}\n",
    ]
    assert len(document.segments) == 4
    assert "abandoned" not in filed_text(document)
    assert_left_out(document)


def test_chatgpt_pages_by_update_time_then_id(home: Path) -> None:
    conversations = [transcripts.chatgpt_conversation(n, 1) for n in range(3)]
    conversations[2]["update_time"] = conversations[1]["update_time"]
    transcripts.write_export(home / "export", conversations)
    source = chatgpt_format.SOURCE
    ref = source.identify(str(home / "export"), [])
    first = source.discover(ref, "null", 1)
    assert [c.external_id for c in first.candidates] == [conversations[0]["id"]]
    tied = sorted(conversations[1:], key=lambda conversation: conversation["id"])
    rest = source.discover(ref, first.candidates[0].cursor_after, 5)
    assert [c.external_id for c in rest.candidates] == [c["id"] for c in tied]
    assert rest.exhausted
    assert json.loads(rest.candidates[0].cursor_after) == {
        "update_time_us": round(tied[0]["update_time"] * 1_000_000),
        "key": tied[0]["id"],
    }


def test_chatgpt_reads_a_conversation_again_after_the_export_changed(
    export: Path, home: Path
) -> None:
    source = chatgpt_format.SOURCE
    ref = source.identify(str(home / "export"), [])
    candidates = everything(source, ref)
    before = source.read(ref, candidates[2])
    first_id = transcripts.ident("chatgpt", 0)
    transcripts.append_chatgpt(home / "export", first_id, "Ünïcode follow-up ✓", at(9, 0))
    again = source.discover(ref, candidates[-1].cursor_after, 10).candidates
    assert [candidate.external_id for candidate in again] == [first_id]
    edited = source.read(ref, again[0])
    assert edited is not None
    assert source.normalize(edited).segments[-1].endswith("user: Ünïcode follow-up ✓\n")
    # The third conversation moved in the file; its old span is found again by id.
    moved = source.read(ref, candidates[2])
    assert before is not None and moved is not None
    assert moved.revision == before.revision


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_chatgpt_spans_are_byte_offsets(
    home: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chatgpt_format, "CHUNK", chunk)
    conversations = [transcripts.chatgpt_conversation(n, 1) for n in range(3)]
    conversations[0]["title"] = "Ünïcode ✓ title"
    path = transcripts.write_export(home / "export", conversations)
    data = b"\xef\xbb\xbf" + path.read_bytes().replace(b"}, {", b"} ,\n {")
    found = list(chatgpt_format.conversations(io.BytesIO(data)))
    assert [conversation for conversation, _, _ in found] == conversations
    for conversation, start, length in found:
        assert json.loads(data[start : start + length]) == conversation


def test_chatgpt_since_skips_conversations_not_updated_since(export: Path) -> None:
    source = chatgpt_format.SOURCE
    ref = source.identify(str(export.parent), [("since", "2026-09-14T12:00:00Z")])
    assert [c.external_id for c in everything(source, ref)] == [transcripts.ident("chatgpt", 2)]


def test_chatgpt_refuses_what_is_not_an_export(home: Path) -> None:
    source = chatgpt_format.SOURCE
    (home / "empty").mkdir()
    with pytest.raises(mt.InvalidInput, match=r"conversations\.json"):
        source.identify(str(home / "empty"), [])
    with pytest.raises(mt.InvalidInput, match="locator"):
        source.identify(None, [])
    with pytest.raises(mt.InvalidInput, match="'dir'"):
        source.identify(str(home / "empty"), [("dir", "/x")])
    (home / "empty" / "conversations.json").write_text('{"not": "a list"}')
    ref = source.identify(str(home / "empty"), [])
    with pytest.raises(mt.SourceFailed, match="not a JSON array"):
        source.discover(ref, "null", 10)
    (home / "empty" / "conversations.json").write_text('[{"id": "a"}, {"id": ')
    with pytest.raises(mt.SourceFailed, match="not valid JSON"):
        source.discover(ref, "null", 10)


def test_chatgpt_leaves_out_hidden_and_reasoning_messages() -> None:
    def node(parent: str | None, role: str, content: dict[str, Any], **extra: Any) -> dict:
        return {
            "parent": parent,
            "message": {"author": {"role": role}, "content": content, **extra},
        }

    conversation = {
        "id": "c",
        "current_node": "d",
        "mapping": {
            "a": node(None, "user", {"content_type": "user_editable_context", "parts": ["me"]}),
            "b": node(
                "a",
                "user",
                {"content_type": "text", "parts": ["hi"]},
                metadata={"is_visually_hidden_from_conversation": True},
            ),
            "c": node("b", "assistant", {"content_type": "reasoning_recap", "content": "thought"}),
            "d": node(
                "c",
                "user",
                {
                    "content_type": "multimodal_text",
                    "parts": [
                        {"content_type": "image_asset_pointer"},
                        {"content_type": "audio_transcription", "text": "spoken"},
                        "typed",
                    ],
                },
            ),
        },
    }
    transcript = chatgpt_format.parse(conversation)
    assert [(turn.role, turn.parts) for turn in transcript.turns] == [("user", ("spoken", "typed"))]


# opencode --------------------------------------------------------------------------------------


class Recorded:
    """A runner that answers from the stand-in `opencode` and remembers what it was asked."""

    def __init__(self, stub: Path) -> None:
        self.stub = stub
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> opencode_format.Output:
        self.calls.append(args)
        done = subprocess.run([str(self.stub), *args], capture_output=True, check=False)
        return opencode_format.Output(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def opencode(home: Path) -> Iterator[tuple[opencode_format.OpencodeSource, Recorded, list[str]]]:
    fixture = home / "opencode.json"
    ids = transcripts.opencode_fixture(fixture, sessions=3, turns=2)
    runner = Recorded(transcripts.opencode_stub(home / "bin", fixture))
    yield opencode_format.OpencodeSource(runner), runner, ids


def test_opencode_files_top_level_sessions_through_the_cli(
    opencode: tuple[opencode_format.OpencodeSource, Recorded, list[str]],
) -> None:
    source, runner, ids = opencode
    ref = source.identify(None, [])
    filed = documents(source, ref)
    assert [raw.external_id for raw, _ in filed] == ids
    raw, document = filed[0]
    assert raw.metadata == {
        "session_id": ids[0],
        "cwd": "/home/alice/app",
        "model": "anthropic/claude-x-1",
        "title": "Deploy timeouts 0",
    }
    assert raw.occurred_at == "2026-09-14T10:00:00Z"
    assert document.room == "home-alice-app"
    assert document.name == ids[0]
    assert document.segments[:2] == [
        f"[2026-09-14 10:00 UTC] user: {question(0, 0)}\n",
        f"[2026-09-14 10:00 UTC] assistant: {answer(0, 0)}\n[tool: bash ls -la]\n",
    ]
    assert "Called the Read tool" not in filed_text(document)
    assert_left_out(document)
    assert runner.calls[0][0] == "db" and runner.calls[0][2:] == ["--format", "json"]
    assert runner.calls[1] == ["export", ids[0]]


def test_opencode_pages_by_time_updated_then_id(
    opencode: tuple[opencode_format.OpencodeSource, Recorded, list[str]], home: Path
) -> None:
    source, _, ids = opencode
    ref = source.identify(None, [])
    first = source.discover(ref, "null", 2)
    assert [c.external_id for c in first.candidates] == ids[:2]
    assert not first.exhausted
    transcripts.append_opencode(home / "opencode.json", ids[0], "And the retries?", at(7, 0))
    rest = source.discover(ref, first.candidates[-1].cursor_after, 5)
    assert [c.external_id for c in rest.candidates] == [ids[2], ids[0]]
    assert rest.exhausted
    assert json.loads(rest.candidates[-1].cursor_after) == {
        "time_updated": transcripts.ms(at(7, 0)),
        "key": ids[0],
    }


def test_opencode_cursor_stays_before_sessions_updated_within_the_settling_time(
    opencode: tuple[opencode_format.OpencodeSource, Recorded, list[str]],
) -> None:
    """A session stamped just before the run looked may be committed after a later one: the
    cursor does not pass a session updated less than two seconds before the run."""
    source, runner, ids = opencode
    ref = source.identify(None, [])
    settled = source.discover(ref, "null", 5).candidates
    newest_ms = json.loads(settled[-1].cursor_after)["time_updated"]
    recent = opencode_format.OpencodeSource(
        runner, clock_ns=lambda: newest_ms * 1_000_000 + mt.SETTLING_NS
    )
    page = recent.discover(ref, "null", 5).candidates
    assert [c.external_id for c in page] == ids
    assert page[-1].cursor_after == page[-2].cursor_after == settled[-2].cursor_after
    again = recent.discover(ref, page[-1].cursor_after, 5).candidates
    assert [c.external_id for c in again] == [ids[-1]]


def test_opencode_since_is_asked_of_the_database(
    opencode: tuple[opencode_format.OpencodeSource, Recorded, list[str]],
) -> None:
    source, runner, ids = opencode
    ref = source.identify(None, [("since", "2026-09-14T12:00:00Z")])
    assert [c.external_id for c in everything(source, ref)] == [ids[2]]
    assert "time_updated >= 1789387200000" in runner.calls[-1][1]


def test_opencode_quotes_the_cursor_in_its_query() -> None:
    sql = opencode_format.session_query((5, "ses_a' OR 1=1 --"), None, 10)
    assert "id > 'ses_a'' OR 1=1 --'" in sql
    assert sql.endswith("LIMIT 11")
    with pytest.raises(mt.CursorInvalid):
        opencode_format.session_query((5, "a\0b"), None, 10)


def test_opencode_dir_option_reads_only_matching_sessions(
    opencode: tuple[opencode_format.OpencodeSource, Recorded, list[str]],
) -> None:
    source, _, ids = opencode
    ref = source.identify(None, [("dir", "/home/alice/api")])
    assert ref.account == "dir=/home/alice/api"
    assert [raw.external_id for raw, _ in documents(source, ref)] == [ids[1]]


def test_opencode_place_is_the_cli_data(home: Path) -> None:
    source = opencode_format.OpencodeSource(lambda args: opencode_format.Output(0, b"[]", b""))
    default = str(home / ".local" / "share" / "opencode")
    assert source.identify(None, []).locator == default
    assert source.identify(default + "/", []).locator == default
    with pytest.raises(mt.InvalidInput, match="cannot read"):
        source.identify("/srv/opencode", [])


@pytest.mark.parametrize(
    ("outcome", "skipped"),
    [
        (opencode_format.ProcessRefused("'opencode' wrote more than 16 MiB"), True),
        (opencode_format.Output(1, b"", b"Error: Session not found: ses_x"), True),
        (opencode_format.ProcessRefused("'opencode' is not installed (not found on PATH)"), False),
        (opencode_format.Output(2, b"", b"boom"), False),
        (opencode_format.Output(0, b"Exporting...\nno json", b""), False),
    ],
)
def test_opencode_skips_an_oversized_or_vanished_session_and_fails_otherwise(
    outcome: Any, skipped: bool
) -> None:
    def run(args: list[str]) -> opencode_format.Output:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    source = opencode_format.OpencodeSource(run)
    ref = source.identify(None, [])
    candidate = mt.Candidate("ses_x", "null", "ses_x")
    if skipped:
        assert source.read(ref, candidate) is None
    else:
        with pytest.raises(mt.SourceFailed):
            source.read(ref, candidate)


def test_opencode_without_the_db_command_fails_clearly() -> None:
    source = opencode_format.OpencodeSource(
        lambda args: opencode_format.Output(1, b"", b"Unknown argument: db")
    )
    with pytest.raises(mt.SourceFailed, match=r"1\.2 or later"):
        source.discover(source.identify(None, []), "null", 10)
