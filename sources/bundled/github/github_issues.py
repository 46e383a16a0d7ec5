"""The `github` source in plain Python: the issues and pull requests of the repositories a run
names, one document each with its comments, read through GitHub's REST API (or a GitHub
Enterprise Server's, at `api_url`).

No `wit_world` here: requests go through the `fetch` and the token comes from the `token` a
`GitHub` is made with, which `app.py` wires to `wasi:http` and the host's `access-token`, so
everything else runs in CPython as it runs in the component.

The place is the API's root (the locator); `repos` names what a run reads in it, and the cursor
keeps a watermark per repository, `(updated_at, number)` of the last issue filed, so naming
another repository starts that one from its beginning without losing the others' progress.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memcastle_transcripts import (
    Candidate,
    Canonical,
    CursorInvalid,
    InvalidInput,
    Page,
    RawDoc,
    Ref,
    SourceFailed,
    parse_since,
    rfc3339,
)

NAME = "github"
DEFAULT_API = "https://api.github.com"
OPTIONS = ("repos", "since", "api_url")
USER_AGENT = "memcastle-github-source/0.1.0"
PER_PAGE = 100
# A wait GitHub asks for (`retry-after`) up to this long is waited out, once; a longer one fails
# the run naming it, since the call's own time limit would end it anyway.
BRIEF_WAIT_SECS = 5
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
SIGN_IN = "sign in again with `memcastle source auth github`"

# A watermark: the last filed issue's `updated_at` and number (the number breaks ties).
Mark = tuple[dt.datetime, int]


@dataclass(frozen=True)
class Response:
    status: int
    # Names in lower case.
    headers: Mapping[str, str]
    body: bytes


Fetch = Callable[[str, list[tuple[str, str]]], Response]


class NotFound(Exception):
    """A 404: what it means depends on what was asked for."""


# Identity and options --------------------------------------------------------------------------


def api_root(locator: str | None, option: str | None) -> str:
    """The API's root in one spelling (no trailing `/`): the locator or `api_url`, which must
    agree when both are given, else GitHub's own. The token is sent to it, so it must be https,
    or http to this machine only."""
    given = {_root(value) for value in (locator, option) if value}
    if len(given) > 1:
        raise InvalidInput(
            f"the locator {locator!r} and the option `api_url` {option!r} name different servers"
        )
    return given.pop() if given else DEFAULT_API


def _root(value: str) -> str:
    parts = urlsplit(value.strip())
    host = parts.hostname or ""
    allowed = parts.scheme == "https" or (parts.scheme == "http" and host in LOCAL_HOSTS)
    if not host or not allowed or parts.query or parts.fragment or "@" in parts.netloc:
        raise InvalidInput(
            f"the API root {value!r} must be an https:// address (http:// only to this machine), "
            "without a user, query or fragment"
        )
    return f"{parts.scheme}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def repositories(value: str | None) -> list[str]:
    """The `repos` option as `owner/name` entries, in lower case (GitHub's names are not case
    sensitive), sorted, without repeats."""
    entries = [entry.strip() for entry in (value or "").split(",") if entry.strip()]
    if not entries:
        raise InvalidInput(
            "the option `repos` is required: the repositories to read, as owner/name separated "
            "by commas (`octocat/hello-world,octocat/spoon-knife`)"
        )
    for entry in entries:
        if REPO.fullmatch(entry) is None:
            raise InvalidInput(f"the option `repos` has {entry!r}, which is not owner/name")
    return sorted({entry.lower() for entry in entries})


def options_of(options: list[tuple[str, str]]) -> dict[str, str]:
    """The options in their one spelling; `api_url` is left to the locator it becomes."""
    given = dict(options)
    for key in given:
        if key not in OPTIONS:
            raise InvalidInput(
                f"the option {key!r} is not one the github source takes "
                f"(it accepts: {', '.join(OPTIONS)})"
            )
    normalized = {"repos": ",".join(repositories(given.get("repos")))}
    if "since" in given:
        normalized["since"] = rfc3339(parse_since(given["since"]))
    return normalized


# Cursors ---------------------------------------------------------------------------------------


def load_cursor(cursor: str) -> dict[str, Mark]:
    """`{"repos": {"owner/name": [updated_at, number]}}`; `null` is the start of every one."""
    try:
        value = json.loads(cursor)
        if value is None:
            return {}
        return {repo: _mark(mark[0], mark[1]) for repo, mark in value["repos"].items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise CursorInvalid(f"the cursor {cursor} is not a cursor of the github source") from None


def dump_cursor(marks: Mapping[str, Mark]) -> str:
    repos = {repo: [rfc3339(when), number] for repo, (when, number) in sorted(marks.items())}
    return json.dumps({"repos": repos})


def _mark(updated_at: Any, number: Any) -> Mark:
    if not isinstance(updated_at, str) or not isinstance(number, int):
        raise TypeError("not a watermark")
    return _instant(updated_at), number


def _instant(text: str) -> dt.datetime:
    instant = dt.datetime.fromisoformat(text)
    if instant.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return instant.astimezone(dt.UTC)


def mark_of(issue: Mapping[str, Any]) -> Mark:
    try:
        return _mark(issue["updated_at"], issue["number"])
    except (KeyError, TypeError, ValueError):
        raise SourceFailed("GitHub answered an issue without `updated_at` or `number`") from None


# The API ---------------------------------------------------------------------------------------


class Session:
    """The requests of one call: the token is asked for once, every request carries it, and
    only to the API's root."""

    def __init__(self, fetch: Fetch, token: str, root: str) -> None:
        self._fetch = fetch
        self._root = root
        self._headers = [
            ("authorization", f"Bearer {token}"),
            ("accept", "application/vnd.github+json"),
            ("x-github-api-version", "2022-11-28"),
            ("user-agent", USER_AGENT),
        ]

    def get(self, url: str) -> Response:
        """GET `url` (which must be under the root), once more after a brief `retry-after`."""
        if not url.startswith(self._root + "/"):
            raise SourceFailed(f"GitHub pointed at {url}, which is not under {self._root}")
        response = self._fetch(url, self._headers)
        wait = brief_wait(response)
        if wait is not None:
            time.sleep(wait)
            response = self._fetch(url, self._headers)
        check(response, url)
        return response

    def json(self, url: str) -> Any:
        try:
            return json.loads(self.get(url).body)
        except ValueError:
            raise SourceFailed(f"GitHub's answer to {url} is not JSON") from None

    def pages(self, url: str) -> Iterator[list[Any]]:
        """Each page of a list, following `Link: rel="next"`."""
        next_url: str | None = url
        while next_url is not None:
            response = self.get(next_url)
            try:
                page = json.loads(response.body)
            except ValueError:
                page = None
            if not isinstance(page, list):
                raise SourceFailed(f"GitHub's answer to {next_url} is not a list")
            yield page
            link = NEXT_LINK.search(response.headers.get("link", ""))
            next_url = link.group(1) if link else None


