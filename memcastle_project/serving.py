"""Starting and stopping the daemon: `memcastle serve`.

Start-up order: validate configuration, bind the listener (an address in use fails here, before
storage is touched), open the store, apply migrations, check auth, then serve with Daphne in this
process. SIGINT, SIGTERM and `POST /api/shutdown` stop the reactor; the store is closed (which
releases the palace's lock) and the registry file removed before the process exits with 0.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from typing import Any

# Daphne installs Twisted's asyncio reactor when imported: it must come before anything else
# imports `twisted.internet.reactor`.
from daphne.server import Server  # isort: skip
from twisted.internet import tcp

from graph import extraction
from jobs.worker import JobWorker
from kernel import __version__
from kernel.config import Config
from kernel.errors import MemCastleError
from kernel.logs import configure_logging
from kernel.store import Store
from memcastle_project import runtime
from memcastle_project.registry import RegistryFile

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_SECS = 3


def bind_listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    shown = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
    try:
        sock.bind((host, port))
        sock.listen(256)
    except OSError as exc:
        sock.close()
        raise MemCastleError(
            f"cannot listen on {shown}: {exc.strerror}",
            code="memcastle::server::bind_failed",
            help="stop what holds the address, or choose another with server.port / "
            "MEMCASTLE_PORT (a daemon for this palace may already be running)",
        ) from None
    sock.setblocking(False)
    return sock


def address_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if sock.family == socket.AF_INET6 else f"{host}:{port}"


def _endpoint(sock: socket.socket) -> str:
    """Daphne's description of the listener we already bound.

    IPv4 sockets are handed over as a duplicate descriptor (Twisted closes the one it adopts).
    Daphne's descriptor endpoint cannot say "IPv6", so an IPv6 listener is closed and bound again
    by Twisted on the same, already known, port.
    """
    if sock.family == socket.AF_INET:
        adopted = os.dup(sock.fileno())
        # Only Twisted's copy may listen, so that closing it refuses new connections.
        sock.close()
        return f"fd:fileno={adopted}"
    host, port = sock.getsockname()[:2]
    sock.close()
    escaped = host.replace(":", "\\:")
    return f"tcp6:port={port}:interface={escaped}"


def _check_auth(daemon: runtime.Runtime) -> None:
    if daemon.config.auth_enabled and not daemon.tokens.has_credential():
        raise MemCastleError(
            "authentication is enabled but there is no token: neither auth.token nor a "
            "generated token is set",
            code="memcastle::auth::not_configured",
            help="set MEMCASTLE_AUTH_TOKEN (16+ characters) or auth.token, or start once with "
            "auth disabled and generate one with POST /api/auth/token",
        )


def serve(config: Config) -> int:
    """Run the daemon until it is asked to stop; returns the exit status."""
    configure_logging(config.log_level, config.log_format)
    sock = bind_listener(config.bind, config.port)
    store = Store.from_config(config)
    try:
        store.open()
        state = store.migrate()
        logger.info("schema at migration %d of %d", state.applied, state.available)
        daemon = runtime.Runtime.build(config, store)
        daemon.bind_addr = address_of(sock)
        # Job handlers reach the services through it, and jobs may start before serving does.
        runtime.install(daemon)
        filled = daemon.palace.backfill_dedup_keys()
        if filled:
            logger.info("gave %d drawers their deduplication keys", filled)
        paired = daemon.palace.pair_unlinked_supersessions()
        if paired:
            logger.info("linked %d drawers superseded before lineage links existed", paired)
        _check_auth(daemon)
        daemon.indexes.start()
        if config.bind not in ("127.0.0.1", "::1") and not config.auth_enabled:
            logger.warning("listening on %s without authentication", daemon.bind_addr)
        worker = JobWorker(daemon.executor, config.jobs.broker_url, config.jobs.max_concurrency)
        worker.start()

        def stop_jobs() -> None:
            worker.begin_stop()
            daemon.executor.begin_drain()

        try:
            daemon.executor.start_up()
            daemon.embeddings.start_sweeps(daemon.jobs, daemon.events)
            extraction.start_sweeps(
                daemon.config.extraction, daemon.jobs, daemon.events, daemon.store
            )
            _run(daemon, sock, stop_jobs)
        finally:
            stop_jobs()
            daemon.executor.finish_drain(config.jobs.drain_timeout_secs)
            worker.wait_stopped()
            daemon.indexes.close()
    finally:
        runtime.install(None)
        store.close()
        sock.close()
    logger.info("stopped")
    return 0


class Drain:
    """Stop gracefully: refuse new connections, let requests in flight finish, then stop.

    Requests are tracked per connection (Twisted's `HTTPChannel.requests` holds a request from
    its first line until its response is done), so a request whose body is still arriving is
    waited for too. Idle keep-alive connections are closed. After `SHUTDOWN_GRACE_SECS`, or on a
    second signal, the reactor stops whatever is left.
    """

    def __init__(self, reactor: Any, on_begin: Callable[[], None]) -> None:
        self.reactor = reactor
        self.on_begin = on_begin
        self.deadline: float | None = None

    def begin(self) -> None:
        if self.deadline is not None:
            logger.info("stopping now")
            self.reactor.stop()
            return
        logger.info("stopping: draining requests in flight")
        self.deadline = time.monotonic() + SHUTDOWN_GRACE_SECS
        self.on_begin()
        for reader in self.reactor.getReaders():
            if isinstance(reader, tcp.Port):
                reader.stopListening()
        self._check()

    def _check(self) -> None:
        busy = False
        for reader in self.reactor.getReaders():
            if not isinstance(reader, tcp.Server):
                continue
            # Twisted wraps each HTTPChannel in a protocol-switching proxy (`_channel`).
            channel = getattr(reader.protocol, "_channel", reader.protocol)
            if getattr(channel, "requests", None):
                busy = True
            else:
                reader.loseConnection()
        assert self.deadline is not None
        if busy and time.monotonic() < self.deadline:
            self.reactor.callLater(0.01, self._check)
        elif self.reactor.running:
            self.reactor.stop()


def _run(daemon: runtime.Runtime, sock: socket.socket, stop_jobs: Callable[[], None]) -> None:
    from twisted.internet import reactor

    from memcastle_project.asgi import application, mcp_endpoint

    registry = RegistryFile(daemon.config)

    def stop_streams_and_jobs() -> None:
        # Event streams end at once (they are never waited for); MCP sessions once their calls
        # in flight are answered; jobs checkpoint meanwhile.
        daemon.events.close()
        mcp_endpoint.close()
        stop_jobs()

    drain = Drain(reactor, stop_streams_and_jobs)

    def on_signal(signum: int, frame: object) -> None:
        reactor.callFromThread(drain.begin)

    def ready() -> None:
        registry.write(daemon.bind_addr, daemon.started_at)
        logger.info(
            "MemCastle %s serving palace %s on http://%s (pid %d)",
            __version__,
            daemon.config.palace_path,
            daemon.bind_addr,
            daemon.pid,
        )

    # The shutdown request is itself in flight, so the drain answers it before stopping.
    daemon.request_shutdown = lambda: reactor.callFromThread(drain.begin)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = Server(
        application=application,
        endpoints=[_endpoint(sock)],
        signal_handlers=False,
        application_close_timeout=SHUTDOWN_GRACE_SECS,
        ready_callable=ready,
        verbosity=0,
    )
    try:
        server.run()
    finally:
        registry.remove()
