"""Session trees the bundled transcript sources read, written the way each agent writes them:
Claude Code projects, Codex rollouts, a ChatGPT export, pi sessions, and a stand-in `opencode`
executable answering from a JSON fixture.

Everything is derived from the arguments (ids from a hash, times from `START`, file times set
to the session's last message), so two runs write the same bytes and mine in the same order.
Each session says, in the same words for every agent: a user question, the assistant's thinking
(which a transcript leaves out), its answer, a shell tool call `ls -la` and that tool's output
(`TOOL-OUTPUT ...`, also left out).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

START = dt.datetime(2026, 9, 14, 10, 0, tzinfo=dt.UTC)
CWDS = ("/home/alice/app", "/home/alice/api")
THINKING = "THINKING that must not be filed"
TOOL_OUTPUT = "TOOL-OUTPUT that must not be filed"


def ident(*parts: object) -> str:
    """A stable UUID-shaped id for `parts`."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def question(session: int, number: int) -> str:
    return f"Question {number} of session {session}: why does the deploy time out?"


def answer(session: int, number: int) -> str:
    return f"Answer {number} of session {session}: the health check waits on the database."


def at(session: int, minute: int) -> dt.datetime:
    """Session `session` starts `session` hours after START; its turns are minutes apart."""
    return START + dt.timedelta(hours=session, minutes=minute)


def iso(instant: dt.datetime) -> str:
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(instant: dt.datetime) -> int:
    return int(instant.timestamp() * 1000)


def write_lines(path: Path, entries: Sequence[dict[str, Any]], modified: dt.datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    touch(path, modified)
    return path


def append_lines(path: Path, entries: Sequence[dict[str, Any]], modified: dt.datetime) -> Path:
    """Edit a session as its agent does: lines appended, the file's time moved on."""
    with path.open("a", encoding="utf-8") as file:
        file.writelines(json.dumps(entry) + "\n" for entry in entries)
    touch(path, modified)
    return path


def touch(path: Path, modified: dt.datetime) -> None:
    nanoseconds = int(modified.timestamp()) * 1_000_000_000
    os.utime(path, ns=(nanoseconds, nanoseconds))


# Claude Code -----------------------------------------------------------------------------------


def claude_entry(
    kind: str, session_id: str, cwd: str, when: dt.datetime, content: Any, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update({"id": f"msg_{ident(session_id, iso(when))[:12]}", "model": "claude-x-1"})
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": "2.0.61",
        "type": kind,
        "message": message,
        "uuid": ident(session_id, kind, iso(when)),
        "timestamp": iso(when),
        **extra,
    }


def claude_turn(session: int, session_id: str, cwd: str, number: int) -> list[dict[str, Any]]:
    """One exchange: the question, the answer with thinking and a tool call, the tool's result
    (a user entry of tool_result blocks only), and a closing text."""
    asked = at(session, 2 * number)
    return [
        claude_entry("user", session_id, cwd, asked, question(session, number)),
        claude_entry(
            "assistant",
            session_id,
            cwd,
            asked + dt.timedelta(seconds=5),
            [
                {"type": "thinking", "thinking": THINKING, "signature": "c2ln"},
                {"type": "text", "text": answer(session, number)},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": "ls -la"},
                },
            ],
        ),
        claude_entry(
            "user",
            session_id,
            cwd,
            asked + dt.timedelta(seconds=6),
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": TOOL_OUTPUT}],
            toolUseResult={"stdout": TOOL_OUTPUT},
        ),
        claude_entry(
            "assistant",
            session_id,
            cwd,
            asked + dt.timedelta(seconds=9),
            [{"type": "text", "text": f"Done with turn {number}."}],
        ),
    ]


