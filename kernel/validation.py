"""Input checks shared by every service. Each failure names the field it blames.

The same values arrive as query-string text (REST GET), JSON values (REST bodies, MCP) or CLI
flags, so the parsers accept both the typed value and its text form.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Mapping
from typing import Any

from kernel.errors import InputInvalid

MAX_LIMIT = 200

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def body_object(data: object) -> Mapping[str, Any]:
    """A request body must be a JSON object."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InputInvalid("body", "must be a JSON object")
    return data


def refuse_unwritable(value: object, where: str) -> None:
    """No string of a request may hold a NUL character (U+0000) or a lone surrogate (a JSON
    `\\ud800` escape without its pair): no field takes one, a stored NUL would cut the text
    short in the tools that read it after, and a surrogate is not Unicode text, so no file or
    store can be written with it. The error names the field's path
    (`payload.items[3].content`). Walked without recursion, so a body nested as deep as the JSON
    parser allows is walked too."""
    pending: list[tuple[str, object]] = [(where, value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            _check_text(item, path)
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                inner_path = str(key) if path == "body" else f"{path}.{key}"
                if isinstance(key, str):
                    _check_text(key, path, " in a key")
                pending.append((inner_path, inner))
        elif isinstance(item, list):
            pending.extend((f"{path}[{n}]", inner) for n, inner in enumerate(item))


def _check_text(text: str, path: str, where: str = "") -> None:
    if "\x00" in text:
        raise InputInvalid(path, f"must not contain a NUL character (U+0000){where}")
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputInvalid(
            path, f"must be Unicode text, without a lone surrogate (\\ud800-\\udfff){where}"
        ) from None


def refuse_unknown(data: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """A body with a field the operation does not know is refused, naming the field, so a
    misspelt one is never silently ignored."""
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputInvalid(unknown[0], f"is not a known field (known: {', '.join(allowed)})")


def _integer(raw: object, field: str) -> int:
    if isinstance(raw, bool):
        raise InputInvalid(field, "must be a whole number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        return int(raw)
    raise InputInvalid(field, f"must be a whole number (got {raw!r})")


def parse_limit(raw: object, *, default: int, field: str = "limit", cap: int = MAX_LIMIT) -> int:
    """0 or absent means the default; anything above `cap` (200) is capped."""
    if raw is None or raw == "":
        return default
    value = _integer(raw, field)
    if value < 0:
        raise InputInvalid(field, "must not be negative")
    if value == 0:
        return default
    return min(value, cap)


# Past any palace's end: a larger offset reads the same empty page, and the store takes no
# integer beyond 64 bits.
MAX_OFFSET = 2**53 - 1


def parse_offset(raw: object, *, field: str = "offset") -> int:
    if raw is None or raw == "":
        return 0
    value = _integer(raw, field)
    if value < 0:
        raise InputInvalid(field, "must not be negative")
    return min(value, MAX_OFFSET)


def parse_instant(raw: object, field: str) -> dt.datetime:
    """An RFC 3339 timestamp, or a YYYY-MM-DD date read as midnight UTC."""
    if not isinstance(raw, str) or not raw.strip():
        raise InputInvalid(field, "must be an RFC 3339 timestamp or a YYYY-MM-DD date")
    text = raw.strip()
    try:
        if _DATE.match(text):
            return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
        value = dt.datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise InputInvalid(
            field, f"must be an RFC 3339 timestamp or a YYYY-MM-DD date (got {raw!r})"
        ) from None
    if value.tzinfo is None or "T" not in text.upper():
        raise InputInvalid(field, "must be an RFC 3339 timestamp with a time zone, or a date")
    return value.astimezone(dt.UTC)


def optional_text(data: Mapping[str, Any], field: str, *, max_length: int = 10_000) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputInvalid(field, "must be a string")
    if len(value) > max_length:
        raise InputInvalid(field, f"must be at most {max_length} characters")
    return value


def string_list(data: Mapping[str, Any], field: str) -> list[str] | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InputInvalid(field, "must be a list of strings")
    return value


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def parse_uuid(raw: str, field: str) -> str:
    if not is_uuid(raw):
        raise InputInvalid(field, f"must be a UUID (got {raw!r})")
    return str(uuid.UUID(raw))
