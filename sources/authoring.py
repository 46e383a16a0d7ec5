"""Writing a source, on the author's machine: no daemon, no palace, no network.

`source init` lays out a working project from a template (`sources/templates/<template>/`: the
manifest, `app.py`, fixtures and the contract's WIT); `source build` builds a Python project with
the pinned toolchain into the manifest's `[build] output` (a project in another language runs its
`[build] command`); `source test` runs the built component through the same host the daemon
uses, against each fixture case; `source package` writes the archive an install takes.

A fixture case is a directory under `[test] fixtures`: `input/` is the locator the source is
pointed at, and `expected.json` lists, in the order discovered, what `normalize` gives for each
document: `{external_id, title, room, name, kind, uri, tags, segments}`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.errors import InputInvalid
from sources.archive import package_name, sha256_hex, write_package
from sources.building import (
    APP_MODULE,
    NETWORKED_WORLD,
    WIT_DIR,
    WORLD,
    BuildFailed,
    build_component,
)
from sources.component_adapter import Caps, ComponentAdapter
from sources.components import ComponentRuntime
from sources.manifest import MANIFEST_FILE, Manifest, consent_digest, parse_manifest

TEMPLATES = Path(__file__).resolve().parent / "templates"
PLACEHOLDER = "__NAME__"
# The caps `source test` runs a component under: the daemon's defaults.
TEST_CAPS = Caps(memory_mib=256, timeout_secs=60)


def templates() -> list[str]:
    return sorted(path.name for path in TEMPLATES.iterdir() if path.is_dir())


def init(name: str, template: str, parent: Path) -> Path:
    """A new source project `parent/name` from `template`, its name filled in everywhere."""
    if template not in templates():
        raise InputInvalid(
            "--template", f"{template!r} is not a template (supported: {', '.join(templates())})"
        )
    target = parent / name
    if target.exists():
        raise InputInvalid("NAME", f"{target} exists already: choose another name or --parent")
    manifest_text = (TEMPLATES / template / MANIFEST_FILE).read_text(encoding="utf-8")
    parse_manifest(manifest_text.replace(PLACEHOLDER, name))
    shutil.copytree(TEMPLATES / template, target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".toml", ".json"):
            path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, name))
    (target / "wit").mkdir()
    shutil.copyfile(WIT_DIR / "memcastle-source.wit", target / "wit" / "memcastle-source.wit")
    return target


def manifest_of(project: Path) -> Manifest:
    path = project / MANIFEST_FILE
    if not path.is_file():
        raise InputInvalid("PATH", f"{project} is not a source project: it has no {MANIFEST_FILE}")
    return parse_manifest(path.read_text(encoding="utf-8"))


def component_path(project: Path, manifest: Manifest) -> Path:
    if manifest.build_output is None:
        raise InputInvalid("PATH", f"{project / MANIFEST_FILE} has no [build] output")
    return project / manifest.build_output


def build(project: Path) -> Path:
    """Build the project's component; its path."""
    manifest = manifest_of(project)
    output = component_path(project, manifest)
    output.parent.mkdir(parents=True, exist_ok=True)
    if (project / f"{APP_MODULE}.py").is_file():
        world = NETWORKED_WORLD if manifest.permissions.network else WORLD
        build_component([project], output, world)
        return output
    finished = subprocess.run(list(manifest.build_command), cwd=project, check=False)
    if finished.returncode != 0 or not output.is_file():
        raise BuildFailed(
            f"`{' '.join(manifest.build_command)}` exited {finished.returncode} in {project}"
            + ("" if output.is_file() else f" and left no {manifest.build_output}")
        )
    return output


@dataclass(frozen=True)
class CaseResult:
    case: str
    passed: bool
    detail: str


def test(project: Path, cache_dir: Path) -> list[CaseResult]:
    """Run the built component against every fixture case of the project."""
    manifest = manifest_of(project)
    wasm = component_path(project, manifest)
    if not wasm.is_file():
        raise InputInvalid("PATH", f"{wasm} is not built yet: run `memcastle source build` first")
    if manifest.test_fixtures is None:
        raise InputInvalid("PATH", f"{project / MANIFEST_FILE} has no [test] fixtures")
    component = ComponentRuntime(cache_dir).load(wasm, sha256_hex(wasm.read_bytes()))
    adapter = ComponentAdapter(manifest, component, origin="package", caps=TEST_CAPS)
    cases = sorted(path for path in (project / manifest.test_fixtures).iterdir() if path.is_dir())
    return [_run_case(adapter, case) for case in cases]


def _run_case(adapter: ComponentAdapter, case: Path) -> CaseResult:
    expected = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    try:
        found = _documents(adapter, str((case / "input").resolve()))
    except Exception as exc:  # a case fails with what went wrong, the next one still runs
        return CaseResult(case.name, False, f"{type(exc).__name__}: {exc}")
    if found == expected:
        return CaseResult(case.name, True, f"{len(found)} documents")
    return CaseResult(case.name, False, _difference(expected, found))


def _documents(adapter: ComponentAdapter, locator: str) -> list[dict[str, Any]]:
    ref = adapter.identify(locator, {})
    documents = []
    cursor = None
    while True:
        discovery = adapter.discover(ref, cursor, 100)
        for candidate in discovery.candidates:
            raw = adapter.read(ref, candidate)
            if raw is not None:
                canonical = adapter.normalize(raw)
                documents.append(
                    {
                        "external_id": raw.external_id,
                        "title": canonical.title,
                        "room": canonical.room,
                        "name": canonical.name,
                        "kind": canonical.kind,
                        "uri": canonical.uri,
                        "tags": canonical.tags,
                        "segments": canonical.segments,
                    }
                )
            cursor = candidate.cursor_after
        if discovery.exhausted or not discovery.candidates:
            return documents


def _difference(expected: list[dict[str, Any]], found: list[dict[str, Any]]) -> str:
    if len(expected) != len(found):
        return f"expected {len(expected)} documents, found {len(found)}"
    for wanted, got in zip(expected, found, strict=True):
        for key in sorted({*wanted, *got}):
            if wanted.get(key) != got.get(key):
                return (
                    f"{wanted.get('external_id')}: `{key}` expected {wanted.get(key)!r}, "
                    f"found {got.get(key)!r}"
                )
    return "the documents differ"


@dataclass(frozen=True)
class Packed:
    path: Path
    sha256: str
    consent: str | None


def package(project: Path, output: Path | None) -> Packed:
    """Write the project's archive (and its `.sha256` sidecar) from its built component."""
    manifest = manifest_of(project)
    wasm = component_path(project, manifest)
    if not wasm.is_file():
        raise InputInvalid("PATH", f"{wasm} is not built yet: run `memcastle source build` first")
    readme, licence = (_text(project / name) for name in ("README.md", "LICENSE"))
    data = write_package(
        (project / MANIFEST_FILE).read_text(encoding="utf-8"),
        wasm.read_bytes(),
        readme=readme,
        license=licence,
    )
    path = output or project / package_name(manifest)
    path.write_bytes(data)
    digest = sha256_hex(data)
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n")
    asks = manifest.permissions.asks()
    return Packed(
        path, digest, consent_digest(manifest.name, manifest.permissions) if asks else None
    )


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None
