"""Source preferences (ADR-048; search.md section 5, configuration.md section 6, issue 22 item 4).

The policy's three layers, merged field by field and checked strictly; the level each drawer
resolves to; the re-scoring, its figures worked out by hand from the formula; the wider pool of
candidates. Then end to end through real daemons on one palace: a policy raises and lowers hits
exactly as the formula says, for the direct hits and the expanded tail on its own, and without a
policy every answer is byte for byte what search answered before preferences existed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from rest_framework.renderers import JSONRenderer

from graph.reads import GraphReads
from graph.repositories.reads import GraphReadRepository
from kernel.config import load_config
from kernel.context import RequestContext
from kernel.errors import ConfigInvalid
from kernel.store import Store
from palace.embeddings.repository import EmbeddingRepository
from palace.embeddings.service import EmbeddingService
from palace.filing import Filing
from palace.search.indexes import SearchIndexes
from palace.search.preferences import (
    Criterion,
    Preference,
    Preferences,
    SourcePolicy,
    candidate_pool,
    freshness,
    load_preferences,
)
from palace.search.query import from_body, from_options
from palace.search.repository import SearchRepository
from palace.search.service import SearchService
from tests.support.clock import Clock
from tests.support.daemon import Daemon
from tests.support.http import submit, wait_job
from tests.support.instants import rfc3339
from tests.support.palace_services import build
from tests.support.search_palace import SearchPalace

NOW = dt.datetime(2026, 1, 31, 12, 0, 0, 1, tzinfo=dt.UTC)
CTX = RequestContext.build()
INVALID = "memcastle::config::invalid"


def days_ago(days: float, now: dt.datetime = NOW) -> dt.datetime:
    return now - dt.timedelta(days=days)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def hit(
    drawer_id: str, score: float, *, origin: Mapping[str, Any] | None = None, age: float = 0.0
) -> dict[str, Any]:
    """A search hit as the service holds it before re-scoring: a lexical score, a drawer valid
    from `age` days before NOW, and a mining origin when given."""
    source: dict[str, Any] = {"kind": "file" if origin else "manual"}
    if origin is not None:
        source["origin"] = dict(origin)
    return {
        "id": drawer_id,
        "source": source,
        "valid_from": days_ago(age),
        "score": score,
        "signals": {"lexical": score},
    }


# The layers ------------------------------------------------------------------------------------


def test_without_any_file_the_policy_is_the_default(tmp_path: Path) -> None:
    policy = load_preferences(None, tmp_path / "palace")

    assert policy == Preferences("normal", {})
    assert not policy.active


def test_the_three_layers_merge_field_by_field(tmp_path: Path) -> None:
    config = write(
        tmp_path / "config.toml",
        """
[palace]
path = "/somewhere/else"

[preferences]
default = "low"

[preferences.sources.github]
level = "high"
criteria = [{path = "repo.private", equals = true, level = "low"}]

[preferences.sources.slack]
level = "low"
criteria = [{path = "channel", equals = "general", level = "high"}]

[preferences.sources.jira]
criteria = [{path = "priority", equals = 1, level = "high"}]

[palace.preferences]
default = "normal"

[palace.preferences.sources.github]
criteria = [{path = "a.b", equals = 1.5, level = "normal"}]

[palace.preferences.sources.slack]
level = "high"
""",
    )
    palace = tmp_path / "palace"
    write(
        palace / "preferences.toml",
        """
[sources.slack]
criteria = []

