"""The composition root: every service of the daemon, built once and handed to whoever calls it.

`compose` builds the services on an open store; the URL configuration binds each view to the
services it calls, the MCP server gets the tools' services, and the job executor hands them to
every job it runs. Nothing below the project package looks a service up: each gets what it
needs from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from graph.entities import EntityService
from graph.extraction_records import ExtractionRecords
from graph.facts import FactService
from graph.reads import GraphReads
from graph.repositories.entities import EntityRepository
from graph.repositories.extraction import ExtractionRepository
from graph.repositories.facts import FactRepository
from graph.repositories.reads import GraphReadRepository
from jobs.executor import Executor
from jobs.repository import JobRepository
from jobs.services import JobService
from kernel.config import Config, default_config_file, state_dir
from kernel.events import EventBus
from kernel.store import Store
from memcastle_project.auth import TokenService
from memcastle_project.configuration import ConfigurationReport
from memcastle_project.console import DatabaseConsole
from memcastle_project.repository import TokenRepository
from memcastle_project.system import SystemService
from palace.embeddings.repository import EmbeddingRepository
from palace.embeddings.service import EmbeddingService
from palace.filing import FilingService
from palace.hierarchy import HierarchyService
from palace.journal import JournalService
from palace.maintenance import Maintenance
from palace.repositories.filing import FilingRepository
from palace.repositories.hierarchy import HierarchyRepository
from palace.repositories.journal import JournalRepository
from palace.repositories.maintenance import MaintenanceRepository
from palace.repositories.revisions import RevisionRepository
from palace.revisions import RevisionService
from palace.search.indexes import SearchIndexes
from palace.search.preferences import load_preferences
from palace.search.repository import SearchRepository
from palace.search.service import SearchService
from sources.access_tokens import AccessTokens
from sources.components import ComponentRuntime
from sources.credentials import SystemCredentialStore
from sources.miner_service import MinerService
from sources.packages import SourcePackages, compiled_cache_dir
from sources.registry import SourceRegistry
from sources.registry_fetch import Fetcher
from sources.repository import PackageRepository, SourceRepository, TriggerRepository
from sources.services import SourceService
from sources.sign_in import SignIns
from sources.signing import TrustPolicy
from sources.trigger_service import TriggerService
from sources.trigger_supervisor import TriggerSupervisor
from sources.webhooks import WebhookDeliveries, WebhookListener
from web.files import DIST as DASHBOARD_DIR

if TYPE_CHECKING:
    from graph.extraction import ExtractServices
    from jobs.demo import DemoServices
    from palace.checkpoint import CheckpointServices
    from palace.embeddings.job import EmbedServices
    from palace.maintenance import MaintenanceServices
    from sources.mining import MineServices


@dataclass
class Services:
    """Every service of one daemon (or standalone worker), on one store.

    It satisfies each app's protocol of what its job kinds and sweeps call
    (`palace.checkpoint.CheckpointServices`, ...) and the MCP tools' (`mcp_bridge.tools`)."""

    config: Config
    store: Store
    events: EventBus
    executor: Executor
    jobs: JobService
    tokens: TokenService
    hierarchy: HierarchyService
    filing: FilingService
    revisions: RevisionService
    journal: JournalService
    embeddings: EmbeddingService
    indexes: SearchIndexes
    search: SearchService
    entities: EntityService
    facts: FactService
    extraction_records: ExtractionRecords
    graph_reads: GraphReads
    sources: SourceService
    sign_ins: SignIns
    registry: SourceRegistry
    maintenance: Maintenance
    miners: MinerService
    triggers: TriggerService
    supervisor: TriggerSupervisor
    system: SystemService
    console: DatabaseConsole
    configuration: ConfigurationReport


# How long one request to an OAuth provider may take.
OAUTH_TIMEOUT = 15.0


