"""Logging set-up from `logging.level` (a level or directives like `memcastle=debug,warn`) and
`logging.format` (`text`, or `json`: one object per line)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

TRACE = 5
LEVELS = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 10,
}


# The packages of this project, which `memcastle=<level>` addresses together.
MEMCASTLE_LOGGERS = (
    "kernel",
    "memcastle_project",
    "palace",
    "jobs",
    "sources",
    "graph",
    "mcp_bridge",
)


def fields(**values: object) -> dict[str, dict[str, object]]:
    """Structured fields for a log record: `logger.info("job queued", extra=fields(...))`.

    Fields name things (ids, kinds, counts); never content, paths, queries or secrets."""
    return {"fields": values}


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        values = getattr(record, "fields", None)
        if not values:
            return text
        return text + " " + " ".join(f"{key}={value}" for key, value in values.items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname.lower(),
            "target": record.name,
            "message": record.getMessage(),
        }
        values = getattr(record, "fields", None)
        if values:
            entry["fields"] = values
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level_filter: str, log_format: str) -> None:
    """`info` sets the root level; `memcastle=debug` sets the loggers of every package of ours
    (they log under their module names: `kernel...`, `palace...`, `memcastle_project...`)."""
    logging.addLevelName(TRACE, "TRACE")
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)-5s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # Celery and kombu narrate every message at info; the job log lines say what matters. The
    # MCP SDK logs every session id it issues, and a session id is a handle on that session.
    for chatty in ("celery", "kombu", "mcp"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    for directive in level_filter.split(","):
        target, _, level = directive.strip().rpartition("=")
        value = LEVELS[level.strip().lower()]
        if not target:
            root.setLevel(value)
            continue
        names = [target, *MEMCASTLE_LOGGERS] if target == "memcastle" else [target]
        for name in names:
            logging.getLogger(name).setLevel(value)
