"""Fixtures: the real SurrealDB engine in memory for service tests, real daemons for the rest."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import httpx
import pytest

GENERATED_TOKEN = re.compile(r"\bmc_[0-9a-f]{64}\b")

# The helpers' asserts report their operands as a test's own do.
pytest.register_assert_rewrite("tests.support")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
django.setup()

from kernel.config import default_assets_dir, load_config  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store  # noqa: E402
from memcastle_project.composition import Services, compose  # noqa: E402
from sources.building import build_bundled, bundled_names  # noqa: E402
from tests.support.auth import AUTH_ENV, SECRET  # noqa: E402
from tests.support.daemon import LOGS, Daemon  # noqa: E402
from tests.support.endpoint import Endpoint  # noqa: E402
from tests.support.events import EventStream, Frame  # noqa: E402
from tests.support.palace_services import Palace, build  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def bundled_sources() -> None:
    """The bundled sources, built as the set-up builds them, so every daemon lists them (a
    no-op after `make test`, which builds them first)."""
    for name in bundled_names():
        build_bundled(name, default_assets_dir() / "sources")


@pytest.fixture(scope="session", autouse=True)
def credentials_never_logged() -> Iterator[None]:
    """After the whole session, no daemon's log holds the configured secret or a generated
    token (`mc_` and 64 hex digits), whatever its tests did."""
    yield
    leaks = []
    for log in dict.fromkeys(LOGS):
        text = log.read_text(errors="replace") if log.exists() else ""
        if SECRET in text or GENERATED_TOKEN.search(text):
            leaks.append(str(log))
    assert not leaks, f"a credential was logged in {leaks}"


@pytest.fixture
def processes() -> Iterator[list[Any]]:
    """Daemons and workers (`tests.support.workers.Worker`) a test starts; any still running
    at teardown are killed."""
    started: list[Any] = []
    yield started
    for item in started:
        process = item.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture
def store() -> Iterator[Store]:
    """A fresh in-memory palace with the schema applied."""
    # Each `mem://` connection is its own datastore.
    opened = Store("mem://")
    opened.open()
    opened.migrate()
    yield opened
    opened.close()


@pytest.fixture
def palace(store: Store) -> Palace:
    """The palace's hierarchy, filing and revisions services on the fresh palace."""
    return build(store)


@pytest.fixture
def services(store: Store) -> Services:
    """The daemon's services composed in this process on the fresh palace, with the defaults."""
    return compose(load_config(env={}), store)


@pytest.fixture
def ctx() -> RequestContext:
    return RequestContext.build()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """A chat-completions endpoint of this test's own (test_embeddings.py has an embeddings
    endpoint of its own under this name)."""
    running = Endpoint()
    yield running
    running.close()


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon shared by the end-to-end tests; each test works in its own wing."""
    running = Daemon(tmp_path_factory.mktemp("daemon")).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    """A client of the shared daemon; a module whose tests talk to a daemon of its own overrides
    this with a client of that one."""
    with daemon.client() as opened:
        yield opened


@pytest.fixture
def stream(daemon: Daemon) -> Iterator[EventStream]:
    """The shared daemon's event stream, opened and past its `open` frame."""
    opened = EventStream(daemon)
    try:
        assert opened.response.status_code == 200
        first = opened.next()
        assert isinstance(first, Frame) and first.event == "open", first
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def shared_secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon with authentication on, shared by a module's tests that change nothing."""
    running = Daemon(tmp_path_factory.mktemp("secured"), env=AUTH_ENV).start()
    yield running
    running.stop()


@pytest.fixture
def fresh_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon of this test's own, for tests that stop, kill or reconfigure it."""
    created = Daemon(tmp_path)
    yield created
    if created.process is not None and created.process.poll() is None:
        created.kill()


@pytest.fixture
def anyio_backend() -> str:
    """The async tests (the MCP client's) run on asyncio alone, not on every anyio backend."""
    return "asyncio"


@pytest.fixture
def wing_name() -> str:
    """A wing no other test uses, so tests sharing a daemon stay independent."""
    return f"wing-{uuid.uuid4().hex[:12]}"
