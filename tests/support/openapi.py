"""The OpenAPI document of the daemon's routes, generated in-process as `/api/schema/` serves it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator

from kernel.config import load_config
from kernel.store import Store
from memcastle_project.composition import compose
from memcastle_project.urls import URLConf


def openapi_document() -> dict[str, Any]:
    """The routes are bound to services (`URLConf`), so a set of them is composed on a store
    that is never opened: generating the document calls none of them."""
    services = compose(load_config(env={}), Store("mem://"))
    generator = SchemaGenerator(urlconf=URLConf(services))
    return generator.get_schema(request=None, public=True)
