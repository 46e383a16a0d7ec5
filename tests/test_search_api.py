"""Search and recall over real HTTP against a real daemon (api.md "Searching", issue 5 items
1-4): every option of GET and POST, the JSON `temporal` forms, the errors with their status and
code, auto without an embedding default, results that are the stored drawer verbatim, ties by
id, read-your-writes, and validity time.

One daemon serves the module, configured with an `external` stand-in profile of 8 dimensions and
no default profile (nothing is embedded by the daemon). Each test files its drawers in a wing of
its own and scopes its searches to it, so tests stay independent.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.http import Json, assert_error
from tests.support.instants import instant, rfc3339

STANDIN = "standin"
INVALID = "memcastle::input::invalid"
UNAVAILABLE = "memcastle::search::semantic_unavailable"
FORBIDDEN = "memcastle::mode::forbidden"
ANSWER_KEYS = {"query", "ranking", "profile", "temporal", "results"}
CONFIG = """
[embeddings]
default_profile = ""

[embeddings.profiles.standin]
provider = "external"
model = "stand-in"
dimensions = 8
"""
MICRO = dt.timedelta(microseconds=1)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("search-daemon")
    config = root / "memcastle.toml"
    config.write_text(CONFIG)
    running = Daemon(root, env={"MEMCASTLE_CONFIG": str(config)}).start()
    yield running
    running.stop()


@pytest.fixture
def client(served: Daemon) -> Iterator[httpx.Client]:
    with served.client() as opened:
        yield opened


def unit(*components: float) -> list[float]:
    vector = [float(c) for c in components]
    return vector + [0.0] * (8 - len(vector))


def file(
    client: httpx.Client,
    wing: str,
    room: str,
    content: str,
    *,
    vector: list[float] | None = None,
    **fields: Any,
) -> Json:
    response = client.post(
        f"/api/wings/{wing}/rooms/{room}/drawers", json={"content": content, **fields}
    )
    assert response.status_code in (200, 201), response.text
    drawer = response.json()
    if vector is not None:
        attached = client.put(
            f"/api/drawers/{drawer['id']}/embedding",
            json={"profile": STANDIN, "embedding": vector},
        )
        assert attached.status_code == 200, attached.text
    return drawer


def get(client: httpx.Client, route: str = "/api/search", **params: Any) -> Json:
    response = client.get(route, params=params)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == ANSWER_KEYS
    return answer


def post(client: httpx.Client, body: Json, route: str = "/api/search") -> Json:
    response = client.post(route, json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == ANSWER_KEYS
    return answer


def ids(answer: Json) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def refused(response: httpx.Response, status: int, code: str) -> str:
    """The error's message, after checking the status, the code and the body's shape."""
    return assert_error(response, status, code, explained=False)["error"]


def vector_body(text: str, vector: list[float], ranking: str, **fields: Any) -> Json:
    return {
        "text": text,
        "ranking": ranking,
        "profile": STANDIN,
        "query_embedding": vector,
        **fields,
    }


# The answer -------------------------------------------------------------------------------------


def test_a_plain_q_searches_lexically_and_echoes_the_question(
    client: httpx.Client, wing_name: str
) -> None:
    drawer = file(client, wing_name, "style", "Always run the formatter before committing.")
    answer = get(client, q="formatter", wing=wing_name)
    assert answer["query"] == "formatter"
    assert answer["ranking"] == "lexical"
    assert answer["profile"] is None
    assert answer["temporal"] == "current"
    assert ids(answer) == [drawer["id"]]
    assert get(client, query="formatter", wing=wing_name)["results"] == answer["results"]


def test_auto_without_a_default_profile_answers_lexically(
    client: httpx.Client, wing_name: str
) -> None:
    drawer = file(client, wing_name, "style", "tabs versus spaces", vector=unit(1, 0))
    for answer in (
        get(client, q="tabs", wing=wing_name, ranking="auto"),
        post(client, {"text": "tabs", "filter": {"wing": wing_name}}),
        # A profile that only takes callers' vectors cannot embed the text either.
        get(client, q="tabs", wing=wing_name, profile=STANDIN),
    ):
        assert answer["ranking"] == "lexical"
        assert ids(answer) == [drawer["id"]]
        assert set(answer["results"][0]["signals"]) == {"lexical"}


def test_auto_with_a_vector_is_hybrid(client: httpx.Client, wing_name: str) -> None:
    drawer = file(client, wing_name, "style", "tabs versus spaces", vector=unit(1, 0))
    answer = post(
        client,
        {
            "text": "tabs",
            "filter": {"wing": wing_name},
            "profile": STANDIN,
            "query_embedding": unit(1, 0),
        },
    )
    assert answer["ranking"] == "hybrid"
    assert answer["profile"] == STANDIN
    assert ids(answer) == [drawer["id"]]
    hit = answer["results"][0]
    # Alone in both pools: min-max 1 lexically and all of the best cosine semantically, so
    # whatever the legs' shares, the whole of both.
    assert hit["score"] == pytest.approx(1.0, abs=1e-6)
    assert set(hit["signals"]) == {"lexical", "semantic"}
    assert hit["signals"]["semantic"] == pytest.approx(1.0, abs=1e-6)


def test_a_hit_is_the_stored_drawer_verbatim_plus_score_and_signals(
    client: httpx.Client, wing_name: str
) -> None:
    drawer = file(
        client,
        wing_name,
        "style",
        "  Verbatim:\n\tkeep   the spacing, CASE and punctuation!  ",
        vector=unit(0.6, 0.8),
        tags=["style", "format"],
        name="spacing",
        source={"kind": "note", "uri": "file:///notes/a.md", "agent": "a1"},
        valid_from="2025-03-04T05:06:07.123456Z",
    )
    stored = client.get(f"/api/drawers/{drawer['id']}").json()
    for answer in (
        get(client, q="verbatim", wing=wing_name),
        post(client, vector_body("verbatim", unit(1, 0), "semantic", filter={"wing": wing_name})),
        post(client, vector_body("verbatim", unit(1, 0), "hybrid", filter={"wing": wing_name})),
    ):
        (hit,) = answer["results"]
        assert {k: v for k, v in hit.items() if k not in ("score", "signals")} == stored
        assert isinstance(hit["score"], float)
        assert set(hit) - set(stored) == {"score", "signals"}
        assert "via" not in hit


def test_a_hit_never_carries_a_vector(client: httpx.Client, wing_name: str) -> None:
    file(client, wing_name, "style", "vector carrier", vector=unit(0.1, 0.2, 0.3, 0.4))
    answer = post(
        client, vector_body("vector carrier", unit(1), "hybrid", filter={"wing": wing_name})
    )
    (hit,) = answer["results"]
    assert not {"embedding", "embeddings", "vector", "vectors"} & set(hit)

    def has_vector(value: Any) -> bool:
        if isinstance(value, list):
            return len(value) == 8 and all(isinstance(v, float) for v in value)
        if isinstance(value, dict):
            return any(has_vector(v) for v in value.values())
        return False

    assert not has_vector(hit)


def test_equal_scores_rank_by_id(client: httpx.Client, wing_name: str) -> None:
    token = f"tie{uuid.uuid4().hex[:8]}"
    filed = [file(client, wing_name, "ties", f"{token} word{n:02d}") for n in range(14)]
    ordered = sorted(drawer["id"] for drawer in filed)
    full = get(client, q=token, wing=wing_name, limit=50)
    assert ids(full) == ordered
    assert len({hit["score"] for hit in full["results"]}) == 1
    assert ids(get(client, q=token, wing=wing_name, limit=4)) == ordered[:4]
    assert ids(get(client, q=token, wing=wing_name, limit=4)) == ordered[:4], "the same every time"


# Options ---------------------------------------------------------------------------------------


def test_limit_defaults_to_ten_zero_means_ten_and_caps_at_two_hundred(
    client: httpx.Client, wing_name: str
) -> None:
    token = f"many{uuid.uuid4().hex[:8]}"
    for n in range(205):
        file(client, wing_name, f"r{n % 3}", f"{token} item{n}")
    assert len(get(client, q=token, wing=wing_name)["results"]) == 10
    assert len(get(client, q=token, wing=wing_name, limit=0)["results"]) == 10
    assert len(get(client, q=token, wing=wing_name, limit=3)["results"]) == 3
    assert len(get(client, q=token, wing=wing_name, limit=500)["results"]) == 200
    assert (
        len(post(client, {"text": token, "limit": 500, "filter": {"wing": wing_name}})["results"])
        == 200
    )
    refused(client.get("/api/search", params={"q": token, "limit": -1}), 400, INVALID)


def test_wing_and_room_scope_the_search(client: httpx.Client, wing_name: str) -> None:
    other = f"{wing_name}-other"
    token = f"scope{uuid.uuid4().hex[:8]}"
    here = file(client, wing_name, "db", f"{token} here")
    there = file(client, wing_name, "ops", f"{token} there")
    elsewhere = file(client, other, "db", f"{token} elsewhere")
    assert sorted(ids(get(client, q=token, wing=wing_name))) == sorted([here["id"], there["id"]])
    assert ids(get(client, q=token, wing=wing_name, room="db")) == [here["id"]]
    assert ids(post(client, {"text": token, "filter": {"wing": wing_name, "room": "ops"}})) == [
        there["id"]
    ]
    everywhere = ids(get(client, q=token))
    assert sorted(everywhere) == sorted([here["id"], there["id"], elsewhere["id"]])


def test_tags_are_all_required_as_a_comma_list_a_repeat_or_a_json_list(
    client: httpx.Client, wing_name: str
) -> None:
    token = f"tags{uuid.uuid4().hex[:8]}"
    both = file(client, wing_name, "db", f"{token} both", tags=["alpha", "beta"])
    alpha = file(client, wing_name, "db", f"{token} alpha", tags=["alpha"])
    file(client, wing_name, "db", f"{token} none")
    assert sorted(ids(get(client, q=token, wing=wing_name, tags="alpha"))) == sorted(
        [both["id"], alpha["id"]]
    )
    assert ids(get(client, q=token, wing=wing_name, tags="alpha,beta")) == [both["id"]]
    repeated = client.get(
        "/api/search",
        params=[("q", token), ("wing", wing_name), ("tags", "alpha"), ("tags", "beta")],
    )
    assert repeated.status_code == 200, repeated.text
    assert ids(repeated.json()) == [both["id"]]
    nested = post(client, {"text": token, "filter": {"wing": wing_name, "tags": ["beta", "alpha"]}})
    assert ids(nested) == [both["id"]]
    assert ids(get(client, q=token, wing=wing_name, tags="gamma")) == []


def test_source_kind_filters(client: httpx.Client, wing_name: str) -> None:
    token = f"kind{uuid.uuid4().hex[:8]}"
    note = file(client, wing_name, "db", f"{token} a note", source={"kind": "note"})
    manual = file(client, wing_name, "db", f"{token} by hand")
    assert ids(get(client, q=token, wing=wing_name, source_kind="note")) == [note["id"]]
    assert ids(
        post(client, {"text": token, "filter": {"wing": wing_name, "source_kind": "manual"}})
    ) == [manual["id"]]
    assert ids(get(client, q=token, wing=wing_name, source_kind="transcript")) == []


def test_expand_is_accepted_and_never_changes_the_direct_hits(
    client: httpx.Client, wing_name: str
) -> None:
    drawer = file(client, wing_name, "db", "expansion comes with the graph issue")
    plain = get(client, q="expansion", wing=wing_name)
    for value in ("true", "false"):
        expanded = get(client, q="expansion", wing=wing_name, expand=value)
        assert expanded["results"][: len(plain["results"])] == plain["results"]
    assert (
        ids(post(client, {"text": "expansion", "expand": True, "filter": {"wing": wing_name}}))[0]
        == drawer["id"]
    )
    refused(client.get("/api/search", params={"q": "x", "expand": "maybe"}), 400, INVALID)


def test_the_lexical_leg_needs_every_word_then_any(client: httpx.Client, wing_name: str) -> None:
    token = f"words{uuid.uuid4().hex[:8]}"
    both = file(client, wing_name, "db", f"{token} postgres replication")
    one = file(client, wing_name, "db", f"{token} postgres backups")
    assert ids(get(client, q=f"{token} replication", wing=wing_name)) == [both["id"]]
    # No drawer holds both words: any of them, the one holding more first.
    anyone = get(client, q=f"replication backups {token}x", wing=wing_name)
    assert sorted(ids(anyone)) == sorted([both["id"], one["id"]])
    # Stemmed, case-insensitive, punctuation ignored.
    assert ids(get(client, q="REPLICATED!", wing=wing_name)) == [both["id"]]


def test_semantic_ranks_by_cosine_and_ignores_drawers_without_a_vector(
    client: httpx.Client, wing_name: str
) -> None:
    near = file(client, wing_name, "db", "near", vector=unit(0.9, 0.1))
    far = file(client, wing_name, "db", "far", vector=unit(0, 1))
    file(client, wing_name, "db", "no vector at all")
    answer = post(
        client, vector_body("anything", unit(1, 0), "semantic", filter={"wing": wing_name})
    )
    assert answer["ranking"] == "semantic"
    assert answer["profile"] == STANDIN
    assert ids(answer) == [near["id"], far["id"]]
    scores = [hit["score"] for hit in answer["results"]]
    assert scores == [pytest.approx(0.9 / (0.82**0.5), abs=1e-5), pytest.approx(0.0, abs=1e-6)]
    assert [set(hit["signals"]) for hit in answer["results"]] == [{"semantic"}] * 2


def test_hybrid_fuses_normalised_scores(client: httpx.Client, wing_name: str) -> None:
    """A lexical leg's second-best guess does not outrank the semantic leg's second hit: each
    leg counts by how far a drawer stands above the others, not by rank alone."""
    token = f"fuse{uuid.uuid4().hex[:8]}"
    # Lexical: a (the word twice) then b; semantic: b, c, then a far behind.
    a = file(client, wing_name, "db", f"{token} {token} alpha", vector=unit(0, 0, 1))
    b = file(client, wing_name, "db", f"{token} beta gamma delta epsilon", vector=unit(1, 0))
    c = file(client, wing_name, "db", "no words in common", vector=unit(0.8, 0.6))
    answer = post(client, vector_body(token, unit(1, 0), "hybrid", filter={"wing": wing_name}))
    assert ids(answer) == [b["id"], c["id"], a["id"]]
    signals = {hit["id"]: hit["signals"] for hit in answer["results"]}
    assert set(signals[a["id"]]) == set(signals[b["id"]]) == {"lexical", "semantic"}
    assert signals[c["id"]] == {"semantic": pytest.approx(0.8, abs=1e-5)}
    assert signals[a["id"]]["lexical"] > signals[b["id"]]["lexical"] > 0


# Time ------------------------------------------------------------------------------------------


@pytest.fixture
def history(client: httpx.Client, wing_name: str) -> tuple[Json, Json]:
    """A belief filed valid from 2025-01-01 and superseded now by its replacement."""
    old = file(
        client,
        wing_name,
        "db",
        "the database we use is postgres",
        vector=unit(1, 0),
        valid_from="2025-01-01",
    )
    answer = client.post(
        f"/api/drawers/{old['id']}/supersede", json={"content": "the database we use is surrealdb"}
    )
    assert answer.status_code == 200, answer.text
    closed, replacement = answer.json()["superseded"], answer.json()["replacement"]
    attached = client.put(
        f"/api/drawers/{replacement['id']}/embedding",
        json={"profile": STANDIN, "embedding": unit(0.8, 0.6)},
    )
    assert attached.status_code == 200, attached.text
    assert closed["valid_to"] == replacement["valid_from"]
    return closed, replacement


def test_a_superseded_drawer_is_found_as_of_before_and_not_after(
    client: httpx.Client, wing_name: str, history: tuple[Json, Json]
) -> None:
    old, new = history
    switch = instant(old["valid_to"], require_z=False)
    assert ids(get(client, q="database", wing=wing_name)) == [new["id"]]
    cases = [
        ("2025-01-01", [old["id"]]),
        ("2024-12-31", []),
        (rfc3339(switch - MICRO), [old["id"]]),
        (rfc3339(switch), [new["id"]]),
    ]
    for moment, expected in cases:
        assert ids(get(client, q="database", wing=wing_name, as_of=moment)) == expected, moment
        body = {"text": "database", "filter": {"wing": wing_name, "temporal": {"as_of": moment}}}
        assert ids(post(client, body)) == expected, moment
        for ranking in ("semantic", "hybrid"):
            nested = vector_body(
                "database",
                unit(1, 0),
                ranking,
                filter={"wing": wing_name, "temporal": {"as_of": moment}},
            )
            assert ids(post(client, nested)) == expected, (ranking, moment)
    answer = get(client, q="database", wing=wing_name, as_of="2025-06-01")
    assert answer["temporal"] == {"as_of": "2025-06-01T00:00:00Z"}


def test_between_windows_are_half_open(
    client: httpx.Client, wing_name: str, history: tuple[Json, Json]
) -> None:
    old, new = history
    switch = instant(old["valid_to"], require_z=False)
    later = rfc3339(switch + dt.timedelta(days=1))
    cases = [
        ("2025-01-01", "2025-02-01", [old["id"]]),
        ("2024-01-01", "2025-01-01", []),  # old opened exactly at until
        (rfc3339(switch), later, [new["id"]]),  # old closed exactly at from
        ("2025-01-01", rfc3339(switch), [old["id"]]),  # new opened exactly at until
        (rfc3339(switch - MICRO), rfc3339(switch + MICRO), sorted([old["id"], new["id"]])),
    ]
    for start, end, expected in cases:
        flat = get(client, q="database", wing=wing_name, **{"from": start, "until": end})
        assert sorted(ids(flat)) == expected, (start, end)
        body = {
            "text": "database",
            "filter": {"wing": wing_name, "temporal": {"between": {"from": start, "until": end}}},
        }
        assert sorted(ids(post(client, body))) == expected, (start, end)
        vectors = vector_body("database", unit(1, 0), "hybrid", filter=body["filter"])
        assert sorted(ids(post(client, vectors))) == expected, (start, end)


def test_include_historical_and_temporal_all_find_every_version(
    client: httpx.Client, wing_name: str, history: tuple[Json, Json]
) -> None:
    old, new = history
    both = sorted([old["id"], new["id"]])
    assert sorted(ids(get(client, q="database", wing=wing_name, include_historical="true"))) == both
    answer = post(client, {"text": "database", "filter": {"wing": wing_name, "temporal": "all"}})
    assert sorted(ids(answer)) == both
    assert answer["temporal"] == "all"
    assert ids(
        post(client, {"text": "database", "filter": {"wing": wing_name, "temporal": "current"}})
    ) == [new["id"]]


def test_recall_takes_the_same_options_without_room(
    client: httpx.Client, wing_name: str, history: tuple[Json, Json]
) -> None:
    old, new = history
    assert ids(get(client, "/api/recall", q="database", wing=wing_name)) == [new["id"]]
    assert ids(get(client, "/api/recall", q="database", wing=wing_name, as_of="2025-02-01")) == [
        old["id"]
    ]
    answer = post(
        client,
        {"text": "database", "filter": {"wing": wing_name, "temporal": "all"}},
        route="/api/recall",
    )
    assert sorted(ids(answer)) == sorted([old["id"], new["id"]])
    recalled = post(
        client,
        vector_body("database", unit(1, 0), "semantic", filter={"wing": wing_name}),
        route="/api/recall",
    )
    assert ids(recalled) == [new["id"]]
    message = refused(
        client.get("/api/recall", params={"q": "database", "wing": wing_name, "room": "db"}),
        400,
        INVALID,
    )
    assert "`room`" in message
    message = refused(
        client.post("/api/recall", json={"text": "database", "filter": {"room": "db"}}),
        400,
        INVALID,
    )
    assert "room" in message


# Read-your-writes ------------------------------------------------------------------------------


def test_every_write_is_visible_to_the_very_next_search(
    client: httpx.Client, wing_name: str
) -> None:
    token = f"ryw{uuid.uuid4().hex[:8]}"
    for round_ in range(5):
        drawer = file(client, wing_name, "db", f"{token} round{round_}")
        assert ids(get(client, q=f"{token} round{round_}", wing=wing_name)) == [drawer["id"]]
        attached = client.put(
            f"/api/drawers/{drawer['id']}/embedding",
            json={"profile": STANDIN, "embedding": unit(1, round_ + 1)},
        )
        assert attached.status_code == 200
        nearest = post(
            client, vector_body(token, unit(1, round_ + 1), "semantic", filter={"wing": wing_name})
        )
        assert ids(nearest)[0] == drawer["id"]
        replaced = client.post(
            f"/api/drawers/{drawer['id']}/supersede", json={"content": f"{token} replaced{round_}"}
        )
        assert replaced.status_code == 200
        assert ids(get(client, q=f"round{round_}", wing=wing_name)) == []
        replacement = replaced.json()["replacement"]
        assert ids(get(client, q=f"replaced{round_}", wing=wing_name)) == [replacement["id"]]
        deleted = client.delete(f"/api/wings/{wing_name}/rooms/db/drawers/{replacement['id']}")
        assert deleted.status_code == 200, deleted.text
        assert (
            ids(get(client, q=f"replaced{round_}", wing=wing_name, include_historical="true")) == []
        )


# Errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": " "}, "q"),
        ({"q": "a", "query": "b"}, "query"),
        ({"q": "a", "ranking": "bm25"}, "ranking"),
        ({"q": "a", "limit": "-1"}, "limit"),
        ({"q": "a", "limit": "ten"}, "limit"),
        ({"q": "a", "source_kind": "email"}, "source_kind"),
        ({"q": "a", "bogus": "1"}, "bogus"),
        ({"q": "a", "as_of": "yesterday"}, "as_of"),
        ({"q": "a", "as_of": "2026-01-01", "include_historical": "true"}, "include_historical"),
        ({"q": "a", "as_of": "2026-01-01", "from": "2026-01-01", "until": "2026-02-01"}, "from"),
        ({"q": "a", "from": "2026-01-01"}, "until"),
        ({"q": "a", "until": "2026-01-01"}, "from"),
        ({"q": "a", "from": "2026-02-01", "until": "2026-01-01"}, "from"),
        ({"q": "a", "from": "2026-01-01", "until": "2026-01-01"}, "from"),
        ({"q": "a", "expand": "perhaps"}, "expand"),
    ],
)
def test_a_bad_query_string_is_400_naming_the_option(
    client: httpx.Client, params: dict[str, str], field: str
) -> None:
    for route in ("/api/search", "/api/recall"):
        message = refused(client.get(route, params=params), 400, INVALID)
        assert message.startswith(f"`{field}`"), message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "text"),
        ({"text": "a", "query": "b"}, "query"),
        ({"text": "a", "q": "b"}, "q"),
        ({"text": "a", "wing": "w"}, "wing"),
        ({"text": "a", "filter": "w"}, "filter"),
        ({"text": "a", "filter": {"as_of": "2026-01-01"}}, "filter.as_of"),
        ({"text": "a", "filter": {"temporal": "now"}}, "filter.temporal"),
        ({"text": "a", "filter": {"temporal": {"as_of": "soon"}}}, "filter.temporal.as_of"),
        (
            {"text": "a", "filter": {"temporal": {"between": {"from": "2026-01-01"}}}},
            "filter.temporal.between.until",
        ),
        (
            {
                "text": "a",
                "filter": {"temporal": {"between": {"from": "2026-02-01", "until": "2026-01-01"}}},
            },
            "filter.temporal.between.from",
        ),
        ({"text": "a", "limit": -5}, "limit"),
        ({"text": "a", "ranking": "fast"}, "ranking"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(client: httpx.Client, body: Json, field: str) -> None:
    for route in ("/api/search", "/api/recall"):
        message = refused(client.post(route, json=body), 400, INVALID)
        assert message.startswith(f"`{field}`"), message


def test_a_body_that_is_not_an_object_is_refused(client: httpx.Client) -> None:
    message = refused(client.post("/api/search", json=["text"]), 400, INVALID)
    assert "`body`" in message


@pytest.mark.parametrize("ranking", ["semantic", "hybrid"])
def test_an_explicit_semantic_ranking_without_a_vector_is_refused(
    client: httpx.Client, ranking: str
) -> None:
    """Explicit rankings never silently degrade: no vector and no default profile is 400."""
    refused(client.get("/api/search", params={"q": "x", "ranking": ranking}), 400, UNAVAILABLE)
    refused(client.post("/api/search", json={"text": "x", "ranking": ranking}), 400, UNAVAILABLE)
    refused(client.get("/api/recall", params={"q": "x", "ranking": ranking}), 400, UNAVAILABLE)
    # An external profile cannot embed the text either.
    refused(
        client.get("/api/search", params={"q": "x", "ranking": ranking, "profile": STANDIN}),
        400,
        UNAVAILABLE,
    )


def test_a_query_embedding_needs_its_profile(client: httpx.Client) -> None:
    message = refused(
        client.post(
            "/api/search", json={"text": "x", "ranking": "semantic", "query_embedding": unit(1)}
        ),
        400,
        INVALID,
    )
    assert message.startswith("`profile`")


@pytest.mark.parametrize("length", [0, 7, 9, 384])
def test_a_query_embedding_of_the_wrong_length_is_refused_naming_the_expected_one(
    client: httpx.Client, length: int
) -> None:
    message = refused(
        client.post("/api/search", json=vector_body("x", [0.5] * length, "semantic")),
        400,
        INVALID,
    )
    assert message.startswith("`query_embedding`")
    assert "8" in message


@pytest.mark.parametrize(
    "vector", [[0.0] * 8, [0.1] * 7 + ["x"], [0.1] * 7 + [True], "0.1,0.2", {"0": 0.1}]
)
def test_a_query_embedding_that_is_not_a_usable_vector_is_refused(
    client: httpx.Client, vector: Any
) -> None:
    message = refused(
        client.post("/api/search", json=vector_body("x", vector, "semantic")), 400, INVALID
    )
    assert message.startswith("`query_embedding`"), message


def test_an_unknown_profile_is_refused_naming_it(client: httpx.Client) -> None:
    message = refused(
        client.post(
            "/api/search",
            json={"text": "x", "profile": "nope", "query_embedding": unit(1)},
        ),
        400,
        INVALID,
    )
    assert message.startswith("`profile`")


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"wing": "no-such-wing"}, "memcastle::palace::wing_not_found"),
        ({"room": "no-such-room"}, "memcastle::palace::room_not_found"),
    ],
)
def test_an_unknown_wing_or_room_is_404(
    client: httpx.Client, wing_name: str, params: dict[str, str], code: str
) -> None:
    file(client, wing_name, "db", "a drawer so the wing exists")
    scoped = {"wing": wing_name, **params} if "room" in params else params
    refused(client.get("/api/search", params={"q": "x", **scoped}), 404, code)
    refused(client.post("/api/search", json={"text": "x", "filter": scoped}), 404, code)
    if "room" not in params:
        refused(client.get("/api/recall", params={"q": "x", **scoped}), 404, code)


@pytest.mark.parametrize("route", ["/api/search", "/api/recall"])
def test_disabled_mode_refuses_and_read_only_allows(
    client: httpx.Client, wing_name: str, route: str
) -> None:
    drawer = file(client, wing_name, "db", "modes apply to search")
    disabled = {"X-MemCastle-Mode": "disabled"}
    message = refused(client.get(route, params={"q": "modes"}, headers=disabled), 403, FORBIDDEN)
    assert "disabled" in message
    refused(client.post(route, json={"text": "modes"}, headers=disabled), 403, FORBIDDEN)
    read_only = client.get(
        route, params={"q": "modes", "wing": wing_name}, headers={"X-MemCastle-Mode": "read_only"}
    )
    assert read_only.status_code == 200, read_only.text
    assert ids(read_only.json()) == [drawer["id"]]