def claude_tree(root: Path, *, sessions: int = 3, turns: int = 2) -> list[Path]:
    """`root` as `~/.claude/projects`: sessions alternate between CWDS, each beside a subagent
    file (`agent-*.jsonl`, sidechain) that a transcript leaves out."""
    written = []
    for session in range(sessions):
        cwd = CWDS[session % len(CWDS)]
        session_id = ident("claude", session)
        project = root / cwd.replace("/", "-")
        entries: list[dict[str, Any]] = [
            {"type": "summary", "summary": f"Session {session}", "leafUuid": ident(session)},
            claude_entry(
                "user",
                session_id,
                cwd,
                at(session, 0),
                "<local-command-caveat>Caveat: generated by local commands</local-command-caveat>",
                isMeta=True,
            ),
        ]
        for number in range(turns):
            entries += claude_turn(session, session_id, cwd, number)
        last = at(session, 2 * turns)
        written.append(write_lines(project / f"{session_id}.jsonl", entries, last))
        sidechain = claude_entry("user", session_id, cwd, at(session, 1), "subagent prompt")
        write_lines(
            project / f"agent-{session_id[:8]}.jsonl", [{**sidechain, "isSidechain": True}], last
        )
    return written


def append_claude(path: Path, text: str, when: dt.datetime) -> Path:
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    session_id, cwd = last["sessionId"], last["cwd"]
    return append_lines(
        path,
        [
            claude_entry("user", session_id, cwd, when, text),
            claude_entry("assistant", session_id, cwd, when, [{"type": "text", "text": "Noted."}]),
        ],
        when,
    )


# Codex -----------------------------------------------------------------------------------------


def codex_item(when: dt.datetime | None, payload: dict[str, Any]) -> dict[str, Any]:
    if when is None:
        return payload
    return {"timestamp": iso(when), "type": "response_item", "payload": payload}


def codex_message(role: str, *texts: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {
        "type": "message",
        "role": role,
        "content": [{"type": kind, "text": text} for text in texts],
    }


def codex_turn(session: int, number: int, legacy: bool) -> list[dict[str, Any]]:
    asked = at(session, 2 * number)

    def when(seconds: int) -> dt.datetime | None:
        return None if legacy else asked + dt.timedelta(seconds=seconds)

    arguments = json.dumps({"command": ["bash", "-lc", "ls -la"], "workdir": "/tmp"})
    entries = [
        codex_item(when(0), codex_message("user", question(session, number))),
        codex_item(
            when(1),
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": THINKING}]},
        ),
        codex_item(
            when(2),
            {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": "c1"},
        ),
        codex_item(
            when(3), {"type": "function_call_output", "call_id": "c1", "output": TOOL_OUTPUT}
        ),
        codex_item(when(4), codex_message("assistant", answer(session, number))),
    ]
    if not legacy:
        entries.insert(
            1,
            {
                "timestamp": iso(asked),
                "type": "event_msg",
                "payload": {"type": "user_message", "message": question(session, number)},
            },
        )
    return entries


def codex_tree(
    root: Path, *, sessions: int = 3, turns: int = 2, legacy: bool = False
) -> list[Path]:
    """`root` as `~/.codex/sessions`: `YYYY/MM/DD/rollout-<time>-<id>.jsonl`, each opening with
    the context Codex injects (a developer message, AGENTS.md, the environment). `legacy`
    writes the older rollouts: no envelope and no times."""
    written = []
    for session in range(sessions):
        cwd = CWDS[session % len(CWDS)]
        session_id = ident("codex", session)
        begun = at(session, 0)
        environment = f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
        meta = {"id": session_id, "timestamp": iso(begun), "instructions": None}
        injected = codex_message("user", f"# AGENTS.md instructions for {cwd}\n\nUse pytest.")
        if legacy:
            entries: list[dict[str, Any]] = [meta, {"record_type": "state"}, injected]
            entries.append(codex_message("user", environment))
        else:
            entries = [
                {
                    "timestamp": iso(begun),
                    "type": "session_meta",
                    "payload": {**meta, "cwd": cwd, "originator": "codex_cli_rs"},
                },
                codex_item(begun, codex_message("developer", "You are Codex.")),
                codex_item(begun, {**injected}),
                codex_item(begun, codex_message("user", environment)),
                {
                    "timestamp": iso(begun),
                    "type": "turn_context",
                    "payload": {"cwd": cwd, "model": "gpt-x-codex"},
                },
            ]
        for number in range(turns):
            entries += codex_turn(session, number, legacy)
        name = f"rollout-{begun:%Y-%m-%dT%H-%M-%S}-{session_id}.jsonl"
        path = root / f"{begun:%Y/%m/%d}" / name
        written.append(write_lines(path, entries, at(session, 2 * turns)))
    return written


def append_codex(path: Path, text: str, when: dt.datetime) -> Path:
    return append_lines(
        path,
        [
            codex_item(when, codex_message("user", text)),
            codex_item(when, codex_message("assistant", "Noted.")),
        ],
        when,
    )


# pi --------------------------------------------------------------------------------------------


def pi_entry(session_id: str, when: dt.datetime, message: dict[str, Any]) -> dict[str, Any]:
    entry_id = ident(session_id, iso(when), message["role"])[:8]
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": iso(when),
        "message": {**message, "timestamp": ms(when)},
    }


def pi_turn(session: int, session_id: str, number: int) -> list[dict[str, Any]]:
    asked = at(session, 2 * number)
    return [
        pi_entry(session_id, asked, {"role": "user", "content": question(session, number)}),
        pi_entry(
            session_id,
            asked + dt.timedelta(seconds=5),
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": THINKING},
                    {"type": "text", "text": answer(session, number)},
                    {
                        "type": "toolCall",
                        "id": "call_1",
                        "name": "bash",
                        "arguments": {"command": "ls -la"},
                    },
                ],
                "provider": "anthropic",
                "model": "claude-x-1",
                "stopReason": "toolUse",
            },
        ),
        pi_entry(
            session_id,
            asked + dt.timedelta(seconds=6),
            {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "bash",
                "content": [{"type": "text", "text": TOOL_OUTPUT}],
                "isError": False,
            },
        ),
    ]


