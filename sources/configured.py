"""What the daemon is configured to mine and fire unattended, as agents may read it.

Miners (`[[miners]]`) and triggers (`[[triggers]]`) are sections of the configuration file that
REST and the CLI manage and MCP only reads (`memcastle_miner_list`, `memcastle_trigger_get`...),
so an agent can say what is configured but not widen it. Reading one is a read of memory under
the memory mode, because what a palace mines says what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernel.context import RequestContext
from kernel.errors import NotFound


class ConfiguredSection:
    """The entries of one configuration section, each named by its `name`."""

    def __init__(self, kind: str, entries: Sequence[Mapping[str, Any]] = ()) -> None:
        self.kind = kind
        self.entries = {str(entry["name"]): dict(entry) for entry in entries}

    def list(self, ctx: RequestContext) -> dict[str, Any]:
        ctx.require_read(f"{self.kind}_list")
        return {f"{self.kind}s": [self.entries[name] for name in sorted(self.entries)]}

    def get(self, ctx: RequestContext, name: object) -> dict[str, Any]:
        ctx.require_read(f"{self.kind}_get")
        found = self.entries.get(name) if isinstance(name, str) else None
        if found is None:
            raise NotFound(
                f"no {self.kind} is named {name!r}",
                code=f"memcastle::{self.kind}::not_found",
                help=f"list the configured {self.kind}s with memcastle_{self.kind}_list",
            )
        return found