def compose(config: Config, store: Store, *, bind_addr: str = "") -> Services:
    """The services of a daemon listening on `bind_addr` (empty for a standalone worker)."""
    events = EventBus()
    job_repository = JobRepository(store)
    executor = Executor(
        job_repository, events, config.jobs, exclusive_store=store.mode == "embedded"
    )
    jobs = JobService(job_repository, executor, retention_days=config.jobs.retention_days)
    hierarchy = HierarchyService(HierarchyRepository(store), events)
    filing = FilingService(FilingRepository(store), hierarchy, events, dedup_config=config.dedup)
    # One entity service resolves every name, so the names the extract job remembers are one set.
    entities = EntityService(EntityRepository(store), events, fuzzy=config.dedup.entity_fuzzy)
    embeddings = EmbeddingService(EmbeddingRepository(store), config.embeddings)
    graph_reads = GraphReads(GraphReadRepository(store))
    indexes = SearchIndexes(
        SearchRepository(store),
        config.palace_path / "search",
        {name: profile.dimensions for name, profile in embeddings.profiles.items()},
    )
    # Sources' OAuth credentials: in the system keyring when one is usable, else in files
    # under the daemon's state directory.
    access_tokens = AccessTokens(
        SystemCredentialStore(state_dir(os.environ) / "credentials"),
        httpx.Client(timeout=OAUTH_TIMEOUT),
    )
    packages = SourcePackages(
        config.mining,
        PackageRepository(store),
        ComponentRuntime(compiled_cache_dir(os.environ)),
        tokens=access_tokens,
    )
    tokens = TokenService(
        TokenRepository(store), enabled=config.auth_enabled, secret=config.auth_token
    )
    # The daemon writes its miners and triggers to the file it was started with, or creates the
    # default.
    config_file = config.config_file or default_config_file(os.environ)
    miners = MinerService(config_file, packages, jobs)
    trigger_repository = TriggerRepository(store)
    triggers = TriggerService(config_file, miners, trigger_repository, events, config.webhook)
    listener = WebhookListener(config.webhook, WebhookDeliveries(triggers, trigger_repository))
    services = Services(
        config=config,
        store=store,
        events=events,
        executor=executor,
        jobs=jobs,
        tokens=tokens,
        hierarchy=hierarchy,
        filing=filing,
        revisions=RevisionService(RevisionRepository(store), hierarchy, filing, events),
        journal=JournalService(JournalRepository(store), hierarchy, filing),
        embeddings=embeddings,
        indexes=indexes,
        # The source preferences are read once, here: changing them needs a restart.
        search=SearchService(
            hierarchy,
            indexes,
            embeddings,
            graph_reads,
            preferences=load_preferences(config.config_file, config.palace_path),
        ),
        entities=entities,
        facts=FactService(FactRepository(store), entities, events),
        extraction_records=ExtractionRecords(ExtractionRepository(store), entities, events),
        graph_reads=graph_reads,
        sources=SourceService(SourceRepository(store), packages),
        sign_ins=SignIns(packages, access_tokens),
        registry=SourceRegistry(
            config.mining,
            packages,
            # The releases API's token: GH_TOKEN, else GITHUB_TOKEN (configuration.md).
            Fetcher(
                api_url=config.mining.github_api_url,
                token=os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN") or None,
            ),
            TrustPolicy(config.mining.trust, config.mining.trusted_keys),
        ),
        maintenance=Maintenance(MaintenanceRepository(store), hierarchy, embeddings, jobs),
        miners=miners,
        triggers=triggers,
        supervisor=TriggerSupervisor(triggers, jobs, listener),
        system=SystemService(config, store, hierarchy, jobs, indexes, embeddings, bind_addr),
        console=DatabaseConsole(config, store, tokens, daemon_port=_port(bind_addr, config)),
        configuration=ConfigurationReport(config, dashboard_dir=DASHBOARD_DIR),
    )
    executor.services = services
    return services


def _port(bind_addr: str, config: Config) -> int:
    """The port the daemon listens on: the one it bound (`server.port` may be 0)."""
    _, _, port = bind_addr.rpartition(":")
    return int(port) if port.isdigit() else config.port


if TYPE_CHECKING:

    def _what_job_kinds_call(
        services: Services,
    ) -> tuple[
        DemoServices,
        CheckpointServices,
        MaintenanceServices,
        EmbedServices,
        ExtractServices,
        MineServices,
    ]:
        """For mypy only: the executor hands `Services` to every job kind and sweeper as an
        untyped object (the job engine knows no app), so each app's protocol of what its kinds
        call is checked against it here."""
        return services, services, services, services, services, services
