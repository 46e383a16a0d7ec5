"""The bundled `github` source as the host runs it: the component the set-up built, called with a
network grant and an access token, against a local stand-in for GitHub's REST API. It files one
document per issue or pull request with its comments, follows pages, keeps a watermark per
repository, sends the token on every request, and fails as a run should on a revoked token, a
used-up rate limit and a repository that is not there."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
import wasmtime.component as wc

from kernel.config import default_assets_dir
from kernel.errors import MemCastleError
from sources.building import BUNDLED_SOURCES, NETWORKED_WORLD, WORLD, world_of
from sources.components import Component, ComponentRuntime, Grant, record
from tests.support.github_server import TOKEN, State, reset_instant, serving

WASM = default_assets_dir() / "sources" / "github" / "source.wasm"
GRANT = Grant(memory_mib=256, timeout_secs=60, network=True, access_token=lambda: TOKEN)
REPO = "octo/tide"


class Refused(Exception):
    """A `source-error` the component answered, as `tag: message`."""


@pytest.fixture(scope="module")
def component(tmp_path_factory: pytest.TempPathFactory) -> Component:
    runtime = ComponentRuntime(tmp_path_factory.mktemp("compiled"))
    return runtime.load(WASM, hashlib.sha256(WASM.read_bytes()).hexdigest())


@pytest.fixture
def github() -> Iterator[State]:
    with serving() as state:
        yield state


def call(component: Component, export: str, *args: Any, grant: Grant = GRANT) -> Any:
    answer = component.call(grant, export, *args)
    if isinstance(answer, wc.Variant):
        raise Refused(f"{answer.tag}: {answer.payload}")
    return answer


def identify(component: Component, github: State, repos: str = REPO, **options: str) -> Any:
    given = {"repos": repos, "api_url": github.base, **options}
    return call(component, "identify", None, sorted(given.items()))


def discover(
    component: Component, ref: Any, cursor: str = "null", limit: int = 50
) -> tuple[list[Any], bool]:
    found = call(component, "discover", ref, cursor, limit)
    return found.candidates, found.exhausted


def ids(candidates: list[Any]) -> list[str]:
    return [getattr(candidate, "external-id") for candidate in candidates]


def cursor_after(candidates: list[Any]) -> str:
    return str(getattr(candidates[-1], "cursor-after"))


def mined(component: Component, ref: Any, candidate: Any) -> Any:
    raw = call(component, "read", ref, candidate)
    return call(component, "normalize", raw, grant=Grant(memory_mib=256, timeout_secs=60))


def test_the_bundled_github_source_is_built_for_the_networked_world() -> None:
    assert world_of(BUNDLED_SOURCES / "github") == NETWORKED_WORLD
    assert world_of(BUNDLED_SOURCES / "claude") == WORLD


def test_the_place_is_the_api_root_and_repos_are_spelt_one_way(
    component: Component, github: State
) -> None:
    ref = identify(component, github, repos=" Octo/Tide, octo/harbour,octo/tide ")
    assert (ref.source, ref.account, ref.locator) == ("github", None, github.base)
    assert dict(ref.options) == {"repos": "octo/harbour,octo/tide"}
    default = call(component, "identify", None, [("repos", REPO)])
    assert default.locator == "https://api.github.com"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ([("api_url", "https://api.github.com")], "`repos` is required"),
        ([("repos", "octo")], "not owner/name"),
        ([("repos", REPO), ("branch", "main")], "'branch' is not one"),
        ([("repos", REPO), ("api_url", "http://github.example")], "https://"),
        ([("repos", REPO), ("since", "last week")], "`since`"),
    ],
)
def test_options_that_name_no_place_are_refused(
    component: Component, options: list[tuple[str, str]], said: str
) -> None:
    with pytest.raises(Refused, match="invalid-input") as refused:
        call(component, "identify", None, options)
    assert said in str(refused.value)


def test_each_issue_and_pull_request_is_one_document_with_its_comments(
    component: Component, github: State
) -> None:
    github.add(
        REPO,
        1,
        "2024-03-01T00:00:00Z",
        title="The tide is late",
        body="Since Monday.",
        comments=("Seen it too.", "Fixed by the moon."),
    )
    github.add(REPO, 2, "2024-03-02T00:00:00Z", title="Move the tide", pull=True)
    ref = identify(component, github)
    candidates, exhausted = discover(component, ref)
    assert ids(candidates) == [f"{REPO}#1", f"{REPO}#2"] and exhausted

    issue = mined(component, ref, candidates[0])
    room = REPO.replace("/", ".")
    assert (issue.title, issue.room, issue.name) == ("#1 The tide is late", room, "issue-1")
    assert (issue.kind, issue.uri) == ("other", f"https://github.com/{REPO}/issues/1")
    assert issue.tags == ["github", "issue"]
    texts = [segment.text for segment in issue.segments]
    assert texts[0].startswith(f"Issue #1 in {REPO}: The tide is late\nopen, opened by octocat")
    assert texts[0].endswith("Since Monday.") and "labels: bug" in texts[0]
    assert texts[1:] == [
        "hubot commented at 2024-01-02T00:00:00Z:\nSeen it too.",
        "hubot commented at 2024-01-02T00:00:00Z:\nFixed by the moon.",
    ]
    pull = mined(component, ref, candidates[1])
    assert (pull.name, pull.tags) == ("pull-2", ["github", "pull"])
    assert pull.uri == f"https://github.com/{REPO}/pull/2"

    assert f"/repos/{REPO}/issues/1/comments?per_page=100" in github.paths()
    assert {seen.authorization for seen in github.seen} == {f"Bearer {TOKEN}"}
    assert {seen.accept for seen in github.seen} == {"application/vnd.github+json"}
    assert {seen.api_version for seen in github.seen} == {"2022-11-28"}


def test_the_revision_changes_with_the_content_not_with_the_update_time(
    component: Component, github: State
) -> None:
    github.add(REPO, 1, "2024-03-01T00:00:00Z", body="first")
    ref = identify(component, github)
    candidates, _ = discover(component, ref)
    first = call(component, "read", ref, candidates[0])
    github.add(REPO, 1, "2024-03-05T00:00:00Z", body="first")
    assert call(component, "read", ref, candidates[0]).revision == first.revision
    github.add(REPO, 1, "2024-03-06T00:00:00Z", body="second")
    assert call(component, "read", ref, candidates[0]).revision != first.revision
    assert json.loads(first.metadata)["updated_at"] == "2024-03-01T00:00:00Z"
    assert getattr(first, "occurred-at") == "2024-01-01T00:00:00Z"


def test_pages_are_followed_through_the_link_header(component: Component, github: State) -> None:
    github.page_size = 2
    for number in range(1, 6):
        github.add(REPO, number, f"2024-03-0{number}T00:00:00Z")
    candidates, exhausted = discover(component, identify(component, github))
    assert ids(candidates) == [f"{REPO}#{number}" for number in range(1, 6)] and exhausted
    assert sum("/issues?" in path for path in github.paths()) == 3


def test_a_second_discover_after_the_cursor_returns_only_what_changed(
    component: Component, github: State
) -> None:
    for number in (1, 2, 3):
        github.add(REPO, number, f"2024-03-0{number}T00:00:00Z")
    ref = identify(component, github)
    candidates, _ = discover(component, ref)
    cursor = cursor_after(candidates)
    assert json.loads(cursor) == {"repos": {REPO: ["2024-03-03T00:00:00Z", 3]}}
    assert discover(component, ref, cursor) == ([], True)

    github.add(REPO, 1, "2024-03-09T00:00:00Z", body="edited")
    github.add(REPO, 4, "2024-03-08T00:00:00Z")
    again, exhausted = discover(component, ref, cursor)
    assert ids(again) == [f"{REPO}#4", f"{REPO}#1"] and exhausted
    assert "since=2024-03-03T00:00:00Z" in github.paths()[-1]


def test_a_limit_splits_the_work_without_losing_issues_updated_in_the_same_second(
    component: Component, github: State
) -> None:
    github.page_size = 2
    for number in (5, 4, 3, 2, 1):
        github.add(REPO, number, "2024-03-01T00:00:00Z")
    github.add(REPO, 6, "2024-03-02T00:00:00Z")
    ref = identify(component, github)
    found: list[str] = []
    cursor, exhausted = "null", False
    while not exhausted:
        candidates, exhausted = discover(component, ref, cursor, limit=2)
        assert len(candidates) <= 2
        found += ids(candidates)
        cursor = cursor_after(candidates) if candidates else cursor
    assert found == [f"{REPO}#{number}" for number in range(1, 7)]


def test_each_repository_keeps_its_own_watermark(component: Component, github: State) -> None:
    github.add(REPO, 1, "2024-03-01T00:00:00Z")
    github.add("octo/harbour", 7, "2024-02-01T00:00:00Z")
    first, _ = discover(component, identify(component, github))
    both = identify(component, github, repos=f"{REPO},octo/harbour")
    candidates, exhausted = discover(component, both, cursor_after(first))
    assert ids(candidates) == ["octo/harbour#7"] and exhausted
    assert json.loads(cursor_after(candidates))["repos"].keys() == {REPO, "octo/harbour"}


def test_since_leaves_out_what_was_last_updated_before_it(
    component: Component, github: State
) -> None:
    github.add(REPO, 1, "2024-01-15T00:00:00Z")
    github.add(REPO, 2, "2024-02-15T00:00:00Z")
    candidates, _ = discover(component, identify(component, github, since="2024-02"))
    assert ids(candidates) == [f"{REPO}#2"]
    assert "since=2024-02-01T00:00:00Z" in github.paths()[-1]


def test_a_revoked_token_fails_the_run_saying_to_sign_in_again(
    component: Component, github: State
) -> None:
    github.add(REPO, 1, "2024-03-01T00:00:00Z")
    ref = identify(component, github)
    candidates, _ = discover(component, ref)
    github.revoked = True
    with pytest.raises(Refused, match=r"failed: .*401.*memcastle source auth github"):
        discover(component, ref)
    with pytest.raises(Refused, match=r"failed: .*revoked"):
        call(component, "read", ref, candidates[0])


def test_without_a_token_the_run_fails_before_any_request(
    component: Component, github: State
) -> None:
    def signed_out() -> str:
        raise MemCastleError("the github source is not signed in")

    grant = Grant(memory_mib=256, timeout_secs=60, network=True, access_token=signed_out)
    ref = identify(component, github)
    with pytest.raises(Refused, match=r"not signed in.*memcastle source auth github"):
        call(component, "discover", ref, "null", 10, grant=grant)
    assert github.seen == []


def test_a_used_up_rate_limit_fails_naming_when_it_resets(
    component: Component, github: State
) -> None:
    github.rate_limited = True
    with pytest.raises(Refused, match=f"failed: .*rate limit.*{reset_instant()}"):
        discover(component, identify(component, github))


def test_a_brief_retry_after_is_waited_out(component: Component, github: State) -> None:
    github.add(REPO, 1, "2024-03-01T00:00:00Z")
    github.waits = 1
    candidates, _ = discover(component, identify(component, github))
    assert ids(candidates) == [f"{REPO}#1"]
    assert len(github.seen) == 2


def test_an_unknown_repository_is_invalid_input_naming_it(
    component: Component, github: State
) -> None:
    with pytest.raises(Refused, match="invalid-input: the repository octo/nowhere is not on"):
        discover(component, identify(component, github, repos="octo/nowhere"))


def test_an_issue_gone_since_discovery_is_skipped(component: Component, github: State) -> None:
    github.add(REPO, 1, "2024-03-01T00:00:00Z")
    ref = identify(component, github)
    candidates, _ = discover(component, ref)
    github.issues[REPO] = []
    assert call(component, "read", ref, candidates[0]) is None


def test_a_candidate_the_source_did_not_make_is_refused(
    component: Component, github: State
) -> None:
    ref = identify(component, github)
    for handle in ("../etc", json.dumps({"repo": "octo/elsewhere", "number": 1})):
        forged = record({"external-id": "x", "cursor-after": "null", "handle": handle})
        with pytest.raises(Refused, match="cursor-invalid"):
            call(component, "read", ref, forged)
    assert github.seen == []


def test_a_cursor_of_another_source_is_refused(component: Component, github: State) -> None:
    with pytest.raises(Refused, match="cursor-invalid"):
        discover(component, identify(component, github), '{"mtime_ns": 1, "key": "a"}')
