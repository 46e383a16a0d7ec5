"""opencode sessions, read through the `opencode` CLI (1.2 or later keeps them in SQLite).

`discover` asks `opencode db '<query>' --format json` (the CLI opens its database read-only and
prints the rows as a JSON array) for the top-level sessions (`parent_id IS NULL`: subagent
sessions are left out) ordered by `time_updated` (Unix milliseconds) then `id`; the cursor is
that pair. `read` runs `opencode export <session-id>`, which prints the session as JSON:
`{"info": {id, title, directory, time: {created, updated}}, "messages": [{"info": {role, time:
{created}, modelID, providerID}, "parts": [...]}]}`. Parts of type `text` are what was said
(`synthetic` ones are context opencode added), `tool` parts are calls (`tool`, `state.input`;
their `state.output` is left out), and `reasoning`, `step-*`, `snapshot`, `patch`, `file`, ... are
left out too. The host refuses output past 16 MiB: such a session is skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from time import time_ns
from typing import Any

from memcastle_transcripts import (
    SETTLING_NS,
    Candidate,
    Canonical,
    CursorInvalid,
    InvalidInput,
    Page,
    RawDoc,
    Ref,
    SourceFailed,
    Transcript,
    Turn,
    as_dict,
    canonical,
    describe,
    dir_account,
    dir_matches,
    epoch_ns,
    expand,
    load_cursor,
    metadata_text,
    occurred_at,
    page_after,
    parse_instant,
    parse_options,
    parse_since,
    revision,
    settled_cursors,
    tool_marker,
    turn,
)

NAME = "opencode"
PROGRAM = "opencode"
DEFAULT_LOCATOR = "~/.local/share/opencode"
CURSOR_FIELD = "time_updated"
# How the host says a program's output was past its cap.
OUTPUT_CAP = "16 MiB"
STDERR_TAIL = 500


class ProcessRefused(Exception):
    """The host did not run the program, or refused its output; the message says why."""


@dataclass(frozen=True)
class Output:
    status: int
    stdout: bytes
    stderr: bytes


Runner = Callable[[list[str]], Output]


def session_query(after: tuple[int, str] | None, since_ms: int | None, limit: int) -> str:
    """The SQL for the next page of top-level sessions: one row more than `limit`, to know
    whether any are left."""
    conditions = ["parent_id IS NULL"]
    if after is not None:
        mark, key = after
        conditions.append(
            f"(time_updated > {mark} OR (time_updated = {mark} AND id > {_literal(key)}))"
        )
    if since_ms is not None:
        conditions.append(f"time_updated >= {since_ms}")
    return (
        f"SELECT id, time_updated FROM session WHERE {' AND '.join(conditions)} "
        f"ORDER BY time_updated, id LIMIT {limit + 1}"
    )


def _literal(text: str) -> str:
    """`text` as an SQLite string literal: quotes doubled, and nothing a literal cannot hold."""
    if "\0" in text:
        raise CursorInvalid("the cursor's session id holds a NUL character")
    return "'" + text.replace("'", "''") + "'"


def parse(export: dict[str, Any]) -> Transcript:
    info = as_dict(export.get("info"))
    model = None
    turns: list[Turn] = []
    for message in export.get("messages") or []:
        if not isinstance(message, dict) or not isinstance(message.get("info"), dict):
            continue
        found, message_model = _turn(message["info"], message.get("parts"))
        model = message_model or model
        if found is not None:
            turns.append(found)
    times = as_dict(info.get("time"))
    return Transcript(
        session_id=_text(info.get("id")),
        cwd=_text(info.get("directory")),
        model=model,
        turns=turns,
        started=parse_instant(times.get("created")),
    )


def _turn(info: dict[str, Any], parts: Any) -> tuple[Turn | None, str | None]:
    """The turn of one message, and the model that wrote it when it is the assistant's."""
    role = info.get("role")
    if role not in ("user", "assistant"):
        return None, None
    times = as_dict(info.get("time"))
    model = None
    if role == "assistant" and _text(info.get("modelID")):
        provider = _text(info.get("providerID"))
        model = f"{provider}/{info['modelID']}" if provider else info["modelID"]
    return turn(role, parse_instant(times.get("created")), _parts(parts)), model


def _parts(parts: Any) -> list[str]:
    said = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            if not part.get("synthetic") and not part.get("ignored"):
                said.append(part["text"])
        elif part.get("type") == "tool":
            state = as_dict(part.get("state"))
            said.append(tool_marker(str(part.get("tool") or ""), state.get("input")))
    return said


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _export_json(stdout: bytes) -> tuple[str, dict[str, Any]]:
    """The session JSON `opencode export` printed, as text and parsed; anything printed before
    it (a notice) is not part of it."""
    text = stdout.decode("utf-8", errors="replace")
    start = text.find("{")
    try:
        value, end = json.JSONDecoder().raw_decode(text, max(start, 0))
    except ValueError:
        value, end = None, 0
    if start < 0 or not isinstance(value, dict):
        raise SourceFailed("`opencode export` printed no session JSON")
    return text[start:end], value


