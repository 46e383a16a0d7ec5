"""Writing a source with the local commands (no daemon): `source init` from each template,
`source build`, `source test` (PASS, then FAIL when an expectation is broken) and
`source package` (an archive the daemon would take, and its consent digest)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sources.archive import read_package, sha256_hex
from sources.manifest import consent_digest, parse_manifest
from tests.support.cli import MEMCASTLE

TEMPLATES = ("python", "cli")


def memcastle(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MEMCASTLE), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module", params=TEMPLATES)
def project(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """A project made from the template and built once for the module."""
    parent = tmp_path_factory.mktemp(f"author-{request.param}")
    made = memcastle("source", "init", "tide", "--template", request.param, cwd=parent)
    assert made.returncode == 0, made.stderr
    built = memcastle("source", "build", "tide", cwd=parent)
    assert built.returncode == 0, built.stderr
    assert "built: " in built.stdout
    yield parent / "tide"


def test_a_new_project_passes_its_own_fixtures(project: Path) -> None:
    tested = memcastle("source", "test", ".", "--no-build", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.startswith("PASS ")
    manifest = parse_manifest((project / "memcastle-source.toml").read_text())
    assert manifest.name == "tide" and "__NAME__" not in (project / "app.py").read_text()


def test_a_broken_expectation_fails_naming_the_field(project: Path) -> None:
    [case] = [path for path in (project / "fixtures").iterdir() if path.is_dir()]
    expected = case / "expected.json"
    original = expected.read_text()
    documents = json.loads(original)
    documents[0]["title"] = "something else"
    expected.write_text(json.dumps(documents))
    try:
        tested = memcastle("source", "test", "--no-build", cwd=project)
    finally:
        expected.write_text(original)
    assert tested.returncode == 1
    assert f"FAIL {case.name}: " in tested.stdout and "`title`" in tested.stdout
    assert "code: memcastle::source::test_failed" in tested.stderr


def test_package_writes_an_archive_and_prints_its_consent_digest(project: Path) -> None:
    packed = memcastle("source", "package", "--no-build", "--output", "out.tar.gz", cwd=project)
    assert packed.returncode == 0, packed.stderr
    data = (project / "out.tar.gz").read_bytes()
    package = read_package(data)
    manifest = parse_manifest(package.manifest_text)
    assert f"sha256: {sha256_hex(data)}" in packed.stdout
    assert f"consent digest: {consent_digest('tide', manifest.permissions)}" in packed.stdout
    sidecar = (project / "out.tar.gz.sha256").read_text()
    assert sidecar == f"{sha256_hex(data)}  out.tar.gz\n"


def test_an_unknown_template_is_refused_naming_the_supported_ones(tmp_path: Path) -> None:
    refused = memcastle("source", "init", "x", "--template", "rust", cwd=tmp_path)
    assert refused.returncode == 1
    assert "supported: cli, python" in refused.stderr
    assert not (tmp_path / "x").exists()
