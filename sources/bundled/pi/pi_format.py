"""pi coding agent sessions: `~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`, format v3.

The first line is the header `{"type": "session", "version": 3, "id", "timestamp", "cwd"}`; each
`message` entry after it holds a `message` with a `role`: `user` (`content` a string or `text` and
`image` blocks), `assistant` (`text`, `thinking` and `toolCall` blocks with `name` and
`arguments`, and its `model`), `toolResult` (a tool's output), `bashExecution` (a command the user
ran with `!`), or the summaries and extension messages pi writes itself. Entries form a tree by
`id`/`parentId` when the user branches; a transcript keeps every message in the order written,
branches included.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from memcastle_transcripts import (
    FileSource,
    Transcript,
    Turn,
    json_lines,
    parse_instant,
    tool_marker,
    turn,
)


def parse(body: str) -> Transcript:
    header: dict[str, Any] = {}
    model = None
    turns: list[Turn] = []
    for entry in json_lines(body):
        kind = entry.get("type")
        if kind == "session" and not header:
            header = entry
        elif kind == "model_change":
            model = _text(entry.get("modelId")) or model
        elif kind == "message" and isinstance(entry.get("message"), dict):
            message = entry["message"]
            if message.get("role") == "assistant":
                model = _text(message.get("model")) or model
            time = parse_instant(entry.get("timestamp")) or parse_instant(message.get("timestamp"))
            found = _turn(message, time)
            if found is not None:
                turns.append(found)
    return Transcript(
        session_id=_text(header.get("id")),
        cwd=_text(header.get("cwd")),
        model=model,
        turns=turns,
        started=parse_instant(header.get("timestamp")),
    )


def _turn(message: dict[str, Any], time: dt.datetime | None) -> Turn | None:
    role = message.get("role")
    if role == "user":
        return turn("user", time, _parts(message.get("content")))
    if role == "assistant":
        return turn("assistant", time, _parts(message.get("content")))
    if role == "bashExecution":
        return turn("user", time, [tool_marker("bash", message.get("command"))])
    return None


def _parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "toolCall":
            parts.append(tool_marker(str(block.get("name") or ""), block.get("arguments")))
    return parts


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


SOURCE = FileSource(
    name="pi",
    default_locator="~/.pi/agent/sessions",
    max_depth=1,
    parse=parse,
)
