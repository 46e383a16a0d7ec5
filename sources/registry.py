"""The adapters this daemon can mine with."""

from __future__ import annotations

from kernel.config import MiningConfig
from kernel.errors import InputInvalid
from sources.adapters import Adapter
from sources.directory import DirectoryAdapter


def available(config: MiningConfig) -> dict[str, Adapter]:
    """The adapters this daemon can mine with, by name."""
    builtin: list[Adapter] = [DirectoryAdapter(max_file_bytes=config.max_file_bytes)]
    return {adapter.name: adapter for adapter in builtin}


def find(config: MiningConfig, name: str) -> Adapter:
    adapters = available(config)
    adapter = adapters.get(name)
    if adapter is None:
        raise InputInvalid(
            "source", f"names no known source {name!r} (known: {', '.join(sorted(adapters))})"
        )
    return adapter