def brief_wait(response: Response) -> int | None:
    """The seconds GitHub asks to wait before trying again, when few enough to wait here."""
    if response.status not in (403, 429) or response.headers.get("x-ratelimit-remaining") == "0":
        return None
    after = response.headers.get("retry-after", "")
    return int(after) if after.isdigit() and int(after) <= BRIEF_WAIT_SECS else None


def check(response: Response, url: str) -> None:
    """Nothing for a success; otherwise what the status means for a run."""
    status, headers = response.status, response.headers
    if 200 <= status < 300:
        return
    if status == 401:
        raise SourceFailed(f"GitHub refused the token (401): it was revoked or expired; {SIGN_IN}")
    if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0":
        raise SourceFailed(
            f"GitHub's rate limit is used up until {_reset(headers)}; mine again then"
        )
    if status in (403, 429) and "retry-after" in headers:
        raise SourceFailed(
            f"GitHub asked to wait {headers['retry-after']} s before the next request "
            "(a secondary rate limit); mine again later"
        )
    if status in (404, 410):
        raise NotFound(url)
    raise SourceFailed(f"GitHub answered {status} to {url}: {_message(response.body)}")


def _reset(headers: Mapping[str, str]) -> str:
    reset = headers.get("x-ratelimit-reset", "")
    if not reset.isdigit():
        return "it resets (within the hour; GitHub did not say when)"
    return rfc3339(dt.datetime.fromtimestamp(int(reset), dt.UTC))