[sources.notion]
level = "low"
""",
    )

    policy = load_preferences(config, palace)

    assert policy == Preferences(
        "normal",
        {
            # The level of the first layer stays; the list is replaced by the second's.
            "github": SourcePolicy("high", (Criterion("a.b", 1.5, "normal"),)),
            # The second layer's level; the palace file's empty list clears the criteria.
            "slack": SourcePolicy("high", ()),
            # No layer gives a level: the global default applies.
            "jira": SourcePolicy(None, (Criterion("priority", 1, "high"),)),
            "notion": SourcePolicy("low", ()),
        },
    )
    assert policy.active


def test_each_layer_alone_is_read(tmp_path: Path) -> None:
    config = write(tmp_path / "config.toml", '[palace.preferences]\ndefault = "high"\n')
    assert load_preferences(config, tmp_path / "palace") == Preferences("high", {})

    write(tmp_path / "palace" / "preferences.toml", 'default = "low"\n')
    assert load_preferences(None, tmp_path / "palace") == Preferences("low", {})
    assert load_preferences(config, tmp_path / "palace") == Preferences("low", {})


@pytest.mark.parametrize(
    ("layer", "text", "named"),
    [
        ("config", '[preferences]\ndefault = "hihg"\n', "`preferences.default`"),
        ("config", '[preferences]\ndefault = "High"\n', "`preferences.default`"),
        ("config", "[preferences]\nweight = 2\n", "`preferences.weight`"),
        ("config", 'preferences = "high"\n', "`preferences`"),
        ("config", "[preferences]\nsources = 3\n", "`preferences.sources`"),
        ("config", "[preferences.sources]\ngithub = 3\n", "`preferences.sources.github`"),
        (
            "config",
            '[palace.preferences.sources.github]\nlevel = "top"\n',
            "`palace.preferences.sources.github.level`",
        ),
        (
            "config",
            "[preferences.sources.github]\nweight = 1\n",
            "`preferences.sources.github.weight`",
        ),
        (
            "config",
            '[preferences.sources.github]\ncriteria = {path = "a", equals = 1, level = "low"}\n',
            "`preferences.sources.github.criteria`",
        ),
        (
            "config",
            '[preferences.sources.github]\ncriteria = [{path = "a", equals = 1}]\n',
            "`preferences.sources.github.criteria[0].level`",
        ),
        (
            "config",
            '[preferences.sources.github]\ncriteria = [{path = "a", equals = 1, level = "low", '
            "note = 2}]\n",
            "`preferences.sources.github.criteria[0].note`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "a..b", equals = 1, level = "low"}]\n',
            "`sources.github.criteria[0].path`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "", equals = 1, level = "low"}]\n',
            "`sources.github.criteria[0].path`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "a", equals = [1], level = "low"}]\n',
            "`sources.github.criteria[0].equals`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "a", equals = 2026-01-01, level = "low"}]\n',
            "`sources.github.criteria[0].equals`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "a", equals = nan, level = "low"}]\n',
            "`sources.github.criteria[0].equals`",
        ),
        (
            "palace",
            '[sources.github]\ncriteria = [{path = "a", equals = 1, level = "low"}, 3]\n',
            "`sources.github.criteria[1]`",
        ),
        ("palace", '[preferences]\ndefault = "low"\n', "top level"),
        ("palace", "default = \n", "not valid TOML"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_key_and_the_file(
    tmp_path: Path, layer: str, text: str, named: str
) -> None:
    config = tmp_path / "config.toml"
    palace = tmp_path / "palace"
    path = write(config if layer == "config" else palace / "preferences.toml", text)

    with pytest.raises(ConfigInvalid) as refused:
        load_preferences(config if config.exists() else None, palace)

    assert refused.value.code == INVALID
    assert named in refused.value.message and str(path) in refused.value.message
    assert "restart" in refused.value.help or "start the daemon again" in refused.value.help


@pytest.mark.parametrize(
    ("policy", "active"),
    [
        (Preferences(), False),
        (Preferences("normal", {"github": SourcePolicy("normal")}), False),
        (
            Preferences("normal", {"github": SourcePolicy(None, (Criterion("a", 1, "normal"),))}),
            False,
        ),
        (Preferences("low"), True),
        (Preferences("normal", {"github": SourcePolicy("high")}), True),
        (Preferences("normal", {"github": SourcePolicy(None, (Criterion("a", 1, "low"),))}), True),
        # Every source keeps the high default: some drawers resolve to it, others (without an
        # origin) too, so the policy is still not the default one.
        (Preferences("high", {"github": SourcePolicy("high")}), True),
    ],
)
def test_only_a_policy_that_changes_a_level_is_active(policy: Preferences, active: bool) -> None:
    assert policy.active is active


# Levels ----------------------------------------------------------------------------------------

GITHUB = SourcePolicy(
    "low",
    (
        Criterion("repo.visibility", "private", "high"),
        Criterion("repo.owner.team", "core", "low"),
        Criterion("repo.archived", True, "low"),
        Criterion("stars", 5, "high"),
        # Declared after a criterion of as many segments that matches the same drawers.
        Criterion("repo.language", "rust", "normal"),
        Criterion("repo.topic", "rust", "high"),
    ),
)
POLICY = Preferences("normal", {"github": GITHUB, "slack": SourcePolicy("high")})


def test_a_drawer_without_an_origin_or_a_source_takes_the_default() -> None:
    policy = Preferences("low", {"github": GITHUB})

    assert policy.resolve(None) == Preference("low")
    assert policy.resolve({"document": "x"}) == Preference("low")
    assert policy.resolve({"source": 3}) == Preference("low")
    assert policy.resolve(None).signal() == {"level": "low"}


def test_a_mined_drawer_takes_its_sources_level_else_the_default() -> None:
    assert POLICY.resolve({"source": "slack"}) == Preference("high", "slack")
    assert POLICY.resolve({"source": "github"}) == Preference("low", "github")
    assert POLICY.resolve({"source": "notion"}) == Preference("normal", "notion")
    unleveled = Preferences("low", {"jira": SourcePolicy(None, (Criterion("a", 1, "high"),))})
    assert unleveled.resolve({"source": "jira", "metadata": {"a": 2}}) == Preference("low", "jira")
    assert POLICY.resolve({"source": "slack"}).signal() == {"level": "high", "source": "slack"}


def test_the_matching_criterion_with_the_most_segments_wins() -> None:
    private = {"source": "github", "metadata": {"repo": {"visibility": "private"}}}
    core = {
        "source": "github",
        "metadata": {"repo": {"visibility": "private", "owner": {"team": "core"}}},
    }
    elsewhere = {"source": "github", "metadata": {"repo": {"visibility": "public"}}}

    assert POLICY.resolve(private) == Preference("high", "github", GITHUB.criteria[0])
    assert POLICY.resolve(core) == Preference("low", "github", GITHUB.criteria[1])
    assert POLICY.resolve(elsewhere) == Preference("low", "github")
    assert POLICY.resolve(core).signal() == {
        "level": "low",
        "source": "github",
        "criterion": {"path": "repo.owner.team", "equals": "core", "level": "low"},
    }


def test_between_criteria_of_as_many_segments_the_first_declared_wins() -> None:
    both = {"source": "github", "metadata": {"repo": {"language": "rust", "topic": "rust"}}}

    assert POLICY.resolve(both) == Preference("normal", "github", GITHUB.criteria[4])


@pytest.mark.parametrize(
    ("metadata", "level"),
    [
        ({"repo": {"archived": True}}, "low"),
        # JSON equality: true is not 1, 1 is not "1", but 5 is 5.0.
        ({"repo": {"archived": 1}}, "low-by-source"),
        ({"stars": 5.0}, "high"),
        ({"stars": True}, "low-by-source"),
        ({"stars": "5"}, "low-by-source"),
        # A path that stops short, or runs through something that is not an object.
        ({"repo": "archived"}, "low-by-source"),
        ({"repo": {}}, "low-by-source"),
        (None, "low-by-source"),
        ("repo.archived", "low-by-source"),
    ],
)
def test_criteria_compare_json_scalars(metadata: object, level: str) -> None:
    resolved = POLICY.resolve({"source": "github", "metadata": metadata})

    if level == "low-by-source":
        assert resolved == Preference("low", "github")
    else:
        assert resolved.level == level and resolved.criterion is not None


# The figures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "pool"), [(1, 20), (5, 20), (6, 24), (10, 40), (49, 196), (50, 200), (200, 200)]
)
def test_the_candidate_pool_is_four_times_the_limit_within_20_and_200(
    limit: int, pool: int
) -> None:
    assert candidate_pool(limit) == pool


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 0.12), (30, 0.06), (90, 0.03), (15, 0.08), (-10, 0.12), (3, 0.12 / 1.1)],
)
def test_freshness_is_012_over_one_plus_age_in_months(age_days: float, expected: float) -> None:
    assert freshness(days_ago(age_days), NOW) == pytest.approx(expected, abs=1e-12)


def test_a_page_is_rescored_by_the_formula() -> None:
    policy = Preferences("normal", {"wiki": SourcePolicy("low"), "github": GITHUB})
    page = [
        # A month old by its document's date (its validity is more recent): 0.06 fresh.
        hit(
            "a",
            1.0,
            origin={"source": "wiki", "occurred_at": rfc3339(days_ago(30))},
            age=1,
        ),
        # No origin: the default level, fresh from its validity today.
        hit("b", 0.96, age=0),
        # A private repository: high, by its document's date of today.
        hit(
            "c",
            0.9,
            origin={
                "source": "github",
                "metadata": {"repo": {"visibility": "private"}},
                "occurred_at": NOW,
            },
            age=400,
        ),
    ]

    rescored = policy.rerank(page, NOW)

    # high 1.0, low 0.9: range = max(0.1, 0.5 * 1.0) = 0.5.
    # a: (1.0 - 0.9) / 0.5 + 0.06 - 0.08 = 0.18
    # b: (0.96 - 0.9) / 0.5 + 0.12 + 0 = 0.24
    # c: 0 + 0.12 + 0.08 = 0.20
    assert [each["id"] for each in rescored] == ["b", "c", "a"]
    assert [each["score"] for each in rescored] == pytest.approx([0.24, 0.20, 0.18], abs=1e-12)
    assert [each["signals"] for each in rescored] == [
        {"lexical": 0.96, "preference": {"level": "normal"}},
        {
            "lexical": 0.9,
            "preference": {
                "level": "high",
                "source": "github",
                "criterion": {"path": "repo.visibility", "equals": "private", "level": "high"},
            },
        },
        {"lexical": 1.0, "preference": {"level": "low", "source": "wiki"}},
    ]
    # The hit is otherwise the stored drawer as it was, in the same key order.
    assert list(rescored[0]) == list(page[1]) and rescored[0]["source"] == page[1]["source"]


def test_the_range_has_a_floor_so_alike_scores_are_not_stretched() -> None:
    policy = Preferences("high")

    # Two hits alike: range = 0.5 * 4 = 2, each normalized to 0.
    alike = policy.rerank([hit("x", 4.0, age=30), hit("y", 4.0, age=90)], NOW)
    assert [(each["id"], each["score"]) for each in alike] == [
        ("x", pytest.approx(0.06 + 0.08, abs=1e-12)),
        ("y", pytest.approx(0.03 + 0.08, abs=1e-12)),
    ]
    # Close scores: range = max(0.02, 0.5 * 1.02) = 0.51.
    close = policy.rerank([hit("x", 1.02), hit("y", 1.0)], NOW)
    assert [each["score"] for each in close] == pytest.approx([0.02 / 0.51 + 0.2, 0.2], abs=1e-12)
    # Tiny scores: range = 0.5 * 0.01 = 0.005.
    tiny = policy.rerank([hit("x", 0.003), hit("y", 0.001)], NOW)
    assert [each["score"] for each in tiny] == pytest.approx([0.4 + 0.2, 0.2], abs=1e-12)


def test_equal_scores_order_by_drawer_id() -> None:
    policy = Preferences("low")
    page = [hit(drawer_id, 1.0, age=10) for drawer_id in ("c", "a", "b")]

    assert [each["id"] for each in policy.rerank(page, NOW)] == ["a", "b", "c"]


def test_age_is_from_the_documents_date_else_the_validity() -> None:
    policy = Preferences("low")
    dated = {"source": "x", "occurred_at": rfc3339(days_ago(90))}
    undated = {"source": "x", "occurred_at": "last tuesday"}
    page = [
        hit("dated", 1.0, origin=dated, age=0),
        hit("undated", 1.0, origin=undated, age=30),
        hit("unmined", 1.0, age=15),
    ]

    scores = {each["id"]: each["score"] for each in policy.rerank(page, NOW)}

    assert scores == {
        "dated": pytest.approx(0.03 - 0.08, abs=1e-12),
        "undated": pytest.approx(0.06 - 0.08, abs=1e-12),
        "unmined": pytest.approx(0.08 - 0.08, abs=1e-12),
    }


# The wider pool, on a real store and real indexes ----------------------------------------------


def drawer_id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


@pytest.fixture
def alike_palace(tmp_path: Path) -> Iterator[SearchPalace]:
    """30 drawers of one wing scoring alike for `ledger`, so without a policy they rank by id:
    d1 .. d30. d2 comes from `chat`, d15 and d25 from `wiki`; the rest were filed by hand."""
    palace = SearchPalace(tmp_path, Clock(NOW))
    sources = {2: "chat", 15: "wiki", 25: "wiki"}
    for n in range(1, 31):
        source: dict[str, Any] = {"kind": "manual"}
        if n in sources:
            source = {"kind": "file", "origin": {"source": sources[n], "document": f"doc{n}"}}
        palace.filing.file(
            CTX,
            "books",
            "ledgers",
            Filing(
                content=f"ledger note n{n:02d}",
                source=source,
                valid_from=days_ago(30),
                drawer_id=drawer_id(n),
            ),
        )
    yield palace
    palace.close()


def preferring(palace: SearchPalace, policy: Preferences) -> SearchService:
    return SearchService(
        palace.hierarchy,
        palace.indexes,
        palace.embeddings,
        palace.graph,
        clock=palace.clock,
        preferences=policy,
    )


def test_a_preferred_drawer_climbs_from_the_wider_pool_into_the_page(
    alike_palace: SearchPalace,
) -> None:
    policy = Preferences("normal", {"wiki": SourcePolicy("high"), "chat": SourcePolicy("low")})
    options = {"q": "ledger", "ranking": "lexical", "limit": "5"}

    plain = alike_palace.search(**options)["results"]
    preferred = preferring(alike_palace, policy).search(CTX, from_options(options))["results"]

    assert [each["id"] for each in plain] == [drawer_id(n) for n in (1, 2, 3, 4, 5)]
    # Pool 20: d15 (rank 15) climbs to the top, d2 falls out of the page, d25 (rank 25) is
    # beyond the pool. Every raw score is alike, so each score is freshness (a month: 0.06)
    # plus the level's adjustment.
    assert [each["id"] for each in preferred] == [drawer_id(n) for n in (15, 1, 3, 4, 5)]
    assert [each["score"] for each in preferred] == pytest.approx(
        [0.14, 0.06, 0.06, 0.06, 0.06], abs=1e-9
    )
    assert preferred[0]["signals"] == {
        "lexical": plain[0]["signals"]["lexical"],
        "preference": {"level": "high", "source": "wiki"},
    }
    assert preferred[1]["signals"]["preference"] == {"level": "normal"}

    wide = preferring(alike_palace, policy).search(CTX, from_options({**options, "limit": "50"}))
    ids = [each["id"] for each in wide["results"]]
    assert ids[:2] == [drawer_id(15), drawer_id(25)] and ids[-1] == drawer_id(2)
    assert len(ids) == 30


def test_a_policy_that_changes_no_level_leaves_search_as_it_was(
    alike_palace: SearchPalace,
) -> None:
    renderer = JSONRenderer()
    policy = Preferences("normal", {"wiki": SourcePolicy("normal")})
    for options in (
        {"q": "ledger", "ranking": "lexical", "limit": "5"},
        {"q": "ledger note", "ranking": "lexical", "limit": "50", "include_historical": "true"},
    ):
        plain = alike_palace.search(**options)
        kept = preferring(alike_palace, policy).search(CTX, from_options(options))
        assert renderer.render(kept) == renderer.render(plain)


# End to end ------------------------------------------------------------------------------------

BASE_CONFIG = """
[embeddings]
default_profile = ""

