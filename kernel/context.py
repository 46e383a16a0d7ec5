"""Who is asking, through which channel, and in which memory mode.

Transports only extract the raw mode and channel and pass them down; `RequestContext.build`
validates them, and services call `require_read` / `require_write` before any store access, so the
memory-mode gate is enforced in exactly one place.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel.errors import InputInvalid, ModeForbidden

MODE_HEADER = "x-memcastle-mode"
CHANNELS = ("http", "cli", "mcp")


class Mode(enum.StrEnum):
    FULL = "full"
    READ_ONLY = "read_only"
    DISABLED = "disabled"

    @classmethod
    def parse(cls, raw: str | None, *, field: str = MODE_HEADER) -> Mode:
        """Absent means full; an unrecognized value is refused, never treated as full."""
        if raw is None:
            return cls.FULL
        try:
            return cls(raw.strip())
        except ValueError:
            raise InputInvalid(
                field,
                f"must be one of full, read_only, disabled (got {raw!r})",
            ) from None


def _requested_by(raw: object, default: str) -> str:
    if raw is None:
        return default
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 64:
        raise InputInvalid("requested_by", "must be a non-empty string of at most 64 characters")
    return raw.strip()


def without_channel(body: Mapping[str, Any]) -> dict[str, Any]:
    """A definition's body without `requested_by`, which every POST of the CLI carries: checked
    as every route checks it (null included), then left out of what is defined."""
    if "requested_by" in body:
        if body["requested_by"] is None:
            raise InputInvalid("requested_by", "must be a string naming the channel, not null")
        _requested_by(body["requested_by"], "")
    return {key: value for key, value in body.items() if key != "requested_by"}


@dataclass(frozen=True)
class RequestContext:
    mode: Mode
    requested_by: str

    @classmethod
    def build(
        cls,
        *,
        mode: str | None = None,
        requested_by: object = None,
        channel: str = "http",
    ) -> RequestContext:
        return cls(mode=Mode.parse(mode), requested_by=_requested_by(requested_by, channel))

    def require_read(self, operation: str) -> None:
        if self.mode is Mode.DISABLED:
            raise ModeForbidden(f"`{operation}` is not permitted in disabled mode")

    def require_write(self, operation: str) -> None:
        if self.mode is not Mode.FULL:
            raise ModeForbidden(f"`{operation}` is not permitted in {self.mode.value} mode")
