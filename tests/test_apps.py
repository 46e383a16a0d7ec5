"""The apps as Django loads them: each registers its job kinds and sweeps, and starting Django
(what every CLI command does) imports none of the machinery those bring."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from django.apps import apps

from graph.extraction import ExtractSweeper
from jobs import kinds
from kernel.config import load_config
from palace.embeddings.job import EmbedSweeper
from tests.support.daemon import REPO

APPS = ("jobs", "palace", "graph", "sources", "mcp_bridge", "memcastle_project")


def test_every_app_is_installed() -> None:
    assert {config.name for config in apps.get_app_configs()} >= set(APPS)


def test_each_app_registers_its_job_kinds() -> None:
    owners = {name: kinds.get(name).run.__module__ for name in kinds.names()}  # type: ignore[union-attr]
    assert owners == {
        "audit": "palace.maintenance",
        "checkpoint": "palace.checkpoint",
        "demo": "jobs.demo",
        "embed": "palace.embeddings.job",
        "extract": "graph.extraction",
        "mine": "sources.mining",
        "repair": "palace.maintenance",
    }


def test_each_app_registers_its_sweeps() -> None:
    built = kinds.sweepers(_services())
    assert sorted(type(sweeper).__name__ for sweeper in built) == sorted(
        [EmbedSweeper.__name__, ExtractSweeper.__name__]
    )


def _services() -> SimpleNamespace:
    """What the sweepers are built on; none is started here."""
    return SimpleNamespace(
        jobs=None,
        events=None,
        embeddings=None,
        extraction_records=None,
        config=load_config(env={}),
    )


def test_django_starts_without_the_store_sdk_or_the_search_machinery() -> None:
    """A CLI command only talks to the daemon: it must not pay for what the jobs bring."""
    heavy = ("surrealdb", "numpy", "tantivy", "onnxruntime", "rapidfuzz", "simsimd", "celery")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys, django; "
            "os.environ['DJANGO_SETTINGS_MODULE'] = 'memcastle_project.settings'; "
            "django.setup(); "
            f"print(' '.join(m for m in {heavy!r} if m in sys.modules))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert loaded == []
