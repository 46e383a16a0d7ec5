"""Start a real daemon on a temporary palace for one kind of run, and wait for its embeddings.

The configuration is a TOML file handed over through `MEMCASTLE_CONFIG`, exactly as a user would
configure the daemon. Stand-in runs configure one `external` profile and an empty default
profile, so the daemon embeds nothing by itself and every vector is the harness's. Daemon-embedded
runs make the profile under test the default, and the harness waits for the daemon's embed job to
have embedded every drawer before it asks a question: judged before that, semantic search would be
scored on a palace half without vectors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.eval import api
from tests.eval.seeding import Seeded
from tests.eval.standin import DIMENSIONS
from tests.support.daemon import Daemon

EMBED_TIMEOUT = 900.0
"""Seconds to wait for a daemon's embed job; the local model embeds tens of drawers a second."""
ACTIVE = frozenset({"queued", "running"})


def standin_config(profile: str = "standin", dimensions: int = DIMENSIONS) -> str:
    return (
        "[embeddings]\n"
        'default_profile = ""\n'
        f"[embeddings.profiles.{profile}]\n"
        'provider = "external"\n'
        'model = "stand-in"\n'
        f"dimensions = {dimensions}\n"
    )


def local_config() -> str:
    return '[embeddings]\ndefault_profile = "local"\n'


def http_config(
    url: str, model: str, api_key: str | None, dimensions: int, profile: str = "eval"
) -> str:
    """An OpenAI-compatible provider as the default profile (LongMemEval's semantic runs)."""
    lines = [
        "[embeddings]",
        f"default_profile = {json.dumps(profile)}",
        f"[embeddings.profiles.{profile}]",
        'provider = "http"',
        f"url = {json.dumps(url)}",
        f"model = {json.dumps(model)}",
        f"dimensions = {dimensions}",
    ]
    if api_key:
        lines.append(f"api_key = {json.dumps(api_key)}")
    return "\n".join(lines) + "\n"


def start_daemon(root: Path, config: str, default_profile: str = "") -> Daemon:
    """A daemon on a fresh palace under `root`, configured by `config` (TOML text).

    `default_profile` must repeat the config's: the test daemon sets
    MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE (empty, so that test daemons embed nothing), and the
    environment overrides the file.
    """
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "memcastle.toml"
    config_path.write_text(config)
    env = {
        "MEMCASTLE_CONFIG": str(config_path),
        "MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": default_profile,
    }
    return Daemon(root, env=env).start()


def describe(client: httpx.Client) -> dict[str, Any]:
    """What the daemon says about itself: version, storage backend, embeddings if it says."""
    status = api.status(client)
    described: dict[str, Any] = {
        "version": status.get("version"),
        "storage": (status.get("store") or {}).get("mode"),
    }
    for key in ("embeddings", "embedding"):
        if key in status:
            described["embeddings"] = status[key]
    return described


@dataclass
class EmbedWait:
    """How long the daemon took to embed the palace, for the report."""

    seconds: float
    drawers: int
    jobs: int


def wait_for_embeddings(
    client: httpx.Client,
    seeded: Seeded,
    profile: str,
    *,
    timeout: float = EMBED_TIMEOUT,
    started: float | None = None,
) -> EmbedWait:
    """Wait until no embed job is queued or running and every filed drawer has a vector.

    "Has a vector" is observed the way a client can: a semantic search of every room, with all
    of time, returns every drawer of the room (a drawer without a vector is invisible to the
    semantic leg). A failed embed job stops the wait with its error.
    """
    begin = time.monotonic() if started is None else started
    deadline = time.monotonic() + timeout
    expected = _drawers_per_room(seeded)
    while True:
        embed_jobs = api.jobs(client, "embed")
        failed = [j for j in embed_jobs if j.get("status") == "failed"]
        if failed:
            raise RuntimeError(f"an embed job failed: {json.dumps(failed[0])[:2000]}")
        idle = not any(j.get("status") in ACTIVE for j in embed_jobs)
        if idle and _all_embedded(client, expected, profile):
            total = sum(expected.values())
            return EmbedWait(time.monotonic() - begin, total, len(embed_jobs))
        if time.monotonic() > deadline:
            raise TimeoutError(f"the daemon did not embed every drawer within {timeout}s")
        time.sleep(0.25)


def _drawers_per_room(seeded: Seeded) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for place in seeded.placements.values():
        counts[place] = counts.get(place, 0) + 1
    return counts


def _all_embedded(client: httpx.Client, expected: dict[tuple[str, str], int], profile: str) -> bool:
    for (wing, room), count in _sorted(expected.items()):
        body = {
            "text": "embedding check",
            "ranking": "semantic",
            "limit": 200,
            "profile": profile,
            "filter": {"wing": wing, "room": room, "temporal": "all"},
        }
        hits, _elapsed = api.search(client, body)
        if len(hits) < count:
            return False
    return True


def _sorted(items: Iterable[tuple[tuple[str, str], int]]) -> list[tuple[tuple[str, str], int]]:
    return sorted(items)
