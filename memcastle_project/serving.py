"""Starting and stopping the daemon (`memcastle serve`) and a standalone worker
(`memcastle worker`).

The daemon's start-up order: validate configuration, bind the listener (an address in use fails
here, before storage is touched), open the store, apply migrations, check auth, then serve with
Daphne in this process. SIGINT, SIGTERM and `POST /api/shutdown` stop the reactor; the store is
closed (which releases the palace's lock) and the registry file removed before the process exits
with 0.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

# Daphne installs Twisted's asyncio reactor when imported: it must come before anything else
# imports `twisted.internet.reactor`.
from daphne.server import Server  # isort: skip
from twisted.internet import tcp

from kernel import __version__
from kernel.config import Config
from kernel.errors import ConfigInvalid, MemCastleError
from kernel.logs import configure_logging, fields
from memcastle_project.asgi import Application
from memcastle_project.registry import RegistryFile
from memcastle_project.runtime import Runtime

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


def serve(config: Config) -> int:
    """Run the daemon until it is asked to stop; returns the exit status."""
    configure_logging(config.log_level, config.log_format)
    sock = bind_listener(config.bind, config.port)
    try:
        runtime = Runtime.open(config, daemon=True, bind_addr=address_of(sock))
        try:
            runtime.start()
            if config.bind not in ("127.0.0.1", "::1") and not config.auth_enabled:
                logger.warning(
                    "listening on %s without authentication", runtime.services.system.bind_addr
                )
            _run(runtime, sock)
        finally:
            runtime.close()
    finally:
        sock.close()
    logger.info("stopped")
    return 0


def work(config: Config) -> int:
    """`memcastle worker`: run jobs of a remote palace beside its daemons, until SIGTERM/SIGINT.

    It claims from the same job rows as the daemons, through the same Redis broker, and drains
    like a daemon when stopped.
    """
    configure_logging(config.log_level, config.log_format)
    if config.store.mode != "remote" or not config.jobs.broker_url:
        raise ConfigInvalid(
            '`memcastle worker` needs store.mode = "remote" and jobs.broker_url: an embedded '
            "palace runs its jobs inside its daemon"
        )
    runtime = Runtime.open(config, daemon=False)
    try:
        runtime.start()
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        logger.info(
            "worker ready",
            extra=fields(
                worker_id=runtime.services.executor.worker_id,
                concurrency=config.jobs.max_concurrency,
            ),
        )
        stop.wait()
        logger.info("stopping: draining running jobs")
    finally:
        runtime.close()
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


def _run(runtime: Runtime, sock: socket.socket) -> None:
    from twisted.internet import reactor

    services = runtime.services
    application = Application(services)
    registry = RegistryFile(services.config)

    def stop_streams_and_jobs() -> None:
        # Event streams end at once (they are never waited for); MCP sessions once their calls
        # in flight are answered; jobs checkpoint meanwhile.
        services.events.close()
        application.mcp.close()
        runtime.begin_stop()

    drain = Drain(reactor, stop_streams_and_jobs)

    def on_signal(signum: int, frame: object) -> None:
        reactor.callFromThread(drain.begin)

    def ready() -> None:
        registry.write(services.system.bind_addr, services.system.started_at)
        logger.info(
            "MemCastle %s serving palace %s on http://%s (pid %d)",
            __version__,
            services.config.palace_path,
            services.system.bind_addr,
            services.system.pid,
        )

    # The shutdown request is itself in flight, so the drain answers it before stopping.
    services.system.request_shutdown = lambda: reactor.callFromThread(drain.begin)
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
