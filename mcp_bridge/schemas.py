"""JSON Schemas of the tools' arguments.

They describe; the services validate. A value the schema would reject still reaches the service,
which refuses it with the same `{error, code, help}` as REST, naming the argument.
"""

from __future__ import annotations

from typing import Any

from jobs.states import Status
from palace.checkpoint import DESTINATIONS, FACT_OPS, LINK_KINDS, SOURCE_KINDS
from palace.search.query import RANKINGS
from palace.search.query import SOURCE_KINDS as SEARCH_SOURCE_KINDS

Schema = dict[str, Any]

INSTANT = "an RFC 3339 timestamp or a YYYY-MM-DD date (midnight UTC)"


def string(description: str, *, enum: tuple[str, ...] | list[str] | None = None) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = list(enum)
    return schema


def integer(description: str) -> Schema:
    return {"type": "integer", "description": description}


def boolean(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def arguments(properties: dict[str, Schema], *, required: tuple[str, ...] = ()) -> Schema:
    """A tool's input schema: an object of exactly these properties."""
    schema: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def search_options(*, recall: bool) -> dict[str, Schema]:
    """The options of `memcastle_search` and `memcastle_recall`, as `GET /api/search` names
    them: the words go in `query`, or in `q` or `text` as REST also takes them."""
    options: dict[str, Schema] = {
        "query": string("the words to search for (required, here or as q or text)"),
        "q": string("the same as query"),
        "text": string("the same as query"),
        "limit": integer("how many results: 10 by default, 0 means the default, at most 200"),
        "wing": string("search only this wing"),
        "room": string("search only this room (needs wing)"),
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "a drawer must carry every one of these tags",
        },
        "source_kind": string("only drawers from this kind of source", enum=SEARCH_SOURCE_KINDS),
        "ranking": string(
            "auto (hybrid when the query can be embedded, else lexical), lexical, semantic or "
            "hybrid",
            enum=RANKINGS,
        ),
        "as_of": string(f"what was valid at this instant: {INSTANT}"),
        "from": string(f"what was valid at some time from this instant (needs until): {INSTANT}"),
        "until": string(f"... until this instant, not included (needs from): {INSTANT}"),
        "include_historical": boolean("search superseded and expired drawers too"),
        "expand": boolean("append drawers related to the hits through the knowledge graph"),
        "profile": string("the embedding profile to search in (the default profile if absent)"),
    }
    if recall:
        del options["room"]
    return options


_ENTITY = {
    "description": "an entity: its name, its id, or {name, kind} / {id}",
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "kind": {"type": "string"}},
        },
        {"type": "object", "properties": {"id": {"type": "string"}}},
    ],
}

CHECKPOINT_PAYLOAD: Schema = {
    "description": "the already-classified batch: {items: [...]} (a JSON-encoded string of it "
    "is accepted too)",
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "destination": string(
                                "where the memory belongs; it names the wing when wing is null",
                                enum=list(DESTINATIONS),
                            ),
                            "wing": {"type": ["string", "null"]},
                            "content": string("the memory, verbatim; never blank"),
                            "name": {
                                "type": ["string", "null"],
                                "description": "a drawer name: a named item is always stored",
                            },
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "source": {
                                "type": ["object", "null"],
                                "properties": {
                                    "kind": string("", enum=SOURCE_KINDS),
                                    "uri": {"type": ["string", "null"]},
                                    "agent": {"type": ["string", "null"]},
                                },
                            },
                            "fact": {
                                "type": ["object", "null"],
                                "description": "a knowledge-graph assertion or correction that "
                                "this item is the evidence of",
                                "properties": {
                                    "op": string("", enum=FACT_OPS),
                                    "subject": _ENTITY,
                                    "predicate": {"type": "string"},
                                    "object": _ENTITY,
                                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                    "relationship_id": string(
                                        "supersede, invalidate, link: the assertion concerned"
                                    ),
                                    "other_id": string("link: the other assertion"),
                                    "kind": string("link: how they relate", enum=LINK_KINDS),
                                    "reason": string("why; required for link"),
                                },
                                "required": ["op"],
                            },
                        },
                        "required": ["destination", "content", "tags"],
                    },
                }
            },
            "required": ["items"],
        },
        {"type": "string"},
    ],
}

JOB_ID = string("the job's id")
JOB_STATUS = string("only jobs in this state", enum=[status.value for status in Status])
