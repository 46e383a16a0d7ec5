"""Parsers of configuration values that more than one section takes (a command, an endpoint).

Each returns the value as the daemon uses it, or raises `ValueError` with what was expected, which
the configuration turns into `memcastle::config::invalid` naming the setting.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from urllib.parse import urlsplit


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


# The hosts plain http:// may reach: this machine only, so nothing crosses a network unencrypted.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def web_address_problem(url: str) -> str | None:
    """Why the daemon may not fetch `url`, or None: https:// to any host, http:// only to this
    machine, never with a user name or password in it (it would be logged and shown)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        return "is not an https:// or http:// address"
    try:
        _ = parts.port
    except ValueError:
        return "has an invalid port"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "carries a user name or password"
    if parts.scheme == "http" and parts.hostname not in LOCAL_HOSTS:
        return (
            "is http:// to another machine (http:// is allowed only to localhost, 127.0.0.1 "
            "or [::1])"
        )
    return None


def file_url_problem(url: str) -> str | None:
    """Why a `file://` URL does not name a file of this machine by an absolute path, or None."""
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return "is not a file:// URL of this machine"
    if not parts.path.startswith("/"):
        return "is not a file:// URL with an absolute path"
    return None


def registry_location_value(raw: object) -> str:
    """Where a source registry is (sources.md 6): an https:// URL, an http:// URL of this
    machine, a `file://` URL or an absolute path."""
    text = raw.strip() if isinstance(raw, str) else ""
    expected = "an https:// URL, an http:// URL of this machine, a file:// URL or an absolute path"
    if "\0" in text or not text:
        raise ValueError(expected)
    scheme = urlsplit(text).scheme
    if scheme in ("https", "http"):
        problem = web_address_problem(text)
    elif scheme == "file":
        problem = file_url_problem(text)
    else:
        problem = None if os.path.isabs(text) else "is none of those"
    if problem is not None:
        raise ValueError(f"{expected} ({text!r} {problem})")
    return text


def _items(raw: object, expected: str) -> list[object]:
    """A TOML list, or one comma-separated string (the environment), whose blank items are
    dropped: an empty variable is an empty list."""
    if isinstance(raw, str):
        return [item.strip() for item in raw.split(",") if item.strip()]
    if isinstance(raw, list | tuple):
        return list(raw)
    raise ValueError(expected)


def registries_value(raw: object) -> tuple[str, ...]:
    """The source registries, in the order they are asked."""
    return tuple(
        registry_location_value(item) for item in _items(raw, "a list of registry locations")
    )


# An ed25519 public key is 32 bytes (RFC 8032).
ED25519_KEY_BYTES = 32


def ed25519_keys_value(raw: object) -> tuple[str, ...]:
    """Ed25519 public keys, each the standard base64 of its 32 raw bytes (as `memcastle source
    keygen` prints it)."""
    expected = "a list of base64 ed25519 public keys (as `memcastle source keygen` prints them)"
    keys = []
    for item in _items(raw, expected):
        try:
            raw_key = base64.b64decode(item if isinstance(item, str) else b"", validate=True)
        except binascii.Error:
            raw_key = b""
        if len(raw_key) != ED25519_KEY_BYTES:
            raise ValueError(f"{expected}; {item!r} is not one")
        keys.append(str(item))
    return tuple(keys)


def web_api_value(raw: object) -> str:
    """An API's base address (https://, or http:// of this machine), without a trailing
    slash."""
    text = raw.strip().rstrip("/") if isinstance(raw, str) else ""
    problem = web_address_problem(text)
    if problem is not None:
        raise ValueError(f"an https:// URL, or an http:// URL of this machine ({text!r} {problem})")
    return text
