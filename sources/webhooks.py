"""Webhook deliveries: `POST /hooks/{trigger}` on a listener of its own (`[webhook]`).

The listener is not the daemon's API: it is off by default, loopback by default, bound only
while a webhook trigger is enabled, and it authenticates each delivery with its trigger's own
shared secret (read afresh for every delivery, so a rotated secret applies at once), so every
route of the API stays behind the daemon's token. Whatever it will not accept (an unknown or
disabled trigger, a secret that does not resolve, a missing or wrong signature, another path or
method) gets the same empty 401, so a caller learns nothing about which triggers exist.

An accepted delivery is remembered before its job is queued (`trigger_delivery`), by the
sender's delivery id when the trigger names its header, so a delivery repeated within seven
days is answered `duplicate` and not run again, and one the daemon died on is queued when it
starts again. The body is hashed, then dropped: it is never stored.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from kernel.clock import utc_now
from kernel.config import WebhookConfig
from kernel.errors import MemCastleError
from kernel.logs import fields
from sources.trigger_service import TriggerService
from sources.triggers import Trigger

if TYPE_CHECKING:
    from sources.repository import TriggerRepository

logger = logging.getLogger(__name__)

PREFIX = "/hooks/"
REMEMBERED = dt.timedelta(days=7)
RETRY_AFTER_SECS = 1
READ_TIMEOUT_SECS = 30
MAX_KEY_CHARS = 256


class _Group:
    """Deliveries of one trigger recorded together: each sender waits for the group's answer."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        self.answers: list[dict[str, Any] | None] = []
        self.done = threading.Event()


