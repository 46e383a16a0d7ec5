"""`memcastle source ...` against a real daemon: a package installed with the consent its
permissions need (refused without a terminal, asked on one, given by `--yes` or `--consent`),
a source project built and installed from its directory, shown, enabled, mined, disabled and
removed (cli.md, Sources); and a source asked for by name, looked up in no registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sources.manifest import consent_digest, parse_manifest
from tests.support.cli import cli, cli_json, in_terminal, refused
from tests.support.components import FIXTURES, manifest, package
from tests.support.daemon import Daemon

DIGEST = consent_digest("probe", parse_manifest(manifest("probe")).permissions)


def remote(status: int, code: str) -> str:
    """How the CLI shows a refusal of the daemon's."""
    return f"memcastle::client::remote_rejected ({status}, {code})"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    package("probe")  # built before the daemon starts
    running = Daemon(tmp_path_factory.mktemp("cli-sources")).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("packages") / "probe-1.0.0.tar.gz"
    path.write_bytes(package("probe"))
    return path


def notes(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text("the tide tables of the north harbour\n")
    return root


def test_install_asks_for_consent_and_is_refused_without_a_terminal(
    daemon: Daemon, archive: Path
) -> None:
    diagnostic = refused(
        cli(daemon, "source", "install", str(archive)),
        remote(400, "memcastle::source::consent_required"),
    )
    assert DIGEST in diagnostic
    assert cli(daemon, "source", "show", "probe").returncode == 1, "nothing was installed"

    status, shown = in_terminal(daemon, "source", "install", str(archive), answer="n")
    assert status == 1 and "run echo" in shown and "memcastle::cli::aborted" in shown
    assert cli(daemon, "source", "show", "probe").returncode == 1

    status, shown = in_terminal(daemon, "source", "install", str(archive), answer="y")
    assert status == 0, shown
    assert "installed: probe" in shown
    assert cli_json(daemon, "source", "show", "probe")["state"] == "installed"
    assert cli_json(daemon, "source", "remove", "probe", "--yes") == {"removed": "probe"}


def test_install_with_consent_or_yes_enable_mine_disable_and_remove(
    daemon: Daemon, archive: Path, tmp_path: Path
) -> None:
    wrong = cli(daemon, "source", "install", str(archive), "--consent", "0" * 64)
    refused(wrong, remote(400, "memcastle::source::consent_required"))
    installed = cli_json(daemon, "source", "install", str(archive), "--consent", DIGEST)
    assert installed["replaced"] is False and installed["source"]["state"] == "installed"
    again = cli_json(daemon, "source", "install", str(archive), "--yes", "--enable")
    assert again["replaced"] is True and again["source"]["state"] == "enabled"

    listed = {entry["name"]: entry for entry in cli_json(daemon, "source", "list")["adapters"]}
    assert listed["probe"]["state"] == "enabled"
    job = cli_json(daemon, "mine", "probe", str(notes(tmp_path / "n")), "mode=normal", "--wait")
    assert job["status"] == "completed" and job["result"]["created"] == 1

    assert cli_json(daemon, "source", "disable", "probe")["state"] == "disabled"
    assert cli_json(daemon, "source", "enable", "probe")["state"] == "enabled"
    refused(
        cli(daemon, "source", "disable", "directory"), remote(400, "memcastle::source::builtin")
    )
    assert cli_json(daemon, "source", "remove", "probe", "--yes") == {"removed": "probe"}
    refused(cli(daemon, "source", "show", "probe"), remote(404, "memcastle::source::not_found"))


def test_update_replaces_an_installed_source_and_refuses_one_that_is_not(
    daemon: Daemon, tmp_path: Path
) -> None:
    newer = tmp_path / "probe-1.0.1.tar.gz"
    newer.write_bytes(package("probe", manifest("probe", version='"1.0.1"')))
    refused(
        cli(daemon, "source", "update", str(newer)), remote(404, "memcastle::source::not_found")
    )
    cli_json(daemon, "source", "install", str(newer), "--yes")
    newest = tmp_path / "probe-1.0.2.tar.gz"
    newest.write_bytes(package("probe", manifest("probe", version='"1.0.2"')))
    updated = cli_json(daemon, "source", "update", str(newest))
    assert updated["replaced"] is True and updated["source"]["version"] == "1.0.2"
    cli_json(daemon, "source", "remove", "probe", "--yes")


def test_a_source_project_is_built_and_installed_from_its_directory(daemon: Daemon) -> None:
    installed = cli_json(daemon, "source", "install", str(FIXTURES / "probe"), "--yes")
    assert installed["source"]["name"] == "probe" and installed["source"]["state"] == "installed"
    cli_json(daemon, "source", "remove", "probe", "--yes")
    refused(cli(daemon, "source", "install", str(FIXTURES)), "memcastle::input::invalid")


def test_from_init_to_a_mined_source(daemon: Daemon, tmp_path: Path) -> None:
    """The author's whole path (docs/writing-sources.md): init, build and package it here,
    install it with consent, enable it, mine with it."""
    assert cli(daemon, "source", "init", "harbour", "--parent", str(tmp_path)).returncode == 0
    project = tmp_path / "harbour"
    packed = cli(daemon, "source", "package", str(project))
    assert packed.returncode == 0, packed.stderr
    archive = project / "harbour-0.1.0.tar.gz"
    installed = cli_json(daemon, "source", "install", str(archive), "--yes", "--enable")
    assert installed["source"]["state"] == "enabled"
    mined = cli_json(daemon, "mine", "harbour", str(project / "fixtures" / "notes" / "input"))
    done = cli_json(daemon, "job", "show", mined["id"], "--wait")
    assert done["status"] == "completed" and done["result"]["created"] == 2
    cli_json(daemon, "source", "remove", "harbour", "--yes")


def test_a_source_asked_for_by_name_needs_a_registry(daemon: Daemon, tmp_path: Path) -> None:
    """This daemon has no registry: a name is looked up in none (tests/test_source_registry.py
    installs from one); a local file or directory of that spelling wins over the name."""
    said = refused(
        cli(daemon, "source", "install", "probe@1.0.0", "--yes", cwd=tmp_path),
        remote(404, "memcastle::source::not_in_registry"),
    )
    assert "no registry is configured" in said
    refused(
        cli(daemon, "source", "update", "probe", cwd=tmp_path),
        remote(404, "memcastle::source::not_found"),
    )
    (tmp_path / "probe").mkdir()
    local = cli(daemon, "source", "update", "probe", cwd=tmp_path)
    refused(local, "memcastle::input::invalid")  # the local directory, not a registry name
