"""The extraction providers (`heuristic`, `command`, `http`) and the closed vocabulary.

A provider reads drawer texts and answers, for each, `{"entities": [{name, kind}], "relations":
[{subject, predicate, object, confidence}]}`. Whatever it answers is then put through
`normalise`: kinds and predicates into the closed vocabulary (graph.md section 4), relations that
cannot stand dropped, and the caps applied. Each provider is given the first `INPUT_CHARS`
characters of a drawer, and, as context, the drawer's id, source kind, mining origin and
preference level (ADR-048); context never changes a confidence.

- `heuristic` (`graph.heuristic`): built in, deterministic, no configuration.
- `command` runs its argv without a shell, once per batch of `batch_size` texts, with
  `{"model", "vocabulary": {"kinds", "predicates"}, "texts", "contexts"}` on stdin; it must exit 0
  having written `{"extractions": [{"entities": [...], "relations": [...]}, ...]}`, one per text
  in order. Its environment is the daemon's minus every `MEMCASTLE_*` variable; a timeout kills
  it and whatever it started.
- `http` POSTs one OpenAI-style chat completion per drawer to `{url}/chat/completions` (the
  vocabulary in the system prompt, a JSON object answer requested, `api_key` as a bearer token).
  An answer that is not that JSON object is "nothing found" for the drawer, and logged; an
  endpoint that cannot be reached, does not answer in time, answers with an error status or
  without a chat completion fails the job.

A failing provider raises `ExtractFailed` (502 `memcastle::extract::failed`) saying how, never
with the text it was given or a key.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graph import heuristic
from kernel.config import ExtractionConfig
from kernel.errors import MemCastleError
from kernel.logs import fields
from kernel.providers import post_json, run_json

logger = logging.getLogger(__name__)

KINDS = ("person", "organization", "project", "tool", "place", "concept", "other")
PREDICATES = (
    "works_on",
    "member_of",
    "depends_on",
    "uses",
    "owns",
    "part_of",
    "located_in",
    "related_to",
)
UNKNOWN_KIND = "other"
UNKNOWN_PREDICATE = "related_to"
# Of each drawer, a provider reads this much; the drawer itself is unchanged.
INPUT_CHARS = 8000
# Longer names are not names (a sentence, a paragraph).
MAX_NAME_CHARS = 200


class ExtractNotConfigured(MemCastleError):
    status = 400
    code = "memcastle::extract::not_configured"
    help = (
        "set [extraction] provider to heuristic, command or http (MEMCASTLE_EXTRACTION_PROVIDER) "
        "and restart the daemon"
    )


class ExtractFailed(MemCastleError):
    """The extraction provider failed: the message says how (exit status and the start of its
    stderr, or the HTTP status). Drawers it did not reach are read by the next extract job."""

    status = 502
    code = "memcastle::extract::failed"
    help = (
        "check the [extraction] provider (its command or endpoint) and the daemon log, then run "
        "the extract job again: the drawers not read yet are read then"
    )


@dataclass(frozen=True)
class Item:
    """One drawer to read: its text and what the provider is told about it."""

    text: str
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def input(self) -> str:
        return self.text[:INPUT_CHARS]


class Provider(Protocol):
    # The `extractor` recorded with every fact: heuristic, command or http.
    name: str
    # How many drawers one call reads (and one unit of the job holds).
    batch_size: int

    def extract(self, items: Sequence[Item]) -> Iterator[Mapping[str, Any]]:
        """One raw answer per item, in order, yielded as soon as it is known (a failure after
        some answers leaves those to be recorded)."""
        ...


def vocabulary() -> dict[str, list[str]]:
    return {"kinds": list(KINDS), "predicates": list(PREDICATES)}


# Normalising an answer.


def _label(raw: object) -> str:
    """A kind or predicate as free text: trimmed, lower case, spaces and dashes as `_`."""
    if not isinstance(raw, str):
        return ""
    return re.sub(r"[\s-]+", "_", raw.strip().lower())


def normalise_kind(raw: object) -> str:
    kind = _label(raw)
    return kind if kind in KINDS else UNKNOWN_KIND


def normalise_predicate(raw: object) -> str:
    predicate = _label(raw)
    return predicate if predicate in PREDICATES else UNKNOWN_PREDICATE


def _name(raw: object) -> str | None:
    if not isinstance(raw, str):
        return None
    name = " ".join(raw.split())
    return name if name and len(name) <= MAX_NAME_CHARS else None


def _confidence(raw: object) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    value = float(raw)
    if not math.isfinite(value):
        return None
    return min(value, 1.0)


def normalise(
    answer: object, *, min_confidence: float, max_entities: int, max_relations: int
) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """`(entities, relations)` of one answer, ready for `ExtractionRecords.record_extraction`.

    Entities: a name (whitespace collapsed) and a kind of the vocabulary (unknown: `other`);
    one per name, the first spelling and kind given, compared without case; the first
    `max_entities`. Relations: a predicate of the vocabulary (unknown: `related_to`) between two
    of those entities (named as the entity list names them); dropped when an endpoint is not
    among them, when both are the same entity, when the confidence is missing, not a finite
    number or below `min_confidence`, or when it repeats an earlier one; a confidence over 1
    counts as 1; the first `max_relations`. Items that are not objects are skipped.
    """
    if not isinstance(answer, Mapping):
        return [], []
    raw_entities = answer.get("entities")
    raw_relations = answer.get("relations")
    entities: list[dict[str, str]] = []
    by_key: dict[str, str] = {}
    for raw in raw_entities if isinstance(raw_entities, list) else []:
        if len(entities) >= max_entities:
            break
        if not isinstance(raw, Mapping):
            continue
        name = _name(raw.get("name"))
        if name is None or name.casefold() in by_key:
            continue
        by_key[name.casefold()] = name
        entities.append({"name": name, "kind": normalise_kind(raw.get("kind"))})
    relations: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for raw in raw_relations if isinstance(raw_relations, list) else []:
        if len(relations) >= max_relations:
            break
        if not isinstance(raw, Mapping):
            continue
        subject, object_ = _name(raw.get("subject")), _name(raw.get("object"))
        if subject is None or object_ is None:
            continue
        subject, object_ = by_key.get(subject.casefold()), by_key.get(object_.casefold())
        if subject is None or object_ is None or subject == object_:
            continue
        confidence = _confidence(raw.get("confidence"))
        if confidence is None or confidence < min_confidence:
            continue
        predicate = normalise_predicate(raw.get("predicate"))
        if (subject, predicate, object_) in seen:
            continue
        seen.add((subject, predicate, object_))
        relations.append(
            {
                "subject": subject,
                "predicate": predicate,
                "object": object_,
                "confidence": confidence,
            }
        )
    return entities, relations


# Providers.


class HeuristicProvider:
    name = "heuristic"

    def __init__(self, batch_size: int = 8) -> None:
        self.batch_size = batch_size

    def extract(self, items: Sequence[Item]) -> Iterator[Mapping[str, Any]]:
        for item in items:
            yield heuristic.extract(item.input)


class CommandProvider:
    name = "command"

    def __init__(self, config: ExtractionConfig) -> None:
        self.config = config
        self.batch_size = config.batch_size

    @property
    def what(self) -> str:
        return "the extraction command"

    def extract(self, items: Sequence[Item]) -> Iterator[Mapping[str, Any]]:
        if not items:
            return
        request = json.dumps(
            {
                "model": self.config.model,
                "vocabulary": vocabulary(),
                "texts": [item.input for item in items],
                "contexts": [dict(item.context) for item in items],
            },
            default=str,
        ).encode()
        answer = self._run(request)
        if not isinstance(answer, dict) or not isinstance(answer.get("extractions"), list):
            raise ExtractFailed(f'{self.what} wrote no {{"extractions": [...]}} object')
        extractions = answer["extractions"]
        if len(extractions) != len(items):
            raise ExtractFailed(
                f"{self.what} returned {len(extractions)} extractions for {len(items)} texts"
            )
        for index, extraction in enumerate(extractions):
            if not isinstance(extraction, dict) or any(
                not isinstance(extraction.get(key, []), list) for key in ("entities", "relations")
            ):
                raise ExtractFailed(
                    f'{self.what} returned something other than {{"entities": [...], '
                    f'"relations": [...]}} for text {index}'
                )
        yield from extractions

    def _run(self, request: bytes) -> Any:
        return run_json(
            self.config.command,
            request,
            timeout=self.config.timeout_secs,
            what=self.what,
            failure=ExtractFailed,
        )


SYSTEM_PROMPT = """You extract a knowledge graph from a text.
Answer with one JSON object and nothing else:
{{"entities": [{{"name": "...", "kind": "..."}}],
 "relations": [{{"subject": "...", "predicate": "...", "object": "...", "confidence": 0.0}}]}}
