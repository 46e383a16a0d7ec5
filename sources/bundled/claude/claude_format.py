"""Claude Code session transcripts: `~/.claude/projects/<encoded-cwd>/<session-id>.jsonl`.

Each line is an entry; those of `type` `user` and `assistant` carry a `message` whose `content`
is a string or a list of blocks (`text`, `thinking`, `redacted_thinking`, `tool_use`,
`tool_result`, `image`), with the session's `cwd`, `sessionId` and the entry's `timestamp`.
Other entries (`summary`, `system`, `file-history-snapshot`, ...) are not conversation. Subagent
work is left out: `agent-*.jsonl` files and entries marked `isSidechain`; so are `isMeta`
entries (caveats Claude Code injects), thinking, tool results and the output of local commands.
"""

from __future__ import annotations

import re
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

# A slash command the user typed is logged as these tags; its output as the next ones.
COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
COMMAND_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>")


def parse(body: str) -> Transcript:
    session_id = cwd = model = None
    turns: list[Turn] = []
    for entry in json_lines(body):
        session_id = session_id or _text(entry.get("sessionId"))
        cwd = cwd or _text(entry.get("cwd"))
        if not _is_conversation(entry):
            continue
        message = entry["message"]
        if entry["type"] == "assistant":
            model = _text(message.get("model")) or model
        found = turn(entry["type"], parse_instant(entry.get("timestamp")), _parts(message))
        if found is not None:
            turns.append(found)
    return Transcript(session_id=session_id, cwd=cwd, model=model, turns=turns)


def _is_conversation(entry: dict[str, Any]) -> bool:
    return (
        entry.get("type") in ("user", "assistant")
        and isinstance(entry.get("message"), dict)
        and not entry.get("isSidechain")
        and not entry.get("isMeta")
        and not entry.get("isApiErrorMessage")
    )


def _parts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [_user_text(content)]
    if not isinstance(content, list):
        return []
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(_user_text(block["text"]))
        elif block.get("type") == "tool_use":
            parts.append(tool_marker(str(block.get("name") or ""), block.get("input")))
    return parts


def _user_text(text: str) -> str:
    """What the user said: a slash command as `/name args`, the output of a local command as
    nothing (it is tool output)."""
    if text.lstrip().startswith(COMMAND_OUTPUT):
        return ""
    command = COMMAND.search(text)
    if command is None:
        return text
    args = COMMAND_ARGS.search(text)
    return f"{command.group(1).strip()} {args.group(1).strip() if args else ''}".strip()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _main_session(name: str) -> bool:
    """Subagents write `agent-<id>.jsonl` beside (or below) the session that ran them."""
    return not name.startswith("agent-")


SOURCE = FileSource(
    name="claude",
    default_locator="~/.claude/projects",
    max_depth=1,
    parse=parse,
    accept=_main_session,
)
