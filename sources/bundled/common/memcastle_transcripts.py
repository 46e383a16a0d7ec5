"""What the bundled transcript sources share, in plain Python: no `wit_world` here, so every
function runs and is tested in CPython as it runs inside the component.

A source finds sessions (files ordered by modification time, or rows of a database), reads one
into a raw document whose body is the session exactly as stored, and turns a raw document into
segments: one per turn of the conversation, user and assistant text with their times, tool calls
as one-line markers, reasoning and tool output left out. `app.py` of each source converts these
plain values to and from the WIT types and maps the two exceptions below to `source-error`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from time import time_ns
from typing import Any

# A marker's argument and a title are cut to these many characters, so one tool call stays one
# short line and a title fits a listing.
MARKER_CHARS = 72
TITLE_CHARS = 80
# The arguments that best say what a tool call did, most telling first.
MARKER_KEYS = (
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
)
SHELLS = frozenset({"sh", "bash", "zsh", "/bin/sh", "/bin/bash", "/bin/zsh"})
# A session modified less than this before a run looks may be written to again within the same
# mark: a filesystem that keeps coarse times (whole seconds, two on FAT, the kernel's tick on
# older Linux) gives the agent's next append the time the run saw, and a database's session
# stamped before a later one may be committed after it; a cursor at that mark would not find the
# session again until its next change (`sources/directory.py` waits the same way).
SETTLING_NS = 2_000_000_000


class InvalidInput(ValueError):
    """The locator, an option or a raw document is not one this source takes: `invalid-input`."""


class CursorInvalid(ValueError):
    """The cursor is not one this source produced: `cursor-invalid`."""


class SourceFailed(Exception):
    """The place cannot be read as this source reads it: `failed`, with this message."""


@dataclass(frozen=True)
class Ref:
    """A place to mine: `(source, account, locator)` is its identity."""

    source: str
    account: str | None
    locator: str
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    external_id: str
    cursor_after: str
    handle: str


@dataclass(frozen=True)
class Page:
    candidates: list[Candidate]
    exhausted: bool


@dataclass(frozen=True)
class RawDoc:
    external_id: str
    revision: str
    body: str
    metadata: dict[str, Any]
    occurred_at: str | None = None


@dataclass(frozen=True)
class Canonical:
    """A document as the host files it: a transcript unless the source says which other
    `source-kind` it is (`file`, `manual`, `other`)."""

    title: str | None
    room: str | None
    name: str | None
    uri: str | None
    tags: list[str]
    segments: list[str]
    kind: str = "transcript"


@dataclass(frozen=True)
class Turn:
    """One message: `parts` are its text blocks and tool markers, in order."""

    role: str
    time: dt.datetime | None
    parts: tuple[str, ...]


@dataclass(frozen=True)
class Transcript:
    """What a source parsed out of one session."""

    session_id: str | None
    cwd: str | None
    model: str | None
    turns: list[Turn]
    title: str | None = None
    started: dt.datetime | None = None


# Options ---------------------------------------------------------------------------------------


def parse_since(value: str) -> dt.datetime:
    """`YYYY-MM`, `YYYY-MM-DD` or RFC 3339, as a UTC instant (a date is its midnight UTC).
    Dates are matched by hand: `strptime` imports a module lazily, which a component lacks."""
    text = value.strip()
    day = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", text)
    try:
        if day is not None:
            year, month, date = (int(group or 1) for group in day.groups())
            return dt.datetime(year, month, date, tzinfo=dt.UTC)
        instant = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise InvalidInput(
            f"the option `since` is {value!r}, which is not YYYY-MM, YYYY-MM-DD or an RFC 3339 "
            "instant with a time zone"
        )
    return instant.astimezone(dt.UTC)


def rfc3339(instant: dt.datetime) -> str:
    """An instant as RFC 3339 in UTC, `Z`-suffixed, milliseconds kept when there are any."""
    utc = instant.astimezone(dt.UTC)
    spec = "milliseconds" if utc.microsecond else "seconds"
    return utc.isoformat(timespec=spec).replace("+00:00", "Z")


def epoch_ns(instant: dt.datetime) -> int:
    """Nanoseconds since the epoch, exactly (no float on the way)."""
    delta = instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def check_dir(value: str) -> str:
    """The `dir` option: an absolute path, or a pattern in which `*` matches any run of
    characters, `/` included. A trailing `/` is dropped so two spellings are one pattern."""
    if not value or value != value.strip():
        raise InvalidInput(
            f"the option `dir` is {value!r}: it must be an absolute path or a pattern, without "
            "surrounding spaces"
        )
    if not value.startswith("/") and "*" not in value:
        raise InvalidInput(
            f"the option `dir` is {value!r}: give an absolute path (`/home/alice/app`) or a "
            "pattern with `*` (`*/app`)"
        )
    return value.rstrip("/") or "/"


def dir_matches(pattern: str, cwd: str | None) -> bool:
    """Whether a session started in `cwd` is one `dir` selects. A plain path selects that
    directory and every directory below it; a pattern must match the whole directory."""
    if cwd is None:
        return False
    directory = cwd.rstrip("/") or "/"
    if "*" not in pattern:
        return directory == pattern or directory.startswith(pattern.rstrip("/") + "/")
    regex = ".*".join(re.escape(piece) for piece in pattern.split("*"))
    return re.fullmatch(regex, directory, flags=re.DOTALL) is not None


def parse_options(
    source: str, options: Iterable[tuple[str, str]], accepted: Sequence[str]
) -> dict[str, str]:
    """The options in their one spelling: `since` as RFC 3339 UTC, `dir` without a trailing
    `/` (the bundled sources take no others). A key the source does not declare is refused,
    naming the ones it accepts."""
    normalized: dict[str, str] = {}
    for key, value in options:
        if key not in accepted:
            raise InvalidInput(
                f"the option {key!r} is not one the {source} source takes "
                f"(it accepts: {', '.join(accepted)})"
            )
        normalized[key] = rfc3339(parse_since(value)) if key == "since" else check_dir(value)
    return normalized


def dir_account(options: Mapping[str, str]) -> str | None:
    """`dir` selects which sessions belong to the place, so it is part of the identity (its
    own cursor), carried in the account; `since` only narrows a run and is not."""
    pattern = options.get("dir")
    return f"dir={pattern}" if pattern is not None else None


def home() -> str:
    """The user's home: the one variable the host gives a source."""
    value = os.environ.get("HOME", "")
    if not value.startswith("/"):
        raise InvalidInput("HOME is not set, so `~` (and the default locator) cannot be resolved")
    return value