- kind is one of: {kinds}.
- predicate is one of: {predicates}.
- subject and object are names from entities; confidence is a number from 0 to 1.
- Only what the text states; an empty list when it states nothing.
The context (drawer, source, preference) describes where the text comes from; it is not part of
the text."""


class HttpProvider:
    """One chat completion per drawer."""

    name = "http"

    def __init__(self, config: ExtractionConfig) -> None:
        self.config = config
        self.batch_size = config.batch_size
        self.system = SYSTEM_PROMPT.format(kinds=", ".join(KINDS), predicates=", ".join(PREDICATES))

    @property
    def what(self) -> str:
        return "the extraction endpoint"

    def extract(self, items: Sequence[Item]) -> Iterator[Mapping[str, Any]]:
        for item in items:
            yield self._one(item)

    def _one(self, item: Item) -> Mapping[str, Any]:
        body: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": self.system},
                {
                    "role": "user",
                    "content": "Context: "
                    + json.dumps(dict(item.context), default=str)
                    + "\n\nText:\n"
                    + item.input,
                },
            ],
            "response_format": {"type": "json_object"},
            "temperature": 0,
        }
        if self.config.model is not None:
            body["model"] = self.config.model
        content = post_json(
            f"{self.config.url}/chat/completions",
            body,
            api_key=self.config.api_key,
            timeout=self.config.timeout_secs,
            what=self.what,
            failure=ExtractFailed,
            read=_completion,
            expected='chat completion ({"choices": [{"message": {"content": ...}}]})',
        )
        answer = _json_object(content)
        if answer is None:
            logger.warning(
                "the extraction endpoint's answer is not the requested JSON; nothing found",
                extra=fields(drawer=item.context.get("drawer")),
            )
            return {"entities": [], "relations": []}
        return answer


def _completion(answer: Any) -> str:
    """The text of an OpenAI-style chat completion's first choice."""
    content = answer["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise TypeError("content is not text")
    return content


def _json_object(content: str) -> dict[str, Any] | None:
    """The answer's JSON object (in a Markdown code fence or not), or None."""
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL | re.IGNORECASE)
    if fenced:
        text = fenced.group(1)
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    if not isinstance(answer, dict) or not any(k in answer for k in ("entities", "relations")):
        return None
    if any(not isinstance(answer.get(key, []), list) for key in ("entities", "relations")):
        return None
    return answer


def for_config(config: ExtractionConfig) -> Provider | None:
    """The configured provider; None when `provider = "none"`."""
    if config.provider == "heuristic":
        return HeuristicProvider(config.batch_size)
    if config.provider == "command":
        return CommandProvider(config)
    if config.provider == "http":
        return HttpProvider(config)
    return None
