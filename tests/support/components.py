"""Real components for the tests: the sources under `tests/fixtures/sources/` built with the
project's own toolchain, once per content, and packed as the daemon installs them."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from sources.archive import write_package
from sources.building import build_component, toolchain_version, world_of
from tests.support.daemon import REPO

FIXTURES = REPO / "tests" / "fixtures" / "sources"
CACHE = REPO / ".venv" / ".cache" / "test-components"


def built(name: str) -> Path:
    """The component of the fixture source `name`, built unless this content was built before."""
    source = FIXTURES / name
    digest = hashlib.sha256(toolchain_version().encode())
    for path in sorted(source.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    target = CACHE / f"{name}-{digest.hexdigest()[:16]}.wasm"
    if not target.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        build_component([source], partial, world_of(source))
        shutil.move(partial, target)
    return target


def manifest(fixture: str, /, **replacements: str) -> str:
    """The fixture's manifest, with `key = value` lines replaced (`version='"1.0.1"'`)."""
    text = (FIXTURES / fixture / "memcastle-source.toml").read_text()
    for key, value in replacements.items():
        text, count = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert count == 1, f"the {fixture} manifest has no single `{key}` line"
    return text


def package(name: str, manifest_text: str | None = None, component: bytes | None = None) -> bytes:
    """The fixture source packed as an archive, optionally with another manifest or component."""
    return write_package(
        manifest_text if manifest_text is not None else manifest(name),
        component if component is not None else built(name).read_bytes(),
    )