class OpencodeSource:
    name = NAME
    default_room = "sessions"
    options = ("since", "dir")

    def __init__(self, run: Runner, clock_ns: Callable[[], int] = time_ns) -> None:
        self.run = run
        self.clock_ns = clock_ns

    def identify(self, locator: str | None, options: Iterable[tuple[str, str]]) -> Ref:
        """The place is the data of the `opencode` the daemon's user runs: the CLI reads its
        own directory, so no other locator can be honoured."""
        normalized = parse_options(self.name, options, self.options)
        default = os.path.normpath(expand(DEFAULT_LOCATOR))
        given = os.path.normpath(expand(locator)) if locator else default
        if given != default:
            raise InvalidInput(
                f"the opencode source reads the sessions of the `opencode` CLI, kept in {default}; "
                f"it cannot read {locator!r}"
            )
        return Ref(self.name, dir_account(normalized), default, normalized)

    def discover(self, ref: Ref, cursor: str, limit: int) -> Page:
        after = load_cursor(cursor, CURSOR_FIELD, self.name)
        since = ref.options.get("since")
        since_ms = -(-epoch_ns(parse_since(since)) // 1_000_000) if since else None
        rows = self._query(session_query(after, since_ms, limit))
        chosen, exhausted = page_after(rows, after, limit)
        settled_before_ms = (self.clock_ns() - SETTLING_NS) // 1_000_000
        cursors = settled_cursors(chosen, cursor, CURSOR_FIELD, settled_before_ms)
        candidates = [
            Candidate(session_id, cursor_after, session_id)
            for (_updated, session_id), cursor_after in zip(chosen, cursors, strict=True)
        ]
        return Page(candidates, exhausted)

    def read(self, ref: Ref, candidate: Candidate) -> RawDoc | None:
        try:
            output = self.run(["export", candidate.handle])
        except ProcessRefused as exc:
            if OUTPUT_CAP in str(exc):
                return None
            raise SourceFailed(f"`opencode export` did not run: {exc}") from None
        if output.status != 0:
            if b"not found" in output.stderr.lower():
                return None
            raise SourceFailed(_failure("export", output))
        body, export = _export_json(output.stdout)
        transcript = parse(export)
        pattern = ref.options.get("dir")
        if not transcript.turns or (
            pattern is not None and not dir_matches(pattern, transcript.cwd)
        ):
            return None
        info = as_dict(export.get("info"))
        return RawDoc(
            external_id=candidate.external_id,
            revision=revision(body.encode("utf-8")),
            body=body,
            metadata=describe(transcript, title=info.get("title")),
            occurred_at=occurred_at(transcript),
        )

    def normalize(self, raw: RawDoc) -> Canonical:
        try:
            export = json.loads(raw.body)
        except ValueError:
            export = None
        if not isinstance(export, dict):
            raise InvalidInput("the raw document is not an opencode session (not a JSON object)")
        transcript = parse(export)
        name = transcript.session_id or metadata_text(raw.metadata, "session_id")
        return canonical(self.name, transcript, name=name, uri=None)

    def _query(self, sql: str) -> list[tuple[int, str]]:
        """(time_updated, id) of each row `opencode db` returns."""
        try:
            output = self.run(["db", sql, "--format", "json"])
        except ProcessRefused as exc:
            raise SourceFailed(f"`opencode db` did not run: {exc}") from None
        if output.status != 0:
            raise SourceFailed(_failure("db", output) + " (opencode 1.2 or later is needed)")
        text = output.stdout.decode("utf-8", errors="replace").strip()
        try:
            rows = json.loads(text) if text else []
        except ValueError:
            rows = None
        if not isinstance(rows, list):
            raise SourceFailed("`opencode db --format json` did not print a JSON array of rows")
        return [_row(row) for row in rows]


def _row(row: Any) -> tuple[int, str]:
    if isinstance(row, dict):
        updated, session_id = row.get("time_updated"), row.get("id")
        if isinstance(updated, int) and isinstance(session_id, str):
            return updated, session_id
    raise SourceFailed(f"`opencode db` returned a row without an id and time_updated: {row!r}")


def _failure(command: str, output: Output) -> str:
    said = output.stderr.decode("utf-8", errors="replace").strip()[-STDERR_TAIL:]
    return f"`opencode {command}` failed with status {output.status}" + (
        f": {said}" if said else ""
    )
