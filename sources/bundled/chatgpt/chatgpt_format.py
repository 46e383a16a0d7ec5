"""A ChatGPT data export: `conversations.json` in the unpacked export, one document per
conversation.

The file is a JSON array of conversations (`id` or `conversation_id`, `title`, `create_time`,
`update_time` in Unix seconds, `current_node`, and a `mapping` of nodes `{message, parent,
children}`). The conversation as shown is the branch from `current_node` up through `parent` to
the root, read root first; the other children are abandoned regenerations. A message has
`author.role`, `create_time`, `recipient` (`all`, or the tool an assistant message calls) and
`content` (`content_type` `text` or `multimodal_text` with `parts`; `code`, `thoughts`,
`reasoning_recap`, `execution_output`, ... otherwise). System and tool messages, hidden ones
(`metadata.is_visually_hidden_from_conversation`) and reasoning are left out; an assistant message
to a tool is a tool marker.

One file holds every conversation, so `discover` reads it once, a conversation at a time (an
export of hundreds of megabytes fits the sandbox's memory), and hands each conversation's byte
span to `read`, which reads that span alone; the cursor is the `update_time` watermark
(microseconds) with the conversation id breaking ties.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from memcastle_transcripts import (
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
    dump_cursor,
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
    tool_marker,
    turn,
)

NAME = "chatgpt"
EXPORT_FILE = "conversations.json"
CURSOR_FIELD = "update_time_us"
URL = "https://chatgpt.com/c/{}"
BLANK = (" ", "\t", "\n", "\r")
# The export is decoded this many bytes at a time.
CHUNK = 1 << 20
DECODER = json.JSONDecoder()
SHOWN_TYPES = frozenset({"text", "multimodal_text"})


@dataclass(frozen=True)
class Span:
    """Where one conversation lies in the export: bytes `start` to `start + length`."""

    conversation_id: str
    update_us: int
    start: int
    length: int


class _Stream:
    """The export's text, decoded a chunk at a time and forgotten once parsed, so no more than
    one conversation (and a chunk) is in memory however large the export: `text` starts at
    byte `base` of the file."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.base = 0
        self.ended = False

    def more(self, size: int) -> bool:
        """Decode `size` more bytes; False at the end of the file."""
        if self.ended:
            return False
        data = self.stream.read(size)
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise SourceFailed(f"{EXPORT_FILE} is not UTF-8 ({exc.reason})") from None
        self.ended = not data
        return bool(data)

    def peek(self, position: int) -> str:
        """The character at `position`, or "" past the end of the file."""
        while position >= len(self.text) and self.more(CHUNK):
            pass
        return self.text[position : position + 1]

    def skip_blank(self, position: int) -> int:
        while self.peek(position) in BLANK:
            position += 1
        return position

    def forget(self, end: int) -> None:
        self.base += len(self.text[:end].encode("utf-8"))
        self.text = self.text[end:]

    def value(self) -> tuple[Any, int]:
        """The JSON value the text starts with, and where it ends; more of the file is decoded
        (twice as much each time) until the value is whole."""
        size = CHUNK
        while True:
            try:
                return DECODER.raw_decode(self.text, 0)
            except ValueError as exc:
                if not self.more(size):
                    raise SourceFailed(f"{EXPORT_FILE} is not valid JSON: {exc}") from None
                size *= 2


def conversations(stream: BinaryIO) -> Iterator[tuple[dict[str, Any], int, int]]:
    """Each conversation of the export with its byte offset and length."""
    text = _Stream(stream)
    # A byte order mark is skipped, and counted in the offsets like any character before `[`.
    position = text.skip_blank(1 if text.peek(0) == "\ufeff" else 0)
    if text.peek(position) != "[":
        raise SourceFailed(f"{EXPORT_FILE} is not a ChatGPT export: it is not a JSON array")
    position = text.skip_blank(position + 1)
    while text.peek(position) not in ("]", ""):
        text.forget(position)
        value, end = text.value()
        length = len(text.text[:end].encode("utf-8"))
        if isinstance(value, dict):
            yield value, text.base, length
        text.forget(end)
        position = text.skip_blank(0)
        if text.peek(position) == ",":
            position = text.skip_blank(position + 1)
    if text.peek(position) != "]":
        raise SourceFailed(f"{EXPORT_FILE} ends before its array does")


def conversation_id(conversation: dict[str, Any]) -> str | None:
    for key in ("conversation_id", "id"):
        value = conversation.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def update_us(conversation: dict[str, Any]) -> int:
    """When the conversation last changed, in microseconds (its creation when it never did)."""
    for key in ("update_time", "create_time"):
        value = conversation.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return round(value * 1_000_000)
    return 0


def spans(stream: BinaryIO) -> list[Span]:
    found = []
    for conversation, start, length in conversations(stream):
        identifier = conversation_id(conversation)
        if identifier is not None:
            found.append(Span(identifier, update_us(conversation), start, length))
    return found


def parse(conversation: dict[str, Any]) -> Transcript:
    turns = [found for node in shown_branch(conversation) if (found := _turn(node)) is not None]
    return Transcript(
        session_id=conversation_id(conversation),
        cwd=None,
        model=_model(conversation),
        turns=turns,
        title=conversation.get("title") if isinstance(conversation.get("title"), str) else None,
        started=parse_instant(conversation.get("create_time")),
    )


