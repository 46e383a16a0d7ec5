"""Naming rules for wings, rooms and drawers (docs/concepts.md, "The palace").

A name is not empty, has no leading or trailing whitespace, no control characters, and does not
look like a UUID (so `{wing}` can be a name or a UUID without ambiguity). Wing and room names hold
no `/`; a drawer name may (mined drawers are named `src/lib.rs`) but no segment may be empty, `.`
or `..`.
"""

from __future__ import annotations

import unicodedata

from kernel.errors import MemCastleError
from kernel.validation import is_uuid

MAX_NAME_LENGTH = 512


class PathInvalid(MemCastleError):
    status = 400
    code = "memcastle::palace::path_invalid"
    help = (
        "names must not be empty, start or end with whitespace, contain control characters or "
        "look like a UUID; wing and room names contain no `/`"
    )


def _check_common(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name:
        raise PathInvalid(f"{kind} name must be a non-empty string")
    if name != name.strip():
        raise PathInvalid(f"{kind} name {name!r} starts or ends with whitespace")
    if any(unicodedata.category(char) == "Cc" for char in name):
        raise PathInvalid(f"{kind} name {name!r} contains a control character")
    if len(name) > MAX_NAME_LENGTH:
        raise PathInvalid(f"{kind} name is longer than {MAX_NAME_LENGTH} characters")
    if is_uuid(name):
        raise PathInvalid(f"{kind} name {name!r} looks like a UUID")
    return name


def check_wing_name(name: object) -> str:
    return _check_segment("wing", name)


def check_room_name(name: object) -> str:
    return _check_segment("room", name)


def _check_segment(kind: str, name: object) -> str:
    checked = _check_common(kind, name)
    if "/" in checked:
        raise PathInvalid(f"{kind} name {checked!r} contains `/`")
    return checked


def check_drawer_name(name: object) -> str:
    checked = _check_common("drawer", name)
    for segment in checked.split("/"):
        if segment in ("", ".", ".."):
            raise PathInvalid(f"drawer name {checked!r} has an empty, `.` or `..` segment")
    return checked