[embeddings.profiles.standin]
provider = "external"
model = "stand-in"
dimensions = 8
"""
POLICY_CONFIG = """
[preferences]
default = "normal"

[preferences.sources.github]
level = "low"
criteria = [
  {path = "repo.visibility", equals = "private", level = "high"},
  {path = "repo.owner.team", equals = "core", level = "low"},
]

[preferences.sources.slack]
level = "high"

[palace.preferences.sources.slack]
level = "low"
"""
PALACE_POLICY = """
[sources.directory]
level = "high"
"""
# Keys naming a level, not changing any: the default policy.
NORMAL_CONFIG = """
[preferences]
default = "normal"

[preferences.sources.github]
level = "normal"
"""
WING = "prefs"
ADJUSTMENT = {"low": -0.08, "normal": 0.0, "high": 0.08}


def fixed(n: int) -> str:
    """The id of memory `n`: ids before any the daemon derives, so that drawers scoring alike
    rank the memories first, in their order."""
    return f"0000000{n}-0000-4000-8000-000000000000"


@dataclass(frozen=True)
class Memory:
    """A drawer the test files before the daemon starts, with its mining origin (the document's
    date `occurred_days` before the test began) and its validity (`valid_days` before it)."""

    n: int
    content: str
    origin: dict[str, Any] | None
    occurred_days: float | None
    valid_days: float
    # What the policy of `POLICY_CONFIG` + `PALACE_POLICY` resolves it to, by hand.
    preference: dict[str, Any]


def mined(source: str, **metadata: Any) -> dict[str, Any]:
    """An origin as mining keeps it, with the metadata snapshot of its document."""
    return {
        "source_id": f"{source}-1",
        "source": source,
        "document": f"{source}/doc",
        "chunk": 0,
        "revision": "r1",
        "metadata": metadata,
    }


# Every content has four words and one `ledger`, but slack's, which has it twice: the raw lexical
# scores are one high and the rest alike.
MEMORIES = (
    Memory(
        1,
        "ledger ledger reconciled today",
        mined("slack", channel="finance"),
        10,
        5,
        {"level": "low", "source": "slack"},
    ),
    Memory(
        2,
        "ledger schema for payments",
        mined("github", repo={"visibility": "public"}),
        60,
        50,
        {"level": "low", "source": "github"},
    ),
    Memory(3, "ledger migration team notes", None, None, 20, {"level": "normal"}),
    Memory(
        4,
        "the ledger service reads",
        mined("github", repo={"visibility": "private"}),
        3,
        2,
        {
            "level": "high",
            "source": "github",
            "criterion": {"path": "repo.visibility", "equals": "private", "level": "high"},
        },
    ),
    Memory(
        5,
        "ledger core ownership rules",
        mined("github", repo={"visibility": "private", "owner": {"team": "core"}}),
        1,
        1,
        {
            "level": "low",
            "source": "github",
            "criterion": {"path": "repo.owner.team", "equals": "core", "level": "low"},
        },
    ),
)
# The directory mined by the daemon: `directory` is high by the palace's own file.
MINED_FILE = "ledger export documentation here\n"
MINED_PREFERENCE = {"level": "high", "source": "directory"}
# Entities each drawer mentions (the mined one: E1), for the expansion of `reconciled`.
MENTIONS = {
    1: ("Ledger Service", "Payments"),
    2: ("Ledger Service", "Payments"),
    4: ("Ledger Service",),
    5: ("Payments",),
}


@dataclass
class Prepared:
    root: Path
    config: Path
    base_env: dict[str, str]
    mined_id: str
    baseline: dict[str, bytes]


def requests() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """The searches compared with and without a policy: (method, route, params or body)."""
    vector = [0.6, 0.2, -0.1, 0.4, 0.0, 0.3, -0.2, 0.1]
    lexical = {"q": "ledger", "wing": WING, "ranking": "lexical"}
    return {
        "lexical": ("GET", "/api/search", {**lexical, "limit": 10}),
        "lexical page of 2": ("GET", "/api/search", {**lexical, "limit": 2}),
        "recall": ("GET", "/api/recall", {**lexical, "limit": 10}),
        "expanded": (
            "GET",
            "/api/search",
            {"q": "reconciled", "wing": WING, "ranking": "lexical", "expand": "true"},
        ),
        "semantic": (
            "POST",
            "/api/search",
            {
                "text": "ledger",
                "ranking": "semantic",
                "profile": "standin",
                "query_embedding": vector,
                "filter": {"wing": WING},
            },
        ),
        "hybrid": (
            "POST",
            "/api/search",
            {
                "text": "ledger",
                "ranking": "hybrid",
                "profile": "standin",
                "expand": True,
                "query_embedding": vector,
                "filter": {"wing": WING},
            },
        ),
    }


def ask(client: httpx.Client, method: str, route: str, options: dict[str, Any]) -> httpx.Response:
    if method == "GET":
        response = client.get(route, params=options)
    else:
        response = client.post(route, json=options)
    assert response.status_code == 200, response.text
    return response


def answers(daemon: Daemon) -> dict[str, bytes]:
    with daemon.client() as client:
        return {name: ask(client, *request).content for name, request in requests().items()}


def file_memories(config: Path, env: dict[str, str], started: dt.datetime) -> None:
    """File `MEMORIES` in the palace before any daemon opens it, with their origins (a mined
    drawer's origin is its miner's: no request can give one)."""
    store = Store.from_config(load_config(env={**env, "MEMCASTLE_CONFIG": str(config)}))
    store.open()
    try:
        store.migrate()
        filing = build(store).filing
        for memory in MEMORIES:
            source: dict[str, Any] = {"kind": "manual"}
            if memory.origin is not None and memory.occurred_days is not None:
                occurred_at = rfc3339(days_ago(memory.occurred_days, started))
                origin = {**memory.origin, "occurred_at": occurred_at}
                source = {"kind": "file", "uri": f"/src/{memory.n}", "origin": origin}
            filing.file(
                CTX,
                WING,
                "docs",
                Filing(
                    content=memory.content,
                    source=source,
                    valid_from=days_ago(memory.valid_days, started),
                    drawer_id=fixed(memory.n),
                ),
            )
        for n in range(5):
            filing.file(CTX, "filler", "misc", Filing(content=f"nothing to see number {n}"))
    finally:
        store.close()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    """The palace every end-to-end test shares, and the answers of a daemon without a policy.

    A daemon mines a directory into it, attaches a vector to each drawer and links them to
    entities; then it answers every request of `requests()` (the baseline) and stops."""
    root = tmp_path_factory.mktemp("preferences")
    config = write(root / "config.toml", BASE_CONFIG)
    daemon = Daemon(root, env={"MEMCASTLE_CONFIG": str(config)})
    started = dt.datetime.now(dt.UTC)
    file_memories(config, daemon.env, started)
    write(root / "mined" / "ledger.md", MINED_FILE)
    daemon.start()
    try:
        with daemon.client() as client:
            job = submit(client, {"type": "mine", "path": str(root / "mined"), "wing": WING})
            wait_job(client, job["id"])
            found = ask(client, "GET", "/api/search", {"q": "export", "wing": WING})
            mined_id = found.json()["results"][0]["id"]
            ids = {**{memory.n: fixed(memory.n) for memory in MEMORIES}, 6: mined_id}
            for n, drawer in ids.items():
                vector = [math.cos(n), math.sin(n), n / 10, 0.1, 0.2, 0.3, 0.1, 0.0]
                attached = client.put(
                    f"/api/drawers/{drawer}/embedding",
                    json={"profile": "standin", "embedding": vector},
                )
                assert attached.status_code == 200, attached.text
            for n, names in {**MENTIONS, 6: ("Ledger Service",)}.items():
                for name in names:
                    linked = client.post(
                        f"/api/drawers/{ids[n]}/mentions", json={"name": name, "kind": "tool"}
                    )
                    assert linked.status_code in (200, 201), linked.text
        baseline = answers(daemon)
    finally:
        daemon.stop()
    return Prepared(root, config, daemon.env, mined_id, baseline)


def daemon_with(prepared: Prepared, config_text: str, palace_text: str | None) -> Daemon:
    """A daemon on the shared palace with this configuration and palace preferences file."""
    config = write(prepared.root / "config.toml", BASE_CONFIG + config_text)
    palace_file = prepared.root / "palace" / "preferences.toml"
    if palace_text is None:
        palace_file.unlink(missing_ok=True)
    else:
        write(palace_file, palace_text)
    return Daemon(prepared.root, env={"MEMCASTLE_CONFIG": str(config)}).start()


@contextmanager
def search_without_preferences(prepared: Prepared) -> Iterator[SearchService]:
    """Search on the shared palace, in this process, built as the composition root built it
    before preferences existed."""
    config = load_config(env={**prepared.base_env, "MEMCASTLE_CONFIG": str(prepared.config)})
    store = Store.from_config(config)
    store.open()
    embeddings = EmbeddingService(EmbeddingRepository(store), config.embeddings)
    indexes = SearchIndexes(
        SearchRepository(store),
        config.palace_path / "search",
        {name: profile.dimensions for name, profile in embeddings.profiles.items()},
    )
    try:
        indexes.open()
        yield SearchService(
            build(store).hierarchy, indexes, embeddings, GraphReads(GraphReadRepository(store))
        )
    finally:
        indexes.close()
        store.close()


def test_without_a_policy_answers_are_byte_identical(prepared: Prepared) -> None:
    write(prepared.config, BASE_CONFIG)
    renderer = JSONRenderer()
    with search_without_preferences(prepared) as service:
        for name, (method, route, options) in requests().items():
            recall = route == "/api/recall"
            query = (
                from_options({k: str(v) for k, v in options.items()}, recall=recall)
                if method == "GET"
                else from_body(options, recall=recall)
            )
            answer = renderer.render(service.search(CTX, query, recall=recall))
            assert answer == prepared.baseline[name], name

    # A policy that names sources but changes no level is no policy either.
    daemon = daemon_with(prepared, NORMAL_CONFIG, '[sources.slack]\nlevel = "normal"\n')
    try:
        assert answers(daemon) == prepared.baseline
    finally:
        daemon.stop()
        (prepared.root / "palace" / "preferences.toml").unlink()
    assert b'"preference"' not in b"".join(prepared.baseline.values())


def expected_scores(hits: list[dict[str, Any]], leg: str, now: dt.datetime) -> dict[str, float]:
    """Each hit's score as search.md section 5 computes it, from its raw score (the leg's
    signal) and its level in `signals.preference`, checked separately."""
    raws = [each["signals"][leg] for each in hits]
    high, low = max(raws), min(raws)
    spread = max(high - low, 0.5 * max(abs(high), abs(low), 0.01))
    scores = {}
    for each, raw in zip(hits, raws, strict=True):
        origin = each["source"].get("origin") or {}
        dated = origin.get("occurred_at") or each["valid_from"]
        age = (now - dt.datetime.fromisoformat(dated.replace("Z", "+00:00"))).total_seconds()
        fresh = 0.12 / (1 + age / 86_400 / 30)
        adjustment = ADJUSTMENT[each["signals"]["preference"]["level"]]
        scores[each["id"]] = (raw - low) / spread + fresh + adjustment
    return scores


def timed(client: httpx.Client, name: str) -> tuple[dict[str, Any], dt.datetime]:
    """The answer to a request of `requests()`, and the instant it was asked (the middle of
    the call: freshness moves by less than 1e-7 a second)."""
    before = dt.datetime.now(dt.UTC)
    answer = ask(client, *requests()[name]).json()
    return answer, before + (dt.datetime.now(dt.UTC) - before) / 2


def test_a_policy_raises_and_lowers_hits_as_computed(prepared: Prepared) -> None:
    preferences = {fixed(memory.n): memory.preference for memory in MEMORIES}
    preferences[prepared.mined_id] = MINED_PREFERENCE
    plain = [hit["id"] for hit in json.loads(prepared.baseline["lexical"])["results"]]

    daemon = daemon_with(prepared, POLICY_CONFIG, PALACE_POLICY)
    try:
        with daemon.client() as client:
            lexical, asked = timed(client, "lexical")
            page, _ = timed(client, "lexical page of 2")
            expanded, expanded_at = timed(client, "expanded")
            hybrid, _ = timed(client, "hybrid")
    finally:
        daemon.stop()
        (prepared.root / "palace" / "preferences.toml").unlink()

    hits = lexical["results"]
    assert {hit["id"]: hit["signals"]["preference"] for hit in hits} == preferences
    expected = expected_scores(hits, "lexical", asked)
    assert {hit["id"]: hit["score"] for hit in hits} == pytest.approx(expected, abs=1e-6)
    ranked = [hit["id"] for hit in hits]
    assert ranked == sorted(expected, key=lambda drawer: (-expected[drawer], drawer))
    # Slack's doubled `ledger` still leads, lowered; the public repository falls from second to
    # last; the private one and the mined directory, high, climb over the drawer filed by hand.
    assert plain[:2] == [fixed(1), fixed(2)] and plain.index(fixed(4)) > plain.index(fixed(3))
    assert ranked[0] == fixed(1) and ranked[-1] == fixed(2)
    assert ranked.index(fixed(4)) < ranked.index(fixed(3))
    assert ranked.index(prepared.mined_id) < ranked.index(fixed(3))
    # The page of two was ranked from the wider pool: the mined drawer, outside the plain page,
    # is in it.
    assert [hit["id"] for hit in page["results"]] == ranked[:2]
    assert ranked[1] == prepared.mined_id and prepared.mined_id not in plain[:2]

    # The expanded tail is a page of its own: its raw scores are the graph signals.
    direct, *tail = expanded["results"]
    assert direct["id"] == fixed(1) and "via" not in direct
    assert direct["score"] == pytest.approx(
        expected_scores([direct], "lexical", expanded_at)[fixed(1)], abs=1e-6
    )
    assert {hit["id"] for hit in tail} == {fixed(2), fixed(4), fixed(5), prepared.mined_id}
    assert all(set(hit["signals"]) == {"graph", "preference"} and hit["via"] for hit in tail)
    tail_expected = expected_scores(tail, "graph", expanded_at)
    assert {hit["id"]: hit["score"] for hit in tail} == pytest.approx(tail_expected, abs=1e-6)
    # Public shares both entities (graph 2): 1 + 0.04 - 0.08 = 0.96 keeps it first of the tail.
    assert tail[0]["id"] == fixed(2)
    assert tail[0]["score"] == pytest.approx(0.96, abs=1e-3)

    # Hybrid keeps each leg's own score in the signals, beside the preference.
    for hit in hybrid["results"]:
        assert "preference" in hit["signals"] and set(hit["signals"]) - {"preference"}
    scores = [hit["score"] for hit in hybrid["results"] if "via" not in hit]
    assert scores == sorted(scores, reverse=True)


def test_a_bad_policy_stops_the_daemon_naming_the_key_and_the_file(
    fresh_daemon: Daemon,
) -> None:
    path = write(fresh_daemon.palace / "preferences.toml", '[sources.github]\nlevel = "hihg"\n')

    log = fresh_daemon.start_refused()

    assert INVALID in log and "`sources.github.level`" in log and str(path) in log