def expand(locator: str) -> str:
    """`~` and `~/...` from HOME; any other locator must already be absolute."""
    if locator == "~" or locator.startswith("~/"):
        return home() + locator[1:]
    if not locator.startswith("/"):
        raise InvalidInput(
            f"the locator must be an absolute path, not {locator!r}: the daemon does not share "
            "your working directory"
        )
    return locator


def canonical_dir(locator: str) -> str:
    """The directory's one spelling: absolute, links resolved, no trailing `/`."""
    directory = os.path.realpath(expand(locator))
    if not os.path.isdir(directory):
        raise InvalidInput(f"the locator {locator!r} is not a directory this source can read")
    return directory


# Cursors ---------------------------------------------------------------------------------------


def load_cursor(cursor: str, field_name: str, source: str) -> tuple[int, str] | None:
    """A watermark cursor `{field_name: int, "key": str}`; `null` (or `{}`) is the start."""
    try:
        value = json.loads(cursor)
    except ValueError:
        value = cursor
    if value is None or value == {}:
        return None
    if isinstance(value, dict) and set(value) == {field_name, "key"}:
        mark, key = value[field_name], value["key"]
        if isinstance(mark, int) and not isinstance(mark, bool) and isinstance(key, str):
            return mark, key
    raise CursorInvalid(f"the cursor {cursor} is not a cursor of the {source} source")


def dump_cursor(field_name: str, mark: int, key: str) -> str:
    return json.dumps({field_name: mark, "key": key}, ensure_ascii=False)


def settled_cursors(
    chosen: Iterable[tuple[int, str]], cursor: str, field_name: str, settled_before: int
) -> list[str]:
    """The cursor after each of `chosen` (mark, key) pairs, in order: the pair's own while its
    mark is before `settled_before`, and from the first that is not, the last settled one's
    (`cursor` if none): a session too recent to have settled is read, and read again by the
    next run (unchanged, if nothing was added)."""
    settled = cursor
    cursors = []
    for mark, key in chosen:
        if mark < settled_before:
            settled = dump_cursor(field_name, mark, key)
        cursors.append(settled)
    return cursors


def page_after(
    found: Iterable[tuple[int, str]], after: tuple[int, str] | None, limit: int
) -> tuple[list[tuple[int, str]], bool]:
    """The (mark, key) pairs strictly after `after`, in order, at most `limit`, and whether
    nothing is left past them."""
    pending = sorted(item for item in found if after is None or item > after)
    return pending[:limit], len(pending) <= limit


# Files -----------------------------------------------------------------------------------------


