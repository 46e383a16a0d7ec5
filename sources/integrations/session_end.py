#!/usr/bin/env python3
"""MemCastle's session-end hook: ask the daemon to mine the agent's sessions, so that a finished
session reaches the palace without anyone asking.

usage: session-end.py SOURCE [URL]

An agent runs it when a session ends (Claude Code's and Codex's SessionEnd hooks, the opencode
plugin, the pi extension); `memcastle integration install` copies it beside the agent's other
MemCastle files. It uses only the standard library, so it runs under any Python 3, and it must
never hold the agent up or fail its session: one short request, and exit 0 whatever happens.

The daemon is `MEMCASTLE_URL`, else URL, else the default address; a token, when the daemon
wants one, is `MEMCASTLE_TOKEN` (else `MEMCASTLE_AUTH_TOKEN`, the variable the CLI reads).
`MEMCASTLE_MODE` is read with the integrations' labels (full, read-only, off): a mine is a
write, so only `full` (or no mode at all) sends anything, and any other value, the CLI's
spellings included, sends nothing (fail closed).
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Mapping, Sequence

DEFAULT_URL = "http://127.0.0.1:8420"
# Codex gives a session-end hook 3 seconds at most.
TIMEOUT_SECS = 2.0
WRITING_MODES = ("", "full")
REQUESTED_BY = "integration"


def mine_request(
    source: str, url: str | None, env: Mapping[str, str]
) -> urllib.request.Request | None:
    """The request that submits the mine job, or None when the mode forbids writing."""
    if env.get("MEMCASTLE_MODE", "").strip() not in WRITING_MODES:
        return None
    base = (env.get("MEMCASTLE_URL") or url or DEFAULT_URL).rstrip("/")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    token = (env.get("MEMCASTLE_TOKEN") or env.get("MEMCASTLE_AUTH_TOKEN") or "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"type": "mine", "source": source, "requested_by": REQUESTED_BY}
    return urllib.request.Request(
        f"{base}/api/jobs", data=json.dumps(body).encode(), headers=headers, method="POST"
    )


def main(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Submit the mine; a failure is one line on stderr, and still exit 0."""
    if not argv:
        sys.stderr.write("usage: session-end.py SOURCE [URL]\n")
        return 0
    try:
        request = mine_request(argv[0], argv[1] if len(argv) > 1 else None, env)
        if request is not None:
            # The daemon is local: no proxy from the environment stands in between.
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(request, timeout=TIMEOUT_SECS) as response:
                response.read()
    except Exception as exc:
        # Whatever went wrong, the agent's session must not fail.
        sys.stderr.write(f"memcastle: the mine of {argv[0]} was not submitted: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ))