def shown_branch(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the branch the conversation shows, root first: from `current_node` up
    through the parents (the last node when `current_node` is missing); a cycle ends it."""
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        return []
    node_id = conversation.get("current_node")
    if node_id not in mapping:
        node_id = list(mapping)[-1]
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = as_dict(mapping[node_id])
        if isinstance(node.get("message"), dict):
            branch.append(node["message"])
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _turn(message: dict[str, Any]) -> Turn | None:
    author = as_dict(message.get("author"))
    role = author.get("role")
    metadata = as_dict(message.get("metadata"))
    content = as_dict(message.get("content"))
    if role not in ("user", "assistant") or metadata.get("is_visually_hidden_from_conversation"):
        return None
    time = parse_instant(message.get("create_time"))
    recipient = message.get("recipient")
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", "assistant"):
        return turn(role, time, [tool_marker(recipient, _content_text(content))])
    if content.get("content_type") not in SHOWN_TYPES:
        return None
    return turn(role, time, _texts(content.get("parts")))


def _texts(parts: Any) -> list[str]:
    """The text of a message's parts: strings, and the text of parts that carry one (a voice
    message's transcription); images and other attachments are left out."""
    if not isinstance(parts, list):
        return []
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return texts


def _content_text(content: dict[str, Any]) -> str:
    text = content.get("text")
    return text if isinstance(text, str) else "\n".join(_texts(content.get("parts")))


def _model(conversation: dict[str, Any]) -> str | None:
    model = conversation.get("default_model_slug")
    if isinstance(model, str) and model:
        return model
    for message in reversed(shown_branch(conversation)):
        slug = as_dict(message.get("metadata")).get("model_slug")
        if isinstance(slug, str) and slug:
            return slug
    return None


class ChatGptSource:
    name = NAME
    default_room = "conversations"
    options = ("since",)

    def identify(self, locator: str | None, options: Iterable[tuple[str, str]]) -> Ref:
        normalized = parse_options(self.name, options, self.options)
        if not locator:
            raise InvalidInput(
                "the chatgpt source needs a locator: the directory of an unpacked ChatGPT "
                f"export, or its {EXPORT_FILE}"
            )
        place = os.path.realpath(expand(locator))
        directory = os.path.dirname(place) if os.path.isfile(place) else place
        if not os.path.isfile(os.path.join(directory, EXPORT_FILE)):
            raise InvalidInput(
                f"the locator {locator!r} is not a ChatGPT export: there is no {EXPORT_FILE} in it"
            )
        return Ref(self.name, None, directory, normalized)

    def discover(self, ref: Ref, cursor: str, limit: int) -> Page:
        after = load_cursor(cursor, CURSOR_FIELD, self.name)
        since = ref.options.get("since")
        since_us = epoch_ns(parse_since(since)) // 1000 if since else None
        with _open_export(ref) as stream:
            found = {
                (span.update_us, span.conversation_id): span
                for span in spans(stream)
                if since_us is None or span.update_us >= since_us
            }
        chosen, exhausted = page_after(found, after, limit)
        return Page([_candidate(found[key]) for key in chosen], exhausted)

    def read(self, ref: Ref, candidate: Candidate) -> RawDoc | None:
        span = _span(candidate.handle)
        found = _at_span(ref, span) or _by_id(ref, span.conversation_id)
        if found is None:
            return None
        data, conversation = found
        transcript = parse(conversation)
        if not transcript.turns:
            return None
        return RawDoc(
            external_id=candidate.external_id,
            revision=revision(data),
            body=data.decode("utf-8"),
            metadata=describe(
                transcript,
                title=transcript.title,
                update_time=conversation.get("update_time"),
                path=os.path.join(ref.locator, EXPORT_FILE),
            ),
            occurred_at=occurred_at(transcript),
        )

    def normalize(self, raw: RawDoc) -> Canonical:
        try:
            conversation = json.loads(raw.body)
        except ValueError:
            conversation = None
        if not isinstance(conversation, dict):
            raise InvalidInput("the raw document is not a ChatGPT conversation (not a JSON object)")
        identifier = conversation_id(conversation) or metadata_text(raw.metadata, "session_id")
        uri = URL.format(identifier) if identifier else None
        return canonical(self.name, parse(conversation), name=identifier, uri=uri)


def _open_export(ref: Ref) -> BinaryIO:
    path = os.path.join(ref.locator, EXPORT_FILE)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise SourceFailed(f"{path} cannot be read: {exc.strerror}") from None


def _candidate(span: Span) -> Candidate:
    handle = {"id": span.conversation_id, "start": span.start, "length": span.length}
    return Candidate(
        external_id=span.conversation_id,
        cursor_after=dump_cursor(CURSOR_FIELD, span.update_us, span.conversation_id),
        handle=json.dumps(handle, ensure_ascii=False),
    )


def _span(handle: str) -> Span:
    try:
        value = json.loads(handle)
        return Span(value["id"], 0, int(value["start"]), int(value["length"]))
    except (ValueError, TypeError, KeyError):
        raise CursorInvalid(f"the candidate {handle!r} is not one of the chatgpt source") from None


def _at_span(ref: Ref, span: Span) -> tuple[bytes, dict[str, Any]] | None:
    """The conversation at the span `discover` found, or None when the export has changed
    since and the span holds something else."""
    try:
        with open(os.path.join(ref.locator, EXPORT_FILE), "rb") as file:
            file.seek(span.start)
            data = file.read(span.length)
        conversation = json.loads(data)
    except (OSError, ValueError):
        return None
    if isinstance(conversation, dict) and conversation_id(conversation) == span.conversation_id:
        return data, conversation
    return None


def _by_id(ref: Ref, identifier: str) -> tuple[bytes, dict[str, Any]] | None:
    """The conversation found again by id in a changed export; None when it is gone."""
    with _open_export(ref) as stream:
        for span in spans(stream):
            if span.conversation_id == identifier:
                return _at_span(ref, span)
    return None


SOURCE = ChatGptSource()
