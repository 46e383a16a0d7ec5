"""The OpenAPI document of the daemon's routes, generated in-process as `/api/schema/` serves it;
and its response schemas made strict, to check real answers against them."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft202012Validator, FormatChecker

from kernel.config import load_config
from kernel.store import Store
from memcastle_project.composition import compose
from memcastle_project.urls import URLConf

COMPONENTS = "#/components/schemas/"


# The operations a property-based run leaves out, as `schemathesis run` arguments: shutdown; the
# event stream, which ends only when the daemon stops; and, in one regular expression (a second
# `--exclude-path-regex` replaces the first), package uploads (a gzip body, which
# tests/test_source_packages.py sends), registries (the locations a request names are fetched,
# so generated ones would reach the network; tests/test_source_registry.py covers them) and a
# sign-in started for a bundled source, which reaches its provider (tests/test_source_oauth.py).
SCHEMATHESIS_EXCLUDED = (
    "--exclude-path",
    "/api/shutdown",
    "--exclude-path",
    "/api/events",
    "--exclude-path-regex",
    "^/api/source-(packages($|/[^/]+/auth)|registry)",
)


def openapi_document() -> dict[str, Any]:
    """The routes are bound to services (`URLConf`), so a set of them is composed on a store
    that is never opened: generating the document calls none of them."""
    services = compose(load_config(env={}), Store("mem://"))
    generator = SchemaGenerator(urlconf=URLConf(services))
    return generator.get_schema(request=None, public=True)


def differences(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """What changed from one document to the other, one line a change, named as a reader
    looks for it: `added Drawer.supersedes` (a property of a component), `changed DrawerList
    required` (another key of a component), `added WingCreated` (a component), `changed POST
    /api/wings 201` (an operation's response), `changed GET /api/status summary` (another key of
    an operation), or `changed info` (anything else)."""
    found: set[str] = set()
    old_schemas, new_schemas = before["components"]["schemas"], after["components"]["schemas"]
    for name in old_schemas.keys() | new_schemas.keys():
        found |= _compared(name, old_schemas.get(name), new_schemas.get(name), _schema_parts)
    for path in before["paths"].keys() | after["paths"].keys():
        old_item, new_item = before["paths"].get(path, {}), after["paths"].get(path, {})
        for method in old_item.keys() | new_item.keys():
            where = f"{method.upper()} {path}"
            found |= _compared(where, old_item.get(method), new_item.get(method), _operation_parts)
    for key in before.keys() | after.keys():
        if key not in ("paths", "components") and before.get(key) != after.get(key):
            found.add(f"changed {key}")
    for key in before["components"].keys() | after["components"].keys():
        if key != "schemas" and before["components"].get(key) != after["components"].get(key):
            found.add(f"changed components {key}")
    return found


def _compared(where: str, old: Any, new: Any, parts: Any) -> set[str]:
    if old is None or new is None:
        return set() if old == new else {f"{'added' if old is None else 'removed'} {where}"}
    found = set()
    old_parts, new_parts = parts(where, old), parts(where, new)
    for name in old_parts.keys() | new_parts.keys():
        if name not in old_parts:
            found.add(f"added {name}")
        elif name not in new_parts:
            found.add(f"removed {name}")
        elif old_parts[name] != new_parts[name]:
            found.add(f"changed {name}")
    return found


def _schema_parts(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A component's properties (`Drawer.name`) and its other keys (`Drawer required`)."""
    parts = {f"{name} {key}": value for key, value in schema.items() if key != "properties"}
    for prop, value in schema.get("properties", {}).items():
        parts[f"{name}.{prop}"] = value
    return parts


def _operation_parts(where: str, operation: dict[str, Any]) -> dict[str, Any]:
    """An operation's responses (`POST /api/wings 201`) and its other keys."""
    parts = {f"{where} {key}": value for key, value in operation.items() if key != "responses"}
    for status, value in operation["responses"].items():
        parts[f"{where} {status}"] = value
    return parts


def closed(document: dict[str, Any]) -> dict[str, Any]:
    """The document with every object that declares its properties closed to others.

    OpenAPI lets an object carry keys it does not declare, so a check against the document as
    served would pass an answer that has drifted from its shape; closed, it fails it."""
    strict = copy.deepcopy(document)
    for schema in _every_schema(strict):
        if "properties" in schema:
            schema.setdefault("additionalProperties", False)
    return strict


def _every_schema(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema object of the document: the components, the bodies of requests and
    responses, and the schemas inside them."""
    found: list[dict[str, Any]] = []
    pending = list(document["components"]["schemas"].values())
    for operations in document["paths"].values():
        for operation in operations.values():
            bodies = [operation.get("requestBody", {}), *operation["responses"].values()]
            for body in bodies:
                pending += [media["schema"] for media in body.get("content", {}).values()]
    while pending:
        schema = pending.pop()
        found.append(schema)
        pending += _inside(schema)
    return found


def _inside(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas a schema is made of (not the names of its properties)."""
    inner = list(schema.get("properties", {}).values())
    inner += [schema[key] for key in ("items", "additionalProperties") if key in schema]
    for key in ("allOf", "anyOf", "oneOf"):
        inner += schema.get(key, [])
    return [each for each in inner if isinstance(each, dict)]


def response_validator(
    document: dict[str, Any], method: str, path: str, status: int
) -> Draft202012Validator:
    """A JSON Schema validator of the body `method path` documents for `status`, with every
    object closed (`closed`) and OpenAPI 3.0's `nullable` read as JSON Schema's null type.
    Raises KeyError when the route does not document that status."""
    strict = closed(document)
    operation = strict["paths"][path][method.lower()]
    schema = operation["responses"][str(status)]["content"]["application/json"]["schema"]
    components = strict["components"]["schemas"]
    root = {
        "$defs": {name: _json_schema(each) for name, each in components.items()},
        **_json_schema(schema),
    }
    return Draft202012Validator(root, format_checker=_FORMATS)


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.0 schema as JSON Schema: `nullable` as the null type, references to the
    components as references to `$defs`."""
    converted = {key: value for key, value in schema.items() if key != "nullable"}
    if "properties" in schema:
        converted["properties"] = {
            name: _json_schema(each) for name, each in schema["properties"].items()
        }
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            converted[key] = _json_schema(schema[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            converted[key] = [_json_schema(each) for each in schema[key]]
    if "$ref" in schema:
        converted["$ref"] = schema["$ref"].replace(COMPONENTS, "#/$defs/")
    if not schema.get("nullable"):
        return converted
    if "type" in converted:
        return {**converted, "type": [converted["type"], "null"]}
    return {"anyOf": [{"type": "null"}, converted]}


_FORMATS = FormatChecker()


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    """RFC 3339 with a zone, as DRF's JSON encoder writes it (`...Z` or an offset)."""
    if not isinstance(value, str):
        return True
    return dt.datetime.fromisoformat(value).tzinfo is not None
