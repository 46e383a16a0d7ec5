"""What runs around the services: the store, the job worker, the sweeps and the search indexes,
started and stopped in one order for `memcastle serve` and `memcastle worker` alike.

A daemon migrates the schema, prepares the palace (deduplication keys, lineage links), checks
that authentication can work and keeps the search indexes; a standalone worker of a remote
palace refuses a schema it does not know and runs jobs only. Both run the job worker, recover
the jobs left running, and start one sweeper of each kind the apps registered.
"""

from __future__ import annotations

import logging

from jobs import kinds
from jobs.retention import JobRetention
from jobs.worker import JobWorker
from kernel.config import Config
from kernel.errors import MemCastleError
from kernel.event_relay import EventRelay
from kernel.memory import EngineMemory
from kernel.store import MigrationState, Store
from memcastle_project.composition import Services, compose

logger = logging.getLogger(__name__)


class Runtime:
    """A started process's services and the machinery that runs them."""

    def __init__(self, services: Services, *, daemon: bool) -> None:
        self.services = services
        self.daemon = daemon
        config = services.config
        self.worker = JobWorker(
            services.executor, config.jobs.broker_url, config.jobs.max_concurrency
        )
        # Every process of a remote palace shares its events; only a daemon has streams.
        self.relay = EventRelay.for_config(services.events, config, receive=daemon)
        self._indexes_started = False

    @classmethod
    def open(cls, config: Config, *, daemon: bool, bind_addr: str = "") -> Runtime:
        """Open the store and build the services on it: a daemon applies the pending schema
        migrations, a worker refuses to run with any pending."""
        store = Store.from_config(config)
        store.open()
        try:
            if daemon:
                state = store.migrate()
                logger.info("schema at migration %d of %d", state.applied, state.available)
            else:
                _refuse_pending_migrations(store)
            return cls(compose(config, store, bind_addr=bind_addr), daemon=daemon)
        except BaseException:
            store.close()
            raise

    def start(self) -> None:
        """Prepare the palace (a daemon), then run jobs: the worker, the recovery of jobs left
        running, and the sweeps."""
        services = self.services
        if self.relay is not None:
            self.relay.start()
        if self.daemon:
            self._prepare_palace()
            self._check_auth()
            services.indexes.start()
            self._indexes_started = True
        self.worker.start()
        services.executor.start_up()
        for each in kinds.sweepers(services):
            each.start()
        if self.daemon:
            retention = services.config.jobs.retention_days
            JobRetention(services.jobs, services.events, retention).start()
            EngineMemory(services.store, services.events).start()
            services.supervisor.start()

    def begin_stop(self) -> None:
        """Stop taking jobs and ask the running ones to checkpoint and go back to the queue."""
        self.worker.begin_stop()
        self.services.executor.begin_drain()

    def close(self) -> None:
        """Close the database console, wait for the running jobs (at most
        `jobs.drain_timeout_secs`), then close the indexes and the store, which releases the
        palace's lock."""
        try:
            self.services.console.close()
            self.services.supervisor.stop()
            self.begin_stop()
            self.services.executor.finish_drain(self.services.config.jobs.drain_timeout_secs)
            self.worker.wait_stopped()
            if self.relay is not None:
                self.relay.stop()
            if self._indexes_started:
                self.services.indexes.close()
        finally:
            self.services.store.close()

    def _prepare_palace(self) -> None:
        filled = self.services.filing.backfill_dedup_keys()
        if filled:
            logger.info("gave %d drawers their deduplication keys", filled)
        self.services.sources.packages.record_bundled()
        paired = self.services.revisions.pair_unlinked_supersessions()
        if paired:
            logger.info("linked %d drawers superseded before lineage links existed", paired)

    def _check_auth(self) -> None:
        if self.services.config.auth_enabled and not self.services.tokens.has_credential():
            raise MemCastleError(
                "authentication is enabled but there is no token: neither auth.token nor a "
                "generated token is set",
                code="memcastle::auth::not_configured",
                help="set MEMCASTLE_AUTH_TOKEN (16+ characters) or auth.token, or start once "
                "with auth disabled and generate one with POST /api/auth/token",
            )


def migrations(config: Config, *, apply: bool) -> MigrationState:
    """`memcastle migrate`: the palace's schema migrations, applied first with `apply`. The
    store is opened here, so this fails while a daemon holds an embedded palace."""
    store = Store.from_config(config)
    store.open()
    try:
        return store.migrate() if apply else store.migration_state()
    finally:
        store.close()


def _refuse_pending_migrations(store: Store) -> None:
    state = store.migration_state()
    if state.pending:
        raise MemCastleError(
            f"the palace's schema is at migration {state.applied} of {state.available}",
            code="memcastle::migrate::pending",
            help="start a daemon of this version once, or run `memcastle migrate`",
        )