class WebhookDeliveries:
    """What a delivery does, apart from HTTP: check it, remember it, fire its trigger.

    Deliveries of one trigger that arrive while the previous ones are being recorded are
    recorded together, as a group: their rows in one write, one fire of the trigger for all of
    them (the first is `queued` or `coalesced`, the others join it), their job in one write. A
    burst costs a few round trips to the store, not a few for each delivery."""

    def __init__(
        self,
        triggers: TriggerService,
        repository: TriggerRepository,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        self.triggers = triggers
        self.repository = repository
        self.clock = clock
        self._lock = threading.Lock()
        # The group still taking deliveries, and the lock a group holds while it is recorded,
        # by trigger.
        self._open: dict[str, _Group] = {}
        self._recording: dict[str, threading.Lock] = {}

    def accept(self, name: str, headers: Mapping[str, str], body: bytes) -> dict[str, Any] | None:
        """The answer to a delivery for trigger `name` (header names lower-cased), or None
        when it is not accepted."""
        trigger = self._trigger(name)
        if trigger is None or not _authentic(trigger, headers, body):
            return None
        received = (_delivery_key(trigger, headers), hashlib.sha256(body).hexdigest())
        with self._lock:
            group = self._open.get(trigger.name)
            leads = group is None
            if group is None:
                group = self._open[trigger.name] = _Group()
            index = len(group.received)
            group.received.append(received)
            recording = self._recording.setdefault(trigger.name, threading.Lock())
        if leads:
            # The group takes deliveries until the one before it is recorded.
            with recording:
                with self._lock:
                    del self._open[trigger.name]
                group.answers = self._record(trigger, group.received)
            group.done.set()
        else:
            group.done.wait()
        return group.answers[index]

    def _record(
        self, trigger: Trigger, received: list[tuple[str, str]]
    ) -> list[dict[str, Any] | None]:
        """Remember the group's deliveries, fire the trigger once for the new ones, and answer
        each delivery: new, repeated (`duplicate`), or refused (None)."""
        try:
            seen = self.repository.record_deliveries(trigger.name, received, self.clock())
        except MemCastleError as exc:
            logger.warning(
                "webhook deliveries could not be recorded",
                extra=fields(trigger=trigger.name, error=exc.code),
            )
            return [None] * len(received)
        fresh = list(dict.fromkeys(key for key, _ in received if key not in seen))
        fired: dict[str, Any] | None = None
        if fresh:
            try:
                fired = self.triggers.run(trigger, deliveries=fresh)
            except MemCastleError as exc:
                logger.warning(
                    "a webhook delivery could not run its trigger",
                    extra=fields(trigger=trigger.name, error=exc.code),
                )
                self.repository.forget_delivery_keys(trigger.name, fresh)
        answers: list[dict[str, Any] | None] = []
        answered: set[str] = set()
        for key, _ in received:
            if key in seen:
                answers.append({"status": "duplicate", "job": seen[key].get("job")})
            elif fired is None:
                answers.append(None)
            elif key in answered:
                answers.append({"status": "duplicate", "job": fired["job"]})
            else:
                # The first new delivery is what the fire was; the rest joined it.
                status = "coalesced" if answered else fired["status"]
                answers.append({"status": status, "job": fired["job"]})
                answered.add(key)
        return answers

    def recover(self) -> None:
        """Queue what the daemon accepted but died before queueing (deliveries without a job,
        of triggers still enabled), once per trigger, and forget deliveries older than seven
        days."""
        self.repository.forget_deliveries(self.clock() - REMEMBERED)
        waiting: dict[str, list[str]] = {}
        for row in self.repository.deliveries_without_job():
            waiting.setdefault(row["trigger"], []).append(row["key"])
        for name, keys in waiting.items():
            trigger = self._trigger(name)
            if trigger is None:
                continue
            try:
                self.triggers.run(trigger, deliveries=keys)
            except MemCastleError as exc:
                logger.warning(
                    "a delivery accepted before a restart could not run its trigger",
                    extra=fields(trigger=name, error=exc.code),
                )
                continue
            logger.info("queued %d webhook deliveries accepted before a restart", len(keys))

    def _trigger(self, name: str) -> Trigger | None:
        for trigger in self.triggers.current():
            if trigger.name == name and trigger.type == "webhook" and trigger.enabled:
                return trigger
        return None


def _authentic(trigger: Trigger, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the delivery carries the trigger's secret: its HMAC-SHA-256 of the body (or the
    secret itself, with `token`) in the trigger's header, compared in constant time."""
    secret = trigger.secret()
    given = headers.get(trigger.header)
    if secret is None or given is None:
        return False
    if trigger.auth == "token":
        return hmac.compare_digest(given.encode(), secret)
    mac = hmac.new(secret, body, hashlib.sha256).digest()
    shown = mac.hex() if trigger.encoding == "hex" else base64.b64encode(mac).decode()
    return hmac.compare_digest(given.encode(), (trigger.prefix + shown).encode())


def _delivery_key(trigger: Trigger, headers: Mapping[str, str]) -> str:
    """The sender's delivery id when the trigger names its header and it came, else a key of
    our own (the delivery is remembered all the same, for the restart that finds it)."""
    header = trigger.delivery_header
    given = headers.get(header) if header is not None else None
    if given and len(given) <= MAX_KEY_CHARS:
        return given
    return uuid.uuid4().hex


class WebhookListener:
    """The socket deliveries come to, bound and closed by the trigger supervisor."""

    def __init__(self, config: WebhookConfig, deliveries: WebhookDeliveries) -> None:
        self.config = config
        self.deliveries = deliveries
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._in_flight = threading.BoundedSemaphore(config.max_concurrent)
        self._lock = threading.Lock()

    @property
    def address(self) -> tuple[str, int] | None:
        server = self._server
        return None if server is None else (str(server.server_address[0]), server.server_port)

    def recover(self) -> None:
        self.deliveries.recover()

    def keep(self, *, open_: bool) -> None:
        """Bind the listener when it should listen and does not, close it in the reverse case.
        It listens only while `[webhook] enable` is set (and a webhook trigger is enabled)."""
        with self._lock:
            if open_ and self.config.enable and self._server is None:
                self._open()
            elif not (open_ and self.config.enable) and self._server is not None:
                self._close()

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._close()

    def _open(self) -> None:
        try:
            server = _Server((self.config.bind, self.config.port), self._handler())
        except OSError as exc:
            logger.error(
                "the webhook listener could not bind; deliveries are refused until it can",
                extra=fields(bind=self.config.bind, port=self.config.port, error=str(exc)),
            )
            return
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="memcastle-webhooks", daemon=True
        )
        self._thread.start()
        host, port = server.server_address[:2]
        logger.info("webhook listener on %s:%s", host, port)

    def _close(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None
        logger.info("webhook listener closed")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        listener = self

        class Delivery(DeliveryHandler):
            owner = listener

        return Delivery


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Senders retry on refusal; a short queue of waiting connections is enough.
    request_queue_size = 128


class DeliveryHandler(BaseHTTPRequestHandler):
    owner: WebhookListener
    protocol_version = "HTTP/1.1"
    # An answer's head and body go out as they are written, not held back for the sender's
    # acknowledgement (which a kept-alive sender delays): 40 ms a delivery otherwise.
    disable_nagle_algorithm = True
    # A sender that stops sending (a body declared and never sent, a kept-alive connection left
    # idle) is dropped after this many seconds, and gives back its place among max_concurrent.
    timeout = READ_TIMEOUT_SECS
    server_version = "MemCastle"
    sys_version = ""

    def do_POST(self) -> None:
        owner = self.owner
        if not owner._in_flight.acquire(blocking=False):
            self._answer(429, headers={"Retry-After": str(RETRY_AFTER_SECS)}, close=True)
            return
        try:
            self._deliver(owner)
        finally:
            owner._in_flight.release()

    def _deliver(self, owner: WebhookListener) -> None:
        length = self._length()
        if length is None:
            self._refuse()
            return
        if length > owner.config.max_body_bytes:
            self._answer(413, close=True)
            return
        try:
            body = self.rfile.read(length)
        except OSError:
            # The sender stopped sending (READ_TIMEOUT_SECS) or went away: nothing to answer.
            self.close_connection = True
            return
        name = self.path[len(PREFIX) :] if self.path.startswith(PREFIX) else ""
        headers = {key.lower(): value for key, value in self.headers.items()}
        answer = owner.deliveries.accept(name, headers, body) if name else None
        if answer is None:
            self._refuse()
            return
        self._answer(202, json.dumps(answer).encode())

    def _length(self) -> int | None:
        """The body's declared length; None when it is missing or not a number (a chunked
        body is not accepted: senders of webhooks declare their length)."""
        raw = self.headers.get("Content-Length")
        if raw is None or not raw.isdigit():
            return None
        return int(raw)

    def _refuse(self) -> None:
        """Every refusal is this one answer, whatever its reason."""
        self._answer(401, close=True)

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _refuse

    def _answer(
        self,
        status: int,
        body: bytes = b"",
        *,
        headers: Mapping[str, str] | None = None,
        close: bool = False,
    ) -> None:
        self.send_response_only(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Deliveries are logged by what they did, never by their request line."""
