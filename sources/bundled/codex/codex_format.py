"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`.

Current rollouts wrap each line as `{"timestamp", "type", "payload"}`: a `session_meta` first
(`id`, `cwd`, `timestamp`), `turn_context` entries (the `model`), and `response_item` entries
whose payload is a `message` (`role`, `content` parts `input_text`/`output_text`), a
`function_call` (`name`, `arguments` as JSON text), a `custom_tool_call` (`name`, `input`), a
`local_shell_call`, a `web_search_call`, their outputs, or `reasoning`; `event_msg` entries repeat
what the items say for the UI. Older rollouts have no envelope: the first line is the session
(`id`, `timestamp`) and the others are the items themselves, without times; their working
directory is only in the injected `<environment_context>`.

Outputs, reasoning, `developer` messages and the context Codex injects as user messages
(environment, AGENTS.md instructions) are left out.
"""

from __future__ import annotations

import re
from typing import Any

from memcastle_transcripts import (
    FileSource,
    Transcript,
    Turn,
    as_dict,
    json_lines,
    parse_instant,
    tool_marker,
    turn,
)

ENVELOPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
# User content parts Codex writes itself, ahead of what the user typed.
INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions for",
    "<permissions instructions>",
    "<recommended_plugins>",
    "<turn_aborted>",
)
CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
PATCHED_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


def parse(body: str) -> Transcript:
    session: dict[str, Any] = {}
    context_cwd = model = None
    turns: list[Turn] = []
    for number, entry in enumerate(json_lines(body)):
        kind, payload = entry.get("type"), entry.get("payload")
        item: dict[str, Any] | None = None
        if kind in ENVELOPES and isinstance(payload, dict):
            if kind == "session_meta" and not session:
                session = payload
            elif kind == "turn_context":
                model = _text(payload.get("model")) or model
                context_cwd = context_cwd or _text(payload.get("cwd"))
            elif kind == "response_item":
                item = payload
        elif number == 0 and kind is None and "id" in entry:
            session = entry
        else:
            item = entry
        if item is None:
            continue
        context_cwd = context_cwd or _environment_cwd(item)
        found = _item(item, entry.get("timestamp"))
        if found is not None:
            turns.append(found)
    return Transcript(
        session_id=_text(session.get("id")),
        cwd=_text(session.get("cwd")) or context_cwd,
        model=model,
        turns=turns,
        started=parse_instant(session.get("timestamp")),
    )


def _item(item: dict[str, Any], timestamp: Any) -> Turn | None:
    """The turn of one response item, or None for outputs, reasoning and the rest."""
    time = parse_instant(timestamp)
    kind = item.get("type")
    if kind == "message" and item.get("role") in ("user", "assistant"):
        return turn(item["role"], time, _message_parts(item))
    if kind == "function_call":
        return turn("assistant", time, [tool_marker(_name(item), item.get("arguments"))])
    if kind == "custom_tool_call":
        return turn("assistant", time, [tool_marker(_name(item), _custom_input(item))])
    if kind == "local_shell_call":
        action = as_dict(item.get("action"))
        return turn("assistant", time, [tool_marker("shell", action.get("command"))])
    if kind == "web_search_call":
        action = as_dict(item.get("action"))
        return turn("assistant", time, [tool_marker("web_search", action.get("query"))])
    return None


def _message_parts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") in ("input_text", "output_text", "text")
        and isinstance(part.get("text"), str)
    ]
    return [text for text in texts if not text.lstrip().startswith(INJECTED)]


def _custom_input(item: dict[str, Any]) -> Any:
    """A patch is told by the files it touches, not by its first line."""
    value = item.get("input")
    if isinstance(value, str) and "*** Begin Patch" in value:
        return ", ".join(PATCHED_FILE.findall(value)) or value
    return value


def _environment_cwd(item: dict[str, Any]) -> str | None:
    """The working directory an older rollout only states in its injected environment."""
    content = item.get("content")
    if item.get("type") != "message" or not isinstance(content, list):
        return None
    for part in content:
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and text.lstrip().startswith("<environment_context>"):
            found = CWD.search(text)
            if found and found.group(1).strip():
                return found.group(1).strip()
    return None


def _name(item: dict[str, Any]) -> str:
    return str(item.get("name") or "")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


SOURCE = FileSource(
    name="codex",
    default_locator="~/.codex/sessions",
    max_depth=3,
    parse=parse,
)