def pi_tree(root: Path, *, sessions: int = 3, turns: int = 2) -> list[Path]:
    """`root` as `~/.pi/agent/sessions`: `--<cwd>--/<time>_<id>.jsonl` in format v3, and a
    subagent artefact two levels down that is not a session."""
    written = []
    for session in range(sessions):
        cwd = CWDS[session % len(CWDS)]
        session_id = ident("pi", session)
        begun = at(session, 0)
        entries: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": session_id,
                "timestamp": iso(begun),
                "cwd": cwd,
            },
            {
                "type": "model_change",
                "id": "m0",
                "parentId": None,
                "timestamp": iso(begun),
                "provider": "anthropic",
                "modelId": "claude-x-1",
            },
        ]
        for number in range(turns):
            entries += pi_turn(session, session_id, number)
        directory = root / f"-{cwd.replace('/', '-')}--"
        name = f"{begun:%Y-%m-%dT%H-%M-%S-000Z}_{session_id}.jsonl"
        written.append(write_lines(directory / name, entries, at(session, 2 * turns)))
        artefact = directory / "subagent-artifacts" / "worker.jsonl"
        write_lines(artefact, [{"type": "session", "version": 3, "id": "sub", "cwd": cwd}], begun)
    return written


def append_pi(path: Path, text: str, when: dt.datetime) -> Path:
    session_id = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["id"]
    return append_lines(
        path,
        [
            pi_entry(
                session_id, when, {"role": "user", "content": [{"type": "text", "text": text}]}
            ),
            pi_entry(
                session_id,
                when,
                {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            ),
        ],
        when,
    )


# ChatGPT ---------------------------------------------------------------------------------------


def chatgpt_message(role: str, when: dt.datetime, parts: list[Any], **extra: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"content_type": extra.pop("content_type", "text"), "parts": parts}
    if "code" in extra:
        content = {"content_type": "code", "language": "python", "text": extra.pop("code")}
    metadata = extra.pop("metadata", {})
    return {
        "id": ident(role, iso(when), json.dumps(parts)),
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": when.timestamp(),
        "update_time": None,
        "content": content,
        "status": "finished_successfully",
        "end_turn": True,
        "weight": 1.0,
        "metadata": metadata,
        "recipient": extra.pop("recipient", "all"),
        **extra,
    }


def chatgpt_conversation(number: int, turns: int) -> dict[str, Any]:
    """A conversation whose shown branch is every turn's question and answer; a regenerated
    answer left on another branch, a hidden system message, reasoning and a code tool call with
    its output are there too, and none of them is filed."""
    mapping: dict[str, Any] = {}
    begun = at(number, 0)

    def add(node_id: str, parent: str | None, message: dict[str, Any] | None) -> str:
        mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
        if parent is not None:
            mapping[parent]["children"].append(node_id)
        return node_id

    hidden = {"is_visually_hidden_from_conversation": True}
    node = add("client-created-root", None, None)
    node = add(
        f"n{number}-system",
        node,
        chatgpt_message("system", begun, [""], metadata=hidden),
    )
    for turn_number in range(turns):
        asked = at(number, 2 * turn_number)
        later = asked + dt.timedelta(seconds=5)
        node = add(
            f"n{number}-{turn_number}-q",
            node,
            chatgpt_message("user", asked, [question(number, turn_number)]),
        )
        add(
            f"n{number}-{turn_number}-old",
            node,
            chatgpt_message("assistant", later, ["An abandoned regeneration."]),
        )
        node = add(
            f"n{number}-{turn_number}-think",
            node,
            chatgpt_message("assistant", later, [THINKING], content_type="thoughts"),
        )
        node = add(
            f"n{number}-{turn_number}-code",
            node,
            chatgpt_message("assistant", later, [], recipient="python", code="print(1)"),
        )
        node = add(
            f"n{number}-{turn_number}-out",
            node,
            chatgpt_message("tool", later, [TOOL_OUTPUT], content_type="execution_output"),
        )
        node = add(
            f"n{number}-{turn_number}-a",
            node,
            chatgpt_message(
                "assistant", later, [answer(number, turn_number)], metadata={"model_slug": "gpt-x"}
            ),
        )
    conversation_id = ident("chatgpt", number)
    return {
        "title": f"Deploy timeouts {number}",
        "create_time": begun.timestamp(),
        "update_time": at(number, 2 * turns).timestamp(),
        "mapping": mapping,
        "moderation_results": [],
        "current_node": node,
        "conversation_id": conversation_id,
        "id": conversation_id,
        "default_model_slug": "gpt-x",
    }


def chatgpt_export(root: Path, *, conversations: int = 3, turns: int = 2) -> Path:
    """An unpacked export in `root`: `conversations.json`, one compact line as ChatGPT writes
    it, and the `user.json` beside it that the source does not read."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "user.json").write_text(json.dumps({"id": "user-1"}), encoding="utf-8")
    listed = [chatgpt_conversation(number, turns) for number in range(conversations)]
    return write_export(root, listed)


def write_export(root: Path, conversations: list[dict[str, Any]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "conversations.json"
    path.write_text(json.dumps(conversations, ensure_ascii=False), encoding="utf-8")
    return path


def append_chatgpt(root: Path, conversation_id: str, text: str, when: dt.datetime) -> Path:
    """The export as it is once the user went on with one conversation: a question appended to
    its shown branch and its `update_time` moved to `when`."""
    path = root / "conversations.json"
    conversations = json.loads(path.read_text(encoding="utf-8"))
    for conversation in conversations:
        if conversation["id"] == conversation_id:
            leaf = conversation["current_node"]
            added = f"{leaf}-more"
            conversation["mapping"][leaf]["children"].append(added)
            conversation["mapping"][added] = {
                "id": added,
                "message": chatgpt_message("user", when, [text]),
                "parent": leaf,
                "children": [],
            }
            conversation["current_node"] = added
            conversation["update_time"] = when.timestamp()
    return write_export(root, conversations)


# opencode --------------------------------------------------------------------------------------

OPENCODE_STUB = '''\
"""A stand-in for the `opencode` CLI: `db '<sql>' --format json` and `export <id>`, answered
from the sessions of a JSON fixture."""

import json
import sqlite3
import sys

FIXTURE = {fixture!r}


def main(args):
    with open(FIXTURE, encoding="utf-8") as file:
        sessions = json.load(file)["sessions"]
    if args[:1] == ["db"] and args[2:] == ["--format", "json"]:
        database = sqlite3.connect(":memory:")
        database.row_factory = sqlite3.Row
        database.execute(
            "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT, "
            "title TEXT, time_created INTEGER, time_updated INTEGER)"
        )
        for session in sessions:
            info = session["info"]
            database.execute(
                "INSERT INTO session VALUES (?, ?, ?, ?, ?, ?)",
                (info["id"], info.get("parentID"), info["directory"], info["title"],
                 info["time"]["created"], info["time"]["updated"]),
            )
        rows = [dict(row) for row in database.execute(args[1])]
        print(json.dumps(rows, indent=2))
        return 0
    if args[:1] == ["export"] and len(args) == 2:
        sys.stderr.write(f"Exporting session: {{args[1]}}\\n")
        for session in sessions:
            if session["info"]["id"] == args[1]:
                print(json.dumps(session, indent=2))
                return 0
        sys.stderr.write(f"Error: Session not found: {{args[1]}}\\n")
        return 1
    sys.stderr.write("usage: opencode db [query] --format json | opencode export <id>\\n")
    return 2


sys.exit(main(sys.argv[1:]))
'''


def opencode_message(
    session_id: str, role: str, when: dt.datetime, parts: list[dict[str, Any]]
) -> dict[str, Any]:
    message_id = f"msg_{ident(session_id, role, iso(when))[:12]}"
    info: dict[str, Any] = {
        "id": message_id,
        "sessionID": session_id,
        "role": role,
        "time": {"created": ms(when)},
    }
    if role == "assistant":
        info.update({"modelID": "claude-x-1", "providerID": "anthropic", "mode": "build"})
    stamped = [
        {"id": f"prt_{index}", "sessionID": session_id, "messageID": message_id, **part}
        for index, part in enumerate(parts)
    ]
    return {"info": info, "parts": stamped}


def opencode_session(number: int, turns: int, parent: str | None = None) -> dict[str, Any]:
    session_id = f"ses_{ident('opencode', number, parent)[:20].replace('-', '')}"
    messages = []
    for turn_number in range(turns):
        asked = at(number, 2 * turn_number)
        messages.append(
            opencode_message(
                session_id,
                "user",
                asked,
                [
                    {"type": "text", "text": question(number, turn_number)},
                    {"type": "text", "text": "Called the Read tool", "synthetic": True},
                ],
            )
        )
        tool_state = {
            "status": "completed",
            "input": {"command": "ls -la", "description": "List files"},
            "output": TOOL_OUTPUT,
            "title": "ls -la",
            "time": {"start": ms(asked), "end": ms(asked) + 10},
        }
        messages.append(
            opencode_message(
                session_id,
                "assistant",
                asked + dt.timedelta(seconds=5),
                [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": THINKING},
                    {"type": "text", "text": answer(number, turn_number)},
                    {"type": "tool", "callID": "call_1", "tool": "bash", "state": tool_state},
                    {"type": "step-finish", "reason": "tool-calls"},
                ],
            )
        )
    info: dict[str, Any] = {
        "id": session_id,
        "slug": f"session-{number}",
        "projectID": "global",
        "directory": CWDS[number % len(CWDS)],
        "title": f"Deploy timeouts {number}",
        "version": "1.2.3",
        "time": {"created": ms(at(number, 0)), "updated": ms(at(number, 2 * turns))},
    }
    if parent is not None:
        info["parentID"] = parent
    return {"info": info, "messages": messages}


def opencode_fixture(path: Path, *, sessions: int = 3, turns: int = 2) -> list[str]:
    """The sessions the stand-in answers with, and a subagent session under the first (which
    the source leaves out); the top-level ids, in the order written."""
    listed = [opencode_session(number, turns) for number in range(sessions)]
    if listed:
        listed.append(opencode_session(0, 1, parent=listed[0]["info"]["id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sessions": listed}, indent=2), encoding="utf-8")
    return [session["info"]["id"] for session in listed if "parentID" not in session["info"]]


def append_opencode(path: Path, session_id: str, text: str, when: dt.datetime) -> Path:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    for session in fixture["sessions"]:
        if session["info"]["id"] == session_id:
            part = {"type": "text", "text": text}
            session["messages"].append(opencode_message(session_id, "user", when, [part]))
            session["info"]["time"]["updated"] = ms(when)
    path.write_text(json.dumps(fixture, indent=2), encoding="utf-8")
    return path


def opencode_stub(bin_dir: Path, fixture: Path) -> Path:
    """An executable `opencode` in `bin_dir` that answers the commands the opencode source runs
    from `fixture`, run by this interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "opencode"
    source = OPENCODE_STUB.format(fixture=str(fixture))
    script.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script
