"""What the interfaces ask of mining sources: the adapters this daemon has and the places mined."""

from __future__ import annotations

from typing import Any

from kernel.config import MiningConfig
from kernel.context import RequestContext
from kernel.store import Store
from sources import registry
from sources.adapters import describe
from sources.repository import SourceRepository


class SourceService:
    def __init__(self, store: Store, config: MiningConfig) -> None:
        self.repository = SourceRepository(store)
        self.config = config

    def list_sources(self, ctx: RequestContext) -> dict[str, Any]:
        """Every adapter, with the options it accepts, and every source mined so far."""
        ctx.require_read("sources")
        adapters = registry.available(self.config)
        return {
            "adapters": [describe(adapters[name]) for name in sorted(adapters)],
            "sources": self.repository.list_sources(),
        }