def _message(body: bytes) -> str:
    try:
        said = json.loads(body).get("message")
    except (ValueError, AttributeError):
        said = None
    return said if isinstance(said, str) else body[:200].decode("utf-8", "replace")


# The source ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitHub:
    fetch: Fetch
    token: Callable[[], str]
    name: str = NAME
    default_room: str = "issues"

    def identify(self, locator: str | None, options: list[tuple[str, str]]) -> Ref:
        normalized = options_of(options)
        return Ref(NAME, None, api_root(locator, dict(options).get("api_url")), normalized)

    def discover(self, ref: Ref, cursor: str, limit: int) -> Page:
        """Each repository in turn, its issues by `(updated_at, number)` after its watermark;
        a candidate's cursor is every watermark once it is filed."""
        marks = load_cursor(cursor)
        session = self._session(ref)
        candidates: list[Candidate] = []
        for repo in repositories(ref.options.get("repos")):
            left = limit - len(candidates)
            if left <= 0:
                return Page(candidates, exhausted=False)
            issues, finished = updated_after(session, ref, repo, marks.get(repo), left)
            for issue in issues:
                marks[repo] = mark_of(issue)
                handle = json.dumps({"repo": repo, "number": issue["number"]})
                external_id = f"{repo}#{issue['number']}"
                candidates.append(Candidate(external_id, dump_cursor(marks), handle))
            if not finished:
                return Page(candidates, exhausted=False)
        return Page(candidates, exhausted=True)

    def read(self, ref: Ref, candidate: Candidate) -> RawDoc | None:
        """The issue and its comments as they are now; none when it is gone."""
        repo, number = _handle(candidate.handle)
        if repo not in repositories(ref.options.get("repos")):
            raise CursorInvalid(f"the candidate names {repo}, which this run does not read")
        session = self._session(ref)
        try:
            issue = session.json(f"{ref.locator}/repos/{repo}/issues/{number}")
            comments = _comments(session, issue)
        except NotFound:
            return None
        document = describe(repo, issue, comments)
        body = json.dumps(document, ensure_ascii=False, sort_keys=True, indent=1)
        return RawDoc(
            external_id=candidate.external_id,
            revision=hashlib.sha256(body.encode()).hexdigest(),
            body=body,
            metadata={
                "repository": repo,
                "number": number,
                "kind": document["kind"],
                "state": document["state"],
                "url": document["url"],
                "updated_at": issue.get("updated_at"),
            },
            occurred_at=document["created_at"],
        )

    def normalize(self, raw: RawDoc) -> Canonical:
        try:
            document = json.loads(raw.body)
            repo, number, kind = document["repository"], document["number"], document["kind"]
            segments = [_opening(document)] + [_comment(each) for each in document["comments"]]
        except (ValueError, TypeError, KeyError):
            raise InvalidInput("the raw document holds no github issue") from None
        return Canonical(
            title=f"#{number} {document['title']}",
            room=room_of(repo),
            name=f"{kind}-{number}",
            uri=document["url"],
            tags=["github", kind],
            segments=segments,
            kind="other",
        )

    def _session(self, ref: Ref) -> Session:
        return Session(self.fetch, self.token(), ref.locator)


def room_of(repo: str) -> str:
    """The room of a repository: `owner.name`, since a room's name holds no `/`. An owner's
    name has no `.` (GitHub allows letters, digits and hyphens), so no two repositories share a
    room, as they could with `-`."""
    owner, _, name = repo.partition("/")
    return f"{owner}.{name}"


