"""The webhook listener: `POST /hooks/{trigger}` on a socket of its own, through a real daemon.

Deliveries are sent as raw HTTP where the exact bytes matter (every refusal must be the same
answer), and with httpx otherwise."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernel.config import WebhookConfig, load_config
from kernel.store import Store
from memcastle_project.composition import Services
from sources.repository import TriggerRepository
from sources.webhooks import DeliveryHandler, WebhookDeliveries, WebhookListener
from tests.support.daemon import Daemon
from tests.support.http import wait_job
from tests.support.waits import wait_for

SECRET = "webhook-shared-secret-for-tests"
TOKEN = "a-token-the-sender-sends-as-is"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _configured(root: Path, notes: Path, port: int, **webhook: Any) -> Daemon:
    settings = {"enable": "true", "port": str(port), **{k: str(v) for k, v in webhook.items()}}
    path = root / "config" / "memcastle" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "[webhook]\n"
        + "".join(f"{key} = {value}\n" for key, value in settings.items())
        + f'\n[[miners]]\nname = "notes"\nsource = "directory"\nlocator = "{notes}"\n'
        + '\n[[triggers]]\nname = "push"\nminer = "notes"\ntype = "webhook"\n'
        + 'delivery_header = "X-Delivery-Id"\ncredential = { type = "env", name = "HOOK_SECRET" }\n'
        + '\n[[triggers]]\nname = "tok"\nminer = "notes"\ntype = "webhook"\nauth = "token"\n'
        + 'credential = { type = "env", name = "HOOK_TOKEN" }\n'
    )
    return Daemon(root, env={"HOOK_SECRET": SECRET, "HOOK_TOKEN": TOKEN})


def signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def raw(port: int, request: bytes) -> bytes:
    """Everything the listener answers to `request`, read until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def post(path: str, body: bytes, **headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: localhost", f"Content-Length: {len(body)}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hooked")
    (directory / "readme.md").write_text("# Hooked\n\nMined when a webhook says so.\n")
    return directory


@pytest.fixture(scope="module")
def port() -> int:
    return _free_port()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, notes: Path, port: int) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("webhooks")
    running = _configured(root, notes, port, max_body_bytes=1024, max_concurrent=2).start()
    with running.client() as client:
        for name in ("push", "tok"):
            response = client.post(f"/api/triggers/{name}/enable")
            assert response.status_code == 200, response.text
    wait_for(lambda: listening(port), timeout=15, what="the webhook listener to bind")
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    with daemon.client() as opened:
        yield opened


def test_a_signed_delivery_queues_its_miners_job(client: httpx.Client, port: int) -> None:
    body = b'{"ref": "refs/heads/main"}'

    response = httpx.post(
        f"http://127.0.0.1:{port}/hooks/push",
        content=body,
        headers={"X-Hub-Signature-256": signed(body)},
    )

    assert response.status_code == 202, response.text
    answer = response.json()
    assert answer["status"] in ("queued", "coalesced")
    job = wait_job(client, answer["job"])
    assert job["status"] == "completed" and job["kind"]["source"] == "directory"
    assert client.get("/api/triggers/push").json()["state"]["last_job"] == answer["job"]


