"""Parsers of configuration values that more than one section takes (a command, an endpoint).

Each returns the value as the daemon uses it, or raises `ValueError` with what was expected, which
the configuration turns into `memcastle::config::invalid` naming the setting.
"""

from __future__ import annotations

import re


def argv_value(raw: object) -> tuple[str, ...]:
    """A program and its arguments, run without a shell (an extraction or embedding command)."""
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(part, str) for part in raw)
        or not raw[0]
    ):
        raise ValueError('a list of strings, the program first, like ["/usr/bin/program", "-q"]')
    return tuple(raw)


def http_url_value(raw: object) -> str:
    """An http(s) endpoint, without a trailing slash."""
    if not isinstance(raw, str) or not re.match(r"^https?://[^/\s]+", raw.strip()):
        raise ValueError("an http:// or https:// URL")
    return raw.strip().rstrip("/")
