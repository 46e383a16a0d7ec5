"""`memcastle doctor`, run as a real command: the config file's checks without a daemon, where
only an error fails, and the read-only checks of a daemon that answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel import __version__
from tests.support.cli import cli, in_terminal
from tests.support.daemon import Daemon

VALID = """\
[server]
port = 8499

[webhook]
enable = true
port = 8788

[embeddings.profiles.remote]
provider = "http"
url = "http://127.0.0.1:9/v1"
model = "tiny"
dimensions = 8

[preferences]
default = "normal"

[preferences.sources.claude]
level = "high"

[palace.preferences.sources.codex]
level = "low"

[[miners]]
name = "notes"
source = "directory"
locator = "/tmp/notes"

[[triggers]]
name = "nightly"
miner = "notes"
type = "schedule"
every = "1d"
enabled = true
"""


@pytest.fixture
def offline(tmp_path: Path) -> Daemon:
    """An environment of its own in which no daemon runs: its configured port, 0, answers
    nothing, and its palace does not exist."""
    return Daemon(tmp_path)


def doctor(daemon: Daemon, config: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """`memcastle doctor` (with `config` as its --config file), piped: its exit status and
    findings."""
    args = []
    if config is not None:
        path = daemon.root / "config.toml"
        path.write_text(config, encoding="utf-8")
        args = ["--config", str(path)]
    result = cli(daemon, "doctor", *args)
    assert result.returncode in (0, 1) and result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def of(found: list[dict[str, Any]], area: str, check: str) -> list[dict[str, Any]]:
    return [f for f in found if (f["area"], f["check"]) == (area, check)]


def line_of(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def test_a_valid_file_passes_and_without_a_daemon_its_checks_are_skipped(
    offline: Daemon,
) -> None:
    status, found = doctor(offline, VALID)
    assert status == 0, found
    assert {f["status"] for f in found if f["area"] != "daemon"} == {"ok"}, found
    assert "1 entry" in of(found, "miners", "section")[0]["summary"]
    assert "1 enabled" in of(found, "triggers", "section")[0]["summary"]
    daemon = [f for f in found if f["area"] == "daemon"]
    assert [f["check"] for f in daemon] == [
        "health",
        "status",
        "version",
        "datastore",
        "migrations",
    ]
    assert {f["status"] for f in daemon} == {"skipped"}
    assert "no daemon answered" in daemon[0]["summary"]
    # Nothing was created: the palace is only said to be creatable.
    assert "does not exist yet" in of(found, "paths", "palace")[0]["summary"]
    assert not offline.palace.exists() and not offline.state.exists()


def test_warnings_do_not_fail(offline: Daemon) -> None:
    config = VALID.replace("port = 8499", 'port = 8499\nprot = 1\nbind = "0.0.0.0"')
    config = config.replace('model = "tiny"', 'modle = "tiny"')
    status, found = doctor(offline, f'colour = "blue"\n{config}')
    assert status == 0, found
    keys = of(found, "config", "keys")
    assert {f["status"] for f in keys} == {"warning"}
    shown = sorted(f["summary"].split("`")[1] for f in keys)
    assert shown == ["colour", "embeddings.profiles.remote.modle", "server.prot"]
    assert "check the spelling of `colour`" in " ".join(f["remediation"] for f in keys)
    exposure = of(found, "server", "exposure")[0]
    assert exposure["status"] == "warning" and "without authentication" in exposure["summary"]


def test_an_invalid_setting_is_an_error_with_its_message(offline: Daemon) -> None:
    status, found = doctor(offline, f'{VALID}\n[logging]\nformat = "xml"\n')
    assert status == 1
    settings = of(found, "config", "settings")[0]
    assert settings["status"] == "error"
    assert "invalid value for `logging.format`" in settings["summary"]
    assert "expected `text` or `json`, got 'xml'" in settings["summary"]
    assert settings["remediation"].startswith("fix the setting")
    # What needs valid settings is skipped; the sections are read all the same.
    assert of(found, "paths", "palace")[0]["status"] == "skipped"
    assert of(found, "miners", "section")[0]["status"] == "ok"

    shown_status, shown = in_terminal(
        offline, "doctor", "--config", str(offline.root / "config.toml")
    )
    assert shown_status == 1, shown
    assert "what to do:" in shown and "1 error" in shown
    assert "invalid value for `logging.format`" in shown


def test_an_invalid_miner_is_an_error_naming_its_line(offline: Daemon) -> None:
    config = VALID.replace('locator = "/tmp/notes"', 'locator = "/tmp/notes"\ncolour = "blue"')
    status, found = doctor(offline, config)
    assert status == 1
    miners = of(found, "miners", "section")[0]
    assert miners["status"] == "error"
    assert f"line {line_of(config, 'colour')}" in miners["summary"]
    assert "`colour` is not a miner key" in miners["summary"]
    assert of(found, "triggers", "section")[0]["status"] == "ok"


def test_an_invalid_trigger_is_an_error_naming_its_line(offline: Daemon) -> None:
    config = VALID.replace('every = "1d"', 'every = "soon"')
    status, found = doctor(offline, config)
    assert status == 1
    triggers = of(found, "triggers", "section")[0]
    assert triggers["status"] == "error"
    assert f"line {line_of(config, 'every')}" in triggers["summary"]
    assert "`every` must be a duration" in triggers["summary"]


def test_invalid_source_preferences_are_an_error(offline: Daemon) -> None:
    status, found = doctor(offline, VALID.replace('level = "high"', 'level = "highest"', 1))
    assert status == 1
    preferences = of(found, "config", "preferences")[0]
    assert preferences["status"] == "error" and "highest" in preferences["summary"]
    status, found = doctor(offline, VALID)
    assert of(found, "config", "preferences")[0]["summary"] == "a policy re-scores search hits"


def test_a_trigger_naming_a_missing_miner(offline: Daemon) -> None:
    disabled = '\n[[triggers]]\nname = "someday"\nminer = "phantom"\ntype = "poll"\nevery = "1h"\n'
    status, found = doctor(offline, VALID.replace('miner = "notes"', 'miner = "ghost"') + disabled)
    assert status == 1
    named = {f["summary"].split("'")[1]: f for f in of(found, "triggers", "miners named")}
    assert named["nightly"]["status"] == "error"
    assert "miner 'ghost', which is not configured" in named["nightly"]["summary"]
    assert named["someday"]["status"] == "warning"

    # A disabled trigger alone only warns.
    status, found = doctor(offline, VALID + disabled)
    assert status == 0
    assert [f["status"] for f in of(found, "triggers", "miners named")] == ["warning"]


def test_a_running_daemon_is_checked_over_http(daemon: Daemon) -> None:
    status, found = doctor(daemon)
    assert status == 0, found
    checks = {f["check"]: f for f in found if f["area"] == "daemon"}
    assert {check: f["status"] for check, f in checks.items()} == {
        "health": "ok",
        "status": "ok",
        "version": "ok",
        "datastore": "ok",
        "migrations": "ok",
    }
    assert daemon.base_url.removeprefix("http://") in checks["health"]["summary"]
    assert "(from the registry)" in checks["health"]["summary"]
    assert checks["version"]["summary"] == f"MemCastle {__version__}"
    assert of(found, "paths", "palace")[0]["summary"].endswith("exists and is writable")
