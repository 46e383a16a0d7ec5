"""Building Python sources into components with the pinned componentize-py.

The bundled sources are written in this repository (`sources/bundled/<name>/`, sharing
`sources/bundled/common/`) and built by the project's own set-up (`make run`, `make test`) into
`mining.bundled_dir` (`<venv>/share/memcastle/sources/<name>/`). A build is keyed by everything
that goes into it (the contract and the world built for, the toolchain's version, every file of
the source and of the shared code), so only the first set-up, or a change, pays for it: about
10 s a source.

A source whose manifest asks for the network is built for the world `networked-source`, which
adds `wasi:http/outgoing-handler` (its WIT vendored under `wit/deps/`): a component of the plain
`source` world has no way to make a request, and one that imports `wasi:http` without the grant
is refused at install.

Run as `python -m sources.building [OUTPUT_DIR]`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
import uuid
from dataclasses import dataclass
from pathlib import Path

from kernel.config import default_assets_dir
from kernel.errors import MemCastleError

HERE = Path(__file__).resolve().parent
WIT_DIR = HERE / "wit"
WORLD = "source"
NETWORKED_WORLD = "networked-source"
# A networked source imports two `types` interfaces (the contract's and `wasi:http`'s), which the
# bindings would name each in full: the contract's keeps the short name the shared guest code uses.
INTERFACE_NAMES = {
    NETWORKED_WORLD: ("memcastle:source/types@0.4.0=types", "wasi:http/types@0.2.0=http_types"),
}
BUNDLED_SOURCES = HERE / "bundled"
COMMON = BUNDLED_SOURCES / "common"
MANIFEST = "memcastle-source.toml"
COMPONENT = "source.wasm"
BUILD_KEY = ".build-key"
# The module a Python source's component is built from: it defines `Adapter`.
APP_MODULE = "app"


class BuildFailed(MemCastleError):
    code = "memcastle::source::build_failed"
    help = "read the builder's output above; fix the source and build again"


@dataclass(frozen=True)
class Built:
    name: str
    component: Path
    rebuilt: bool


def toolchain_version() -> str:
    return importlib.metadata.version("componentize-py")


def build_component(python_paths: list[Path], output: Path, world: str = WORLD) -> None:
    """Build the component of the app module found on `python_paths` into `output`."""
    command = [
        sys.executable,
        "-c",
        "import sys; from componentize_py import script; "
        "sys.argv[0] = 'componentize-py'; sys.exit(script())",
        "-d",
        str(WIT_DIR),
        "-w",
        world,
    ]
    for naming in INTERFACE_NAMES.get(world, ()):
        command += ["--import-interface-name", naming]
    command.append("componentize")
    for path in python_paths:
        command += ["-p", str(path)]
    command += [APP_MODULE, "-o", str(output)]
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    if finished.returncode != 0 or not output.is_file():
        said = (finished.stderr or finished.stdout).strip()[-4000:]
        raise BuildFailed(f"componentize-py could not build {output.name}: {said}")


def bundled_names() -> list[str]:
    return sorted(
        path.parent.name for path in BUNDLED_SOURCES.glob(f"*/{MANIFEST}") if path.parent != COMMON
    )


def world_of(source_dir: Path) -> str:
    """The world a bundled source is built for: `networked-source` when its manifest asks for
    the network, `source` otherwise."""
    with (source_dir / MANIFEST).open("rb") as file:
        permissions = tomllib.load(file).get("permissions", {})
    return NETWORKED_WORLD if permissions.get("network") is True else WORLD


def _key(source_dir: Path, world: str) -> str:
    """What a bundled source's build depends on, as one digest."""
    digest = hashlib.sha256()
    digest.update(toolchain_version().encode())
    digest.update(world.encode() + b"\0")
    for root in (WIT_DIR, COMMON, source_dir):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(HERE)).encode() + b"\0")
                digest.update(path.read_bytes())
    return digest.hexdigest()


def build_bundled(name: str, output_root: Path) -> Built:
    """Build the bundled source `name` into `output_root/name/`, unless it is built already."""
    source_dir = BUNDLED_SOURCES / name
    target = output_root / name
    world = world_of(source_dir)
    key = _key(source_dir, world)
    key_file = target / BUILD_KEY
    if key_file.is_file() and key_file.read_text() == key and (target / COMPONENT).is_file():
        return Built(name, target / COMPONENT, rebuilt=False)
    staging = output_root / f".building-{name}-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
        build_component([COMMON, source_dir], staging / COMPONENT, world)
        shutil.copyfile(source_dir / MANIFEST, staging / MANIFEST)
        (staging / BUILD_KEY).write_text(key)
        retired = output_root / f".retired-{name}-{uuid.uuid4().hex}"
        if target.exists():
            target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Built(name, target / COMPONENT, rebuilt=True)


def main(argv: list[str]) -> int:
    output_root = Path(argv[0]) if argv else default_assets_dir() / "sources"
    output_root.mkdir(parents=True, exist_ok=True)
    for name in bundled_names():
        try:
            built = build_bundled(name, output_root)
        except BuildFailed as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return 1
        print(f"{'built' if built.rebuilt else 'up to date'}: {name} ({built.component})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
