"""A local stand-in for GitHub's REST API, as the `github` source reads it: a repository's issues
and pull requests (a pull request is an issue with a `pull_request` key) ordered by `updated_at`,
narrowed by `since`, in pages linked by `Link: rel="next"`, and an issue's comments. Every answer
carries GitHub's rate-limit headers; the tests can revoke the token (401 from then on), use up
the rate limit (403 with `x-ratelimit-remaining: 0`) or ask for a brief wait (429 with
`retry-after`). It records what it was asked, with the `Authorization` sent."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-token"
RESET_AT = 1_900_000_000
ISSUES = re.compile(r"/repos/([^/]+/[^/]+)/issues")
ISSUE = re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)")
COMMENTS = re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments")


@dataclass(frozen=True)
class Seen:
    path: str
    authorization: str | None
    accept: str | None
    api_version: str | None


@dataclass
class State:
    """What the server holds and how it misbehaves; the tests change it between calls."""

    base: str = ""
    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    page_size: int = 100
    revoked: bool = False
    rate_limited: bool = False
    waits: int = 0
    seen: list[Seen] = field(default_factory=list)
    # The tokens it honours: the fixed test token, or those a (test) OAuth provider handed out.
    tokens: Callable[[], Collection[str]] = lambda: (TOKEN,)

    def add(
        self,
        repo: str,
        number: int,
        updated_at: str,
        *,
        title: str = "",
        body: str = "",
        pull: bool = False,
        comments: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """An issue (or a pull request) of `repo`, replacing one of the same number."""
        kind = "pull" if pull else "issues"
        issue: dict[str, Any] = {
            "number": number,
            "title": title or f"issue {number}",
            "body": body,
            "state": "open",
            "user": {"login": "octocat"},
            "labels": [{"name": "bug"}],
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": updated_at,
            "closed_at": None,
            "html_url": f"https://github.com/{repo}/{kind}/{number}",
            "comments": len(comments),
            "comments_url": f"{self.base}/repos/{repo}/issues/{number}/comments",
        }
        if pull:
            issue["pull_request"] = {"url": f"{self.base}/repos/{repo}/pulls/{number}"}
        listed = [each for each in self.issues.setdefault(repo, []) if each["number"] != number]
        self.issues[repo] = [*listed, issue]
        self.comments[(repo, number)] = [
            {
                "user": {"login": "hubot"},
                "created_at": "2024-01-02T00:00:00Z",
                "body": text,
                "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{index}",
            }
            for index, text in enumerate(comments)
        ]
        return issue

    def paths(self) -> list[str]:
        return [seen.path for seen in self.seen]


class _Handler(BaseHTTPRequestHandler):
    state: State

    def do_GET(self) -> None:
        state = self.state
        state.seen.append(
            Seen(
                self.path,
                self.headers.get("Authorization"),
                self.headers.get("Accept"),
                self.headers.get("X-GitHub-Api-Version"),
            )
        )
        sent = self.headers.get("Authorization", "")
        bearer = sent.startswith("Bearer ") and sent.removeprefix("Bearer ") in state.tokens()
        if state.revoked or not bearer:
            self._answer(401, {"message": "Bad credentials"})
        elif state.rate_limited:
            self._answer(403, {"message": "API rate limit exceeded"}, remaining=0)
        elif state.waits:
            state.waits -= 1
            self._answer(429, {"message": "slow down"}, {"Retry-After": "1"})
        else:
            self._route()

    def _route(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        if match := COMMENTS.fullmatch(url.path):
            found = self.state.comments.get((match[1], int(match[2])))
            self._list(found, query)
        elif match := ISSUE.fullmatch(url.path):
            issues = self.state.issues.get(match[1], [])
            issue = next((each for each in issues if each["number"] == int(match[2])), None)
            if issue is None:
                self._answer(404, {"message": "Not Found"})
            else:
                self._answer(200, issue)
        elif match := ISSUES.fullmatch(url.path):
            self._list(self._issues(match[1], query), query)
        else:
            self._answer(404, {"message": "Not Found"})

    def _issues(self, repo: str, query: dict[str, str]) -> list[dict[str, Any]] | None:
        if repo not in self.state.issues:
            return None
        since = query.get("since", "")
        ordered = sorted(self.state.issues[repo], key=lambda issue: issue["updated_at"])
        return [issue for issue in ordered if issue["updated_at"] >= since]

    def _list(self, items: list[dict[str, Any]] | None, query: dict[str, str]) -> None:
        if items is None:
            self._answer(404, {"message": "Not Found"})
            return
        size = min(int(query.get("per_page", 30)), self.state.page_size)
        page = int(query.get("page", 1))
        headers = {}
        if page * size < len(items):
            following = "&".join(f"{k}={v}" for k, v in {**query, "page": page + 1}.items())
            path = urlsplit(self.path).path
            headers["Link"] = f'<{self.state.base}{path}?{following}>; rel="next"'
        self._answer(200, items[(page - 1) * size : page * size], headers)

    def _answer(
        self, status: int, body: Any, headers: dict[str, str] | None = None, remaining: int = 4999
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", str(remaining))
        self.send_header("X-RateLimit-Reset", str(RESET_AT))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `State.seen`."""


@contextmanager
def serving() -> Iterator[State]:
    """A server on 127.0.0.1 for the time of the block; its `State.base` is the API root."""
    state = State()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def reset_instant() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(RESET_AT))