def test_every_refusal_is_the_same_empty_401(client: httpx.Client, port: int) -> None:
    body = b'{"ref": "refs/heads/main"}'
    assert client.post("/api/triggers", json={
        "name": "off", "miner": "notes", "type": "webhook",
        "credential": {"type": "env", "name": "HOOK_SECRET"},
    }).status_code == 201  # fmt: skip
    try:
        answers = {
            "wrong signature": raw(
                port, post("/hooks/push", body, X_Hub_Signature_256=signed(body, "guess"))
            ),
            "no signature": raw(port, post("/hooks/push", body)),
            "unknown trigger": raw(
                port, post("/hooks/nobody", body, X_Hub_Signature_256=signed(body))
            ),
            "disabled trigger": raw(
                port, post("/hooks/off", body, X_Hub_Signature_256=signed(body))
            ),
            "a schedule's name": raw(
                port, post("/hooks/notes", body, X_Hub_Signature_256=signed(body))
            ),
            "another route": raw(port, b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"),
        }
    finally:
        client.delete("/api/triggers/off")

    assert set(answers.values()) == {
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    }, answers


def test_a_token_trigger_takes_its_secret_as_is(port: int) -> None:
    url = f"http://127.0.0.1:{port}/hooks/tok"
    accepted = httpx.post(url, content=b"{}", headers={"X-MemCastle-Token": TOKEN})
    refused = httpx.post(url, content=b"{}", headers={"X-MemCastle-Token": TOKEN[:-1]})
    assert accepted.status_code == 202 and refused.status_code == 401


def test_a_body_over_the_limit_is_413(port: int) -> None:
    body = b"x" * 1025
    answer = raw(port, post("/hooks/push", body, X_Hub_Signature_256=signed(body)))
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_more_deliveries_in_flight_than_allowed_get_429(port: int) -> None:
    # Two deliveries that declare a body they never send hold both places.
    holders = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    try:
        for holder in holders:
            holder.sendall(b"POST /hooks/push HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
        refused = wait_for(
            lambda: (
                (answer := raw(port, post("/hooks/push", b"{}"))).startswith(b"HTTP/1.1 429 ")
                and answer
            ),
            timeout=15,
            what="a delivery beyond max_concurrent to be refused",
        )
    finally:
        for holder in holders:
            holder.close()
    assert b"\r\nRetry-After: 1\r\n" in refused


def test_a_repeated_delivery_id_is_a_duplicate(port: int) -> None:
    body = b'{"after": "abc123"}'
    headers = {"X-Hub-Signature-256": signed(body), "X-Delivery-Id": "delivery-1"}
    url = f"http://127.0.0.1:{port}/hooks/push"

    first = httpx.post(url, content=body, headers=headers)
    again = httpx.post(url, content=body, headers=headers)

    assert first.status_code == again.status_code == 202
    assert again.json() == {"status": "duplicate", "job": first.json()["job"]}


def test_a_base64_signature_is_read_when_the_trigger_says_so(
    client: httpx.Client, port: int
) -> None:
    change = {"settings": {"encoding": "base64", "header": "X-Signature", "prefix": ""}}
    assert client.put("/api/triggers/push", json=change).status_code == 200
    try:
        body = b"{}"
        mac = hmac.new(SECRET.encode(), body, hashlib.sha256).digest()
        url = f"http://127.0.0.1:{port}/hooks/push"
        response = httpx.post(url, content=body, headers={"X-Signature": base64.b64encode(mac)})
        assert response.status_code == 202, response.text
    finally:
        back = {"settings": {"encoding": None, "header": None, "prefix": None}}
        assert client.put("/api/triggers/push", json=back).status_code == 200


def test_the_listener_is_bound_only_while_a_webhook_trigger_is_enabled(
    tmp_path: Path, notes: Path
) -> None:
    port = _free_port()
    daemon = _configured(tmp_path, notes, port).start()
    try:
        with daemon.client() as client:
            assert not listening(port)
            assert client.post("/api/triggers/push/enable").status_code == 200
            wait_for(lambda: listening(port), timeout=15, what="the listener to bind")
            assert client.post("/api/triggers/push/disable").status_code == 200
            wait_for(lambda: not listening(port), timeout=15, what="the listener to close")
    finally:
        daemon.stop()


def test_a_delivery_the_daemon_died_on_is_queued_once_at_the_next_start(
    tmp_path: Path, notes: Path
) -> None:
    port = _free_port()
    daemon = _configured(tmp_path, notes, port).start()
    with daemon.client() as client:
        assert client.post("/api/triggers/push/enable").status_code == 200
    daemon.kill()
    # What a kill between writing the delivery's row and queueing its job leaves behind.
    store = Store.from_config(load_config(env=daemon.env))
    store.open()
    try:
        deliveries = TriggerRepository(store)
        now = dt.datetime.now(dt.UTC)
        lost = [("lost-1", "0" * 64), ("lost-2", "1" * 64)]
        assert deliveries.record_deliveries("push", lost, now) == {}
    finally:
        store.close()

    daemon.start()
    try:
        with daemon.client() as client:
            fired = wait_for(
                lambda: (
                    (state := client.get("/api/triggers/push").json()["state"])["fires"] and state
                ),
                timeout=15,
                what="the lost deliveries to be queued",
            )
            assert fired["fires"] == 1
            jobs = client.get("/api/jobs", params={"kind": "mine"}).json()["jobs"]
            assert [job["id"] for job in jobs] == [fired["last_job"]]
            # Sent again, the delivery is known: its job is the one queued at start-up.
            body = b"{}"
            again = httpx.post(
                f"http://127.0.0.1:{port}/hooks/push",
                content=body,
                headers={"X-Hub-Signature-256": signed(body), "X-Delivery-Id": "lost-1"},
            )
            assert again.json() == {"status": "duplicate", "job": fired["last_job"]}
    finally:
        daemon.stop()


def test_a_sender_that_stops_sending_is_dropped_and_gives_back_its_place(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DeliveryHandler, "timeout", 0.5)
    config = WebhookConfig(enable=True, port=0, max_concurrent=1)
    listener = WebhookListener(
        config, WebhookDeliveries(services.triggers, TriggerRepository(services.store))
    )
    listener.keep(open_=True)
    try:
        assert listener.address is not None
        port = listener.address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as stalled:
            stalled.sendall(b"POST /hooks/push HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
            # Dropped without an answer once it has sent nothing for the timeout.
            assert stalled.recv(1024) == b""
        # Its place is free again: the next delivery is answered (refused: no such trigger).
        assert raw(port, post("/hooks/push", b"{}")).startswith(b"HTTP/1.1 401 ")
    finally:
        listener.close()
