"""What the document says of the palace's names (`palace.names`), so a request the schema
allows is one the daemon takes: a drf-spectacular post-processing hook."""

from __future__ import annotations

import copy
from typing import Any

from palace.names import MAX_NAME_LENGTH

CONTROL = r"\x00-\x1f\x7f-\x9f"
# A wing's or a room's name: not empty, no whitespace at either end, no control character, no
# `/` (the pattern); and not shaped like a UUID, anything `uuid.UUID` reads: hyphens anywhere,
# braces, a `urn:uuid:` prefix (the `not`), so `{wing}` can be a name or a UUID. Written without
# lookarounds, which JSON Schema's regular expressions need not support.
FORBIDDEN = rf"{CONTROL}/"
SEGMENT_NAME = rf"^[^\s{FORBIDDEN}](?:[^{FORBIDDEN}]*[^\s{FORBIDDEN}])?$"
UUID_SHAPED = r"^(?:urn:)?(?:uuid:)?\{*(?:-*[0-9A-Fa-f]){32}-*\}*$"
# A drawer's name: the same ends and characters, `/` allowed between segments that are not
# empty, `.` or `..` (the second pattern, in an `allOf`: a schema holds one `pattern`).
DRAWER_NAME_ENDS = rf"^[^\s{CONTROL}](?:[^{CONTROL}]*[^\s{CONTROL}])?$"
_SEGMENT = rf"(?:[^/.{CONTROL}][^/{CONTROL}]*|\.[^/.{CONTROL}][^/{CONTROL}]*|\.\.[^/{CONTROL}]+)"
DRAWER_NAME_SEGMENTS = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
NOT_UUID = {"not": {"pattern": UUID_SHAPED}}
SEGMENT_RULES = {"pattern": SEGMENT_NAME, "maxLength": MAX_NAME_LENGTH, **NOT_UUID}
DRAWER_NAME_RULES = {
    "pattern": DRAWER_NAME_ENDS,
    "allOf": [{"pattern": DRAWER_NAME_SEGMENTS}],
    "maxLength": MAX_NAME_LENGTH,
    **NOT_UUID,
}
# The request fields that name a wing, a room or a drawer, by component, with their rules.
NAMED = {
    "NamedBodyRequest": (("name",), SEGMENT_RULES),
    "DiaryBodyRequest": (("wing",), SEGMENT_RULES),
    "NoteBodyRequest": (("wing", "room"), SEGMENT_RULES),
    "JobSubmissionRequest": (("wing",), SEGMENT_RULES),
    "DrawerBodyRequest": (("name",), DRAWER_NAME_RULES),
}


# The path parameters that name a wing or a room, or give its UUID.
PATH_NAMED = ("wing", "room")


def declare_name_rules(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Wing, room and drawer names as `palace.names` checks them, in paths and request
    bodies."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") in PATH_NAMED:
                    # A name or the UUID of one: a UUID matches the pattern too.
                    parameter.setdefault("schema", {}).update(
                        pattern=SEGMENT_NAME, maxLength=MAX_NAME_LENGTH
                    )
    schemas = result.get("components", {}).get("schemas", {})
    for component, (fields, rules) in NAMED.items():
        properties = schemas.get(component, {}).get("properties", {})
        for field in fields:
            if field in properties:
                properties[field].update(copy.deepcopy(rules))
    return result


INSTANT = {"type": "string", "format": "date-time"}
# What a search's `temporal` takes (`palace.search.query`): a word, an instant or a window.
TEMPORAL = {
    "nullable": True,
    "oneOf": [
        {"type": "string", "enum": ["current", "all"]},
        {
            "type": "object",
            "properties": {"as_of": INSTANT},
            "required": ["as_of"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "between": {
                    "type": "object",
                    "properties": {"from": INSTANT, "until": INSTANT},
                    "required": ["from", "until"],
                    "additionalProperties": False,
                }
            },
            "required": ["between"],
            "additionalProperties": False,
        },
    ],
}


def declare_temporal(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """A search filter's `temporal` as the daemon reads it, rather than any JSON."""
    schemas = result.get("components", {}).get("schemas", {})
    for component in ("SearchFilterRequest", "RecallFilterRequest"):
        properties = schemas.get(component, {}).get("properties", {})
        if "temporal" in properties:
            properties["temporal"] = {
                **TEMPORAL,
                "description": properties["temporal"].get("description", ""),
            }
    return result