def scan_jsonl(
    root: str, max_depth: int, accept: Callable[[str], bool] = lambda _name: True
) -> list[tuple[int, str]]:
    """(mtime_ns, absolute path) of each regular `*.jsonl` file at most `max_depth` directories
    below `root` whose name `accept`s. Links are never followed, to files or directories."""
    found: list[tuple[int, str]] = []
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth < max_depth:
                    pending.append((entry.path, depth + 1))
            elif (
                entry.name.endswith(".jsonl")
                and accept(entry.name)
                and entry.is_file(follow_symlinks=False)
            ):
                try:
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
                except OSError:
                    continue
    return found


def read_regular(path: str) -> bytes | None:
    """The bytes of a regular file, or None when it is gone or is no longer a regular file (a
    file swapped for a link since it was found is not followed either)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(descriptor, "rb") as file:
            return file.read()
    except OSError:
        return None


def json_lines(body: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines body, one at a time, so a session's large tool outputs
    are never all parsed at once. A line that is not one (the half-written last line of a live
    session, a blank line) is skipped rather than failing the session. Lines end at `\n` only:
    JavaScript writes U+2028 unescaped, and `splitlines` would cut there."""
    start = 0
    while start < len(body):
        end = body.find("\n", start)
        end = len(body) if end < 0 else end
        try:
            entry = json.loads(body[start:end])
        except ValueError:
            entry = None
        if isinstance(entry, dict):
            yield entry
        start = end + 1


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a field of an unexpected shape
    reads as absent."""
    return value if isinstance(value, dict) else {}


def revision(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Transcripts -----------------------------------------------------------------------------------


def parse_instant(value: Any) -> dt.datetime | None:
    """An RFC 3339 string or a Unix time (seconds, or milliseconds when it is that large), in
    UTC; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 100_000_000_000 else value
        try:
            return dt.datetime.fromtimestamp(seconds, dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            instant = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return instant.astimezone(dt.UTC) if instant.tzinfo else instant.replace(tzinfo=dt.UTC)
    return None


def one_line(text: str, limit: int) -> str:
    """`text` on one line, its runs of white space made single spaces, cut to `limit`
    characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _argument_summary(arguments: Any) -> str:
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if stripped.startswith(("{", "[")):
            try:
                return _argument_summary(json.loads(stripped))
            except ValueError:
                pass
        return stripped
    if isinstance(arguments, list):
        words = [str(word) for word in arguments]
        # `["bash", "-lc", "ls -la"]` is the command `ls -la`.
        if len(words) == 3 and words[0] in SHELLS and words[1] in ("-c", "-lc"):
            return words[2]
        return " ".join(words)
    if isinstance(arguments, dict):
        for key in MARKER_KEYS:
            if key in arguments and arguments[key] not in (None, "", []):
                return _argument_summary(arguments[key])
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                return value
        return json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments else ""
    return "" if arguments is None else str(arguments)


def tool_marker(name: str, arguments: Any = None) -> str:
    """A tool call as one short line, `[tool: Bash ls -la]`: its name and the argument that
    says most about it; the call's output is never part of a transcript."""
    summary = one_line(_argument_summary(arguments), MARKER_CHARS)
    label = one_line(name or "unknown", MARKER_CHARS)
    return f"[tool: {label} {summary}]" if summary else f"[tool: {label}]"


def turn(role: str, time: dt.datetime | None, parts: Iterable[str]) -> Turn | None:
    """A turn of the non-blank parts, or None when nothing of it is left to file."""
    kept = tuple(part.strip() for part in parts if part and part.strip())
    return Turn(role, time, kept) if kept else None


def segments(turns: Sequence[Turn]) -> list[str]:
    """One segment per turn: consecutive messages of one role (an assistant's text and tool
    calls between two user messages, say) are one turn, stamped with its first time. Each ends
    with a line break: the core packs segments into a chunk as they are, so without it a turn
    would run on after the one before on the same line."""
    grouped: list[tuple[str, dt.datetime | None, list[str]]] = []
    for each in turns:
        if grouped and grouped[-1][0] == each.role:
            grouped[-1][2].extend(each.parts)
        else:
            grouped.append((each.role, each.time, list(each.parts)))
    return [_segment(role, time, parts) for role, time, parts in grouped]


def _segment(role: str, time: dt.datetime | None, parts: list[str]) -> str:
    stamp = f"[{time.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC] " if time is not None else ""
    return f"{stamp}{role}: " + "\n".join(parts) + "\n"


def first_time(transcript: Transcript) -> dt.datetime | None:
    """When the session began: its first message, else what its header says."""
    for each in transcript.turns:
        if each.time is not None:
            return each.time
    return transcript.started


def title_of(transcript: Transcript) -> str | None:
    """The session's own title when it has one, else its first user message, on one line."""
    if transcript.title and transcript.title.strip():
        return one_line(transcript.title, TITLE_CHARS)
    for each in transcript.turns:
        if each.role == "user":
            text = " ".join(part for part in each.parts if not part.startswith("[tool: "))
            if text.strip():
                return one_line(text, TITLE_CHARS)
    return None


def room_for(cwd: str | None) -> str | None:
    """The room of a working directory: its path without the leading `/`, each `/` a `-`
    (`/home/alice/app` is `home-alice-app`, `/` is `root`); None without one."""
    if cwd is None or not cwd.strip():
        return None
    directory = cwd.strip()
    if directory.strip("/") == "":
        return "root"
    return directory.strip("/").replace("/", "-").strip() or None


def canonical(
    source: str, transcript: Transcript, *, name: str | None, uri: str | None
) -> Canonical:
    """The canonical document of a parsed session. `read` never hands on a session without a
    message, so a raw document without one is not this source's."""
    if not transcript.turns:
        raise InvalidInput(f"the raw document holds no {source} session: no message in it")
    return Canonical(
        title=title_of(transcript),
        room=room_for(transcript.cwd),
        name=name,
        uri=uri,
        tags=["transcript", source],
        segments=segments(transcript.turns),
    )


def describe(transcript: Transcript, **known: Any) -> dict[str, Any]:
    """The raw document's metadata: the session's id, working directory and model when known,
    and what the source adds (its path, say)."""
    metadata: dict[str, Any] = {"session_id": transcript.session_id, "cwd": transcript.cwd}
    if transcript.model:
        metadata["model"] = transcript.model
    metadata.update(known)
    return metadata


def occurred_at(transcript: Transcript) -> str | None:
    started = first_time(transcript)
    return rfc3339(started) if started is not None else None


def metadata_text(metadata: Mapping[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return value if isinstance(value, str) else None


# File sources ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSource:
    """A source whose sessions are `*.jsonl` files under one directory (Claude Code, Codex,
    pi): found by modification time, read whole, parsed by `parse`."""

    name: str
    default_locator: str
    max_depth: int
    parse: Callable[[str], Transcript]
    accept: Callable[[str], bool] = lambda _name: True
    options: tuple[str, ...] = ("since", "dir")
    default_room: str = "sessions"
    clock_ns: Callable[[], int] = time_ns

    def identify(self, locator: str | None, options: Iterable[tuple[str, str]]) -> Ref:
        normalized = parse_options(self.name, options, self.options)
        root = canonical_dir(locator if locator else self.default_locator)
        return Ref(self.name, dir_account(normalized), root, normalized)

    def discover(self, ref: Ref, cursor: str, limit: int) -> Page:
        after = load_cursor(cursor, "mtime_ns", self.name)
        since = ref.options.get("since")
        since_ns = epoch_ns(parse_since(since)) if since else None
        found = [
            (mtime_ns, path)
            for mtime_ns, path in scan_jsonl(ref.locator, self.max_depth, self.accept)
            if since_ns is None or mtime_ns >= since_ns
        ]
        chosen, exhausted = page_after(found, after, limit)
        cursors = settled_cursors(chosen, cursor, "mtime_ns", self.clock_ns() - SETTLING_NS)
        candidates = [
            Candidate(
                external_id=os.path.relpath(path, ref.locator),
                cursor_after=cursor_after,
                handle=path,
            )
            for (_mtime_ns, path), cursor_after in zip(chosen, cursors, strict=True)
        ]
        return Page(candidates, exhausted)

    def read(self, ref: Ref, candidate: Candidate) -> RawDoc | None:
        path = candidate.handle
        if not path.startswith(ref.locator.rstrip("/") + "/"):
            raise CursorInvalid(f"the candidate {path} is not under {ref.locator}")
        data = read_regular(path)
        if data is None:
            return None
        body = data.decode("utf-8", errors="replace")
        transcript = self.parse(body)
        pattern = ref.options.get("dir")
        if not transcript.turns or (
            pattern is not None and not dir_matches(pattern, transcript.cwd)
        ):
            return None
        return RawDoc(
            external_id=candidate.external_id,
            revision=revision(data),
            body=body,
            metadata=describe(transcript, path=path),
            occurred_at=occurred_at(transcript),
        )

    def normalize(self, raw: RawDoc) -> Canonical:
        path = metadata_text(raw.metadata, "path")
        stem = os.path.basename(path or raw.external_id).removesuffix(".jsonl")
        return canonical(self.name, self.parse(raw.body), name=stem, uri=path)
