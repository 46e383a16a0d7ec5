"""The running daemon's state: its configuration, its store and the services built on it.

`serve` builds one `Runtime` at start-up and installs it; transports reach the services through
`current()`. Nothing here opens connections on import.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from graph.repository import GraphRepository
from graph.services import GraphService
from jobs.executor import Executor
from jobs.services import JobService
from kernel.config import Config
from kernel.errors import ServerFailed
from kernel.events import EventBus
from kernel.store import Store
from memcastle_project.auth import TokenService
from palace.embeddings.service import EmbeddingService
from palace.journal import JournalService
from palace.repository import PalaceRepository
from palace.search.indexes import SearchIndexes
from palace.search.service import SearchService
from palace.services import PalaceService
from sources.configured import ConfiguredSection
from sources.services import SourceService


@dataclass
class Runtime:
    config: Config
    store: Store
    tokens: TokenService
    palace: PalaceService
    journal: JournalService
    events: EventBus
    executor: Executor
    jobs: JobService
    sources: SourceService
    embeddings: EmbeddingService
    indexes: SearchIndexes
    search: SearchService
    graph: GraphService
    miners: ConfiguredSection
    triggers: ConfiguredSection
    bind_addr: str = ""
    started_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    pid: int = field(default_factory=os.getpid)
    request_shutdown: Callable[[], None] = lambda: None

    @classmethod
    def build(cls, config: Config, store: Store) -> Runtime:
        events = EventBus()
        executor = Executor(store, events, config.jobs, exclusive_store=store.mode == "embedded")
        palace = PalaceService(PalaceRepository(store), events, dedup_config=config.dedup)
        embeddings = EmbeddingService(store, config.embeddings)
        indexes = SearchIndexes(
            store,
            config.palace_path / "search",
            {name: profile.dimensions for name, profile in embeddings.profiles.items()},
        )
        return cls(
            config=config,
            store=store,
            tokens=TokenService(store, enabled=config.auth_enabled, secret=config.auth_token),
            palace=palace,
            journal=JournalService(palace),
            events=events,
            executor=executor,
            jobs=JobService(executor),
            sources=SourceService(store, config.mining),
            embeddings=embeddings,
            indexes=indexes,
            search=SearchService(palace, indexes, embeddings),
            graph=GraphService(GraphRepository(store), events, fuzzy=config.dedup.entity_fuzzy),
            # The miners and triggers configuration sections are not read yet: none are set.
            miners=ConfiguredSection("miner"),
            triggers=ConfiguredSection("trigger"),
        )


_current: Runtime | None = None


def install(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


def current() -> Runtime:
    if _current is None:
        raise ServerFailed()
    return _current
