"""The dashboard under /ui, served only when enabled, and the log formats (the dashboard's own
tests are test_dashboard.py and test_dashboard_browser.py)."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from kernel.logs import MEMCASTLE_LOGGERS, configure_logging
from tests.support.daemon import Daemon


def test_ui_is_not_served_unless_enabled(daemon: Daemon) -> None:
    response = httpx.get(f"{daemon.base_url}/ui")
    assert response.status_code == 404
    assert response.json()["code"] == "memcastle::http::not_found"


@pytest.mark.slow
def test_enabled_ui_is_served_open_without_a_token(fresh_daemon: Daemon) -> None:
    fresh_daemon.env.update(
        {
            "MEMCASTLE_WEB_ENABLE": "true",
            "MEMCASTLE_AUTH_ENABLED": "true",
            "MEMCASTLE_AUTH_TOKEN": "a-secret-of-enough-length",
        }
    )
    fresh_daemon.start()
    page = httpx.get(f"{fresh_daemon.base_url}/ui/index.html")
    assert page.status_code == 200
    assert "MemCastle" in page.text
    assert httpx.get(f"{fresh_daemon.base_url}/api/wings").status_code == 401


def test_json_logs_are_one_object_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json")
    try:
        logging.getLogger("palace.test").info("filed %d drawers", 3)
        logging.getLogger("palace.test").debug("hidden")
    finally:
        configure_logging("info", "text")
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["level"] == "info"
    assert entry["target"] == "palace.test"
    assert entry["message"] == "filed 3 drawers"


def test_directives_set_levels_per_target() -> None:
    try:
        configure_logging("warn,memcastle=debug", "text")
        assert logging.getLogger().level == logging.WARNING
        assert logging.getLogger("palace").level == logging.DEBUG
        assert logging.getLogger("memcastle_project").level == logging.DEBUG
    finally:
        configure_logging("info", "text")
        for name in (*MEMCASTLE_LOGGERS, "memcastle"):
            logging.getLogger(name).setLevel(logging.NOTSET)