def updated_after(
    session: Session, ref: Ref, repo: str, after: Mark | None, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """The repository's issues after `after` (and not before `since`), in watermark order, at
    most `limit`, and whether none is left past them. GitHub orders by `updated_at` alone, so
    pages are read until the next issue is strictly later than the last one taken: one updated
    in the same second could otherwise come on the next page and fall behind the watermark."""
    bounds = [bound for bound in (after[0] if after else None, _since(ref)) if bound is not None]
    since = max(bounds, default=None)
    query = f"state=all&sort=updated&direction=asc&per_page={PER_PAGE}"
    if since is not None:
        query += f"&since={rfc3339(since)}"
    found: list[dict[str, Any]] = []
    try:
        for page in session.pages(f"{ref.locator}/repos/{repo}/issues?{query}"):
            found += [
                issue
                for issue in page
                if (after is None or mark_of(issue) > after)
                and (since is None or mark_of(issue)[0] >= since)
            ]
            found.sort(key=mark_of)
            if len(found) > limit and mark_of(found[limit])[0] > mark_of(found[limit - 1])[0]:
                return found[:limit], False
    except NotFound:
        raise InvalidInput(
            f"the repository {repo} is not on {ref.locator}, or this sign-in cannot read it"
        ) from None
    return found[:limit], len(found) <= limit


def _since(ref: Ref) -> dt.datetime | None:
    since = ref.options.get("since")
    return parse_since(since) if since else None


def _handle(handle: str) -> tuple[str, int]:
    try:
        value = json.loads(handle)
        repo, number = value["repo"], value["number"]
    except (ValueError, TypeError, KeyError):
        repo, number = None, None
    if not isinstance(repo, str) or REPO.fullmatch(repo) is None or not isinstance(number, int):
        raise CursorInvalid(f"the candidate {handle} is not one the github source discovered")
    return repo, number


def _comments(session: Session, issue: Mapping[str, Any]) -> list[Any]:
    if not issue.get("comments"):
        return []
    url = issue.get("comments_url")
    if not isinstance(url, str):
        raise SourceFailed("GitHub answered an issue with comments but no `comments_url`")
    return [comment for page in session.pages(f"{url}?per_page={PER_PAGE}") for comment in page]


def describe(repo: str, issue: Mapping[str, Any], comments: list[Any]) -> dict[str, Any]:
    """What is filed of an issue: its text and who said what when. `updated_at` is left out,
    so the revision changes with the content, not with a reaction or a subscription."""
    return {
        "repository": repo,
        "number": issue.get("number"),
        "kind": "pull" if issue.get("pull_request") else "issue",
        "title": issue.get("title") or "",
        "state": issue.get("state"),
        "author": _login(issue),
        "labels": sorted(_label(label) for label in issue.get("labels") or []),
        "created_at": issue.get("created_at"),
        "closed_at": issue.get("closed_at"),
        "url": issue.get("html_url"),
        "body": issue.get("body") or "",
        "comments": [
            {
                "author": _login(comment),
                "created_at": comment.get("created_at"),
                "body": comment.get("body") or "",
                "url": comment.get("html_url"),
            }
            for comment in comments
        ],
    }


def _login(item: Mapping[str, Any]) -> str:
    user = item.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else "ghost"


def _label(label: Any) -> str:
    return str(label.get("name") if isinstance(label, dict) else label)


def _opening(document: Mapping[str, Any]) -> str:
    kind = "Pull request" if document["kind"] == "pull" else "Issue"
    labels = f", labels: {', '.join(document['labels'])}" if document["labels"] else ""
    header = (
        f"{kind} #{document['number']} in {document['repository']}: {document['title']}\n"
        f"{document['state']}, opened by {document['author']} at {document['created_at']}{labels}"
    )
    return f"{header}\n\n{document['body']}".rstrip()


def _comment(comment: Mapping[str, Any]) -> str:
    return f"{comment['author']} commented at {comment['created_at']}:\n{comment['body']}".rstrip()
