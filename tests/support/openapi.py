"""The OpenAPI document of the daemon's routes, generated in-process as `/api/schema/` serves it;
and how two documents differ."""

from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator

from kernel.config import load_config
from kernel.store import Store
from memcastle_project.composition import compose
from memcastle_project.urls import URLConf


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
