"""What the `miner` and `trigger` commands read from their words: KEY=VALUE pairs, paths of
this shell, and how a credential is shown."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from kernel.errors import InputInvalid

OPTION = re.compile(r"^([^=\s]+)=(.*)$", re.DOTALL)


def pairs(words: list[str]) -> dict[str, Any]:
    """KEY=VALUE words; a value is JSON when valid JSON, else the string; a key given twice is
    refused."""
    values: dict[str, Any] = {}
    for word in words:
        match = OPTION.match(word)
        if match is None:
            raise InputInvalid("KEY=VALUE", f"{word!r} is not KEY=VALUE")
        key, raw = match.groups()
        if key in values:
            raise InputInvalid(key, "is given twice")
        try:
            values[key] = json.loads(raw)
        except ValueError:
            values[key] = raw
    return values


def local_path(value: str) -> str:
    """A path relative to this shell made absolute (the daemon has another working directory);
    anything else, such as a URL, is left as it is."""
    if value.startswith((".", "~")):
        return os.path.abspath(os.path.expanduser(value))
    return value


def credential_text(credential: dict[str, Any] | None) -> str:
    """A credential as the daemon shows it: its kind, and whether it resolves."""
    if not credential:
        return ""
    return f"{credential['kind']} ({'available' if credential['available'] else 'missing'})"
