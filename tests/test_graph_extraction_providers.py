"""The extraction providers and the normalisation of their answers (graph.md sections 4 and 5).

The heuristic provider on fixed texts; the command provider with a tiny Python script (a good
answer, a non-zero exit, output that is not JSON, the wrong number of answers, a timeout, the
environment it sees); the http provider against a real HTTP server on a thread; the closed
vocabulary, the drops and the caps. No daemon and no store.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from graph import heuristic
from graph.extraction import context_of, fact_valid_from
from graph.providers import (
    INPUT_CHARS,
    KINDS,
    PREDICATES,
    CommandProvider,
    ExtractFailed,
    HeuristicProvider,
    HttpProvider,
    Item,
    for_config,
    normalise,
)
from kernel.config import ExtractionConfig, load_config
from kernel.errors import ConfigInvalid
from tests.support.endpoint import Endpoint

LIMITS = {"min_confidence": 0.3, "max_entities": 32, "max_relations": 64}


def rel(subject: str, predicate: str, object_: str, confidence: float = 0.6) -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": object_, "confidence": confidence}


def ent(name: str, kind: str = "other") -> dict[str, str]:
    return {"name": name, "kind": kind}


# The heuristic provider.


@pytest.mark.parametrize(
    ("text", "entities", "relations"),
    [
        pytest.param(
            "Alice works on MemCastle.",
            [ent("Alice"), ent("MemCastle", "project")],
            [rel("Alice", "works_on", "MemCastle")],
            id="sentence-initial-name-in-a-relation",
        ),
        pytest.param(
            "Bob is a member of the Platform Team. The Platform Team uses PostgreSQL.",
            [ent("Bob"), ent("Platform Team", "organization"), ent("PostgreSQL", "tool")],
            [
                rel("Bob", "member_of", "Platform Team"),
                rel("Platform Team", "uses", "PostgreSQL"),
            ],
            id="article-before-the-object-and-stop-word-split",
        ),
        pytest.param(
            "MemCastle depends on SurrealDB. Acme Corp is based in Berlin.",
            [
                ent("MemCastle"),
                ent("SurrealDB", "tool"),
                ent("Acme Corp", "organization"),
                ent("Berlin", "place"),
            ],
            [
                rel("MemCastle", "depends_on", "SurrealDB"),
                rel("Acme Corp", "located_in", "Berlin"),
            ],
            id="depends-on-and-based-in",
        ),
        pytest.param(
            "@carol owns `deploy.sh` and the parser is maintained by @dave.",
            [ent("@carol", "person"), ent("deploy.sh", "tool"), ent("@dave", "person")],
            [rel("@carol", "owns", "deploy.sh")],
            id="handles-and-code-spans",
        ),
        pytest.param(
            "The `indexer` is used by Search Service.",
            [ent("indexer", "tool"), ent("Search Service")],
            [rel("Search Service", "uses", "indexer")],
            id="a-passive-phrase-swaps-subject-and-object",
        ),
        pytest.param(
            "Payments is part of Acme Platform. Payments also uses Stripe.",
            [ent("Payments"), ent("Acme Platform"), ent("Stripe", "tool")],
            [rel("Payments", "part_of", "Acme Platform"), rel("Payments", "uses", "Stripe")],
            id="part-of-and-an-ignored-adverb",
        ),
        pytest.param(
            "Alice and Bob met Carol in Paris. Dave, Erin and Frank like Rust.",
            [ent("Bob"), ent("Carol"), ent("Paris"), ent("Erin"), ent("Frank"), ent("Rust")],
            [],
            id="co-occurrence-alone-relates-nothing",
        ),
        pytest.param(
            "When we deployed, nothing broke. Deploying requires Docker. Yesterday was calm. "
            "However the build is slow.",
            [ent("Docker")],
            [],
            id="sentence-starts-are-not-names",
        ),
        pytest.param(
            "Kubernetes is hard. We run Kubernetes daily.",
            [ent("Kubernetes")],
            [],
            id="a-sentence-start-written-capitalised-elsewhere-is-a-name",
        ),
        pytest.param(
            "AWS hosts it. S3 stores it.",
            [ent("AWS"), ent("S3")],
            [],
            id="name-like-sentence-starts",
        ),
        pytest.param(
            "# Team\nAlice works on Atlas.\n\n```\nFoo uses Bar\n```\nMonday is free.",
            [ent("Alice"), ent("Atlas", "project")],
            [rel("Alice", "works_on", "Atlas")],
            id="headings-fences-and-weekdays",
        ),
        pytest.param(
            "Alice works on Atlas and Bob. Alice, who works on Atlas, uses Vim.",
            [ent("Alice"), ent("Atlas", "project"), ent("Bob"), ent("Vim")],
            [rel("Alice", "works_on", "Atlas")],
            id="only-the-words-between-neighbours-count",
        ),
        pytest.param(
            "Atlas works on Atlas.",
            [ent("Atlas")],
            [],
            id="no-self-loop",
        ),
    ],
)
def test_the_heuristic_finds_names_and_stated_relations(
    text: str, entities: list[dict[str, str]], relations: list[dict[str, Any]]
) -> None:
    assert heuristic.extract(text) == {"entities": entities, "relations": relations}


def test_the_heuristic_is_deterministic_and_uses_one_confidence() -> None:
    text = "Alice works on Atlas. Bob uses Vim. Carol owns Atlas. Dave joined Acme Corp."
    first = heuristic.extract(text)
    assert all(heuristic.extract(text) == first for _ in range(5))
    assert {r["confidence"] for r in first["relations"]} == {heuristic.CONFIDENCE} == {0.6}
    assert {r["predicate"] for r in first["relations"]} == {"works_on", "uses", "owns", "member_of"}
    entities, relations = normalise(first, **LIMITS)
    assert entities == first["entities"] and relations == first["relations"]


def test_the_heuristic_phrase_table_maps_only_to_the_vocabulary() -> None:
    assert {predicate for predicate, _ in heuristic.PHRASES.values()} <= set(PREDICATES)
    assert "related_to" not in {predicate for predicate, _ in heuristic.PHRASES.values()}


def test_the_heuristic_provider_reads_the_first_8000_characters() -> None:
    text = "x " * 4000 + "Alice works on Atlas."
    assert len(text) > INPUT_CHARS
    (answer,) = HeuristicProvider().extract([Item(text)])
    assert answer == {"entities": [], "relations": []}
    (answer,) = HeuristicProvider().extract([Item(text[-200:])])
    assert answer["relations"] == [rel("Alice", "works_on", "Atlas")]


# Normalising any provider's answer.


def test_unknown_kinds_and_predicates_fall_back_and_labels_are_normalised() -> None:
    answer = {
        "entities": [
            ent("Alice", " Person "),
            ent("Atlas", "Software"),
            ent("Acme", "ORGANIZATION"),
            {"name": "Nowhere"},
        ],
        "relations": [
            rel("Alice", "Works On", "Atlas", 0.9),
            rel("Alice", "works-on", "Acme", 0.8),
            rel("Atlas", "likes", "Acme", 0.7),
        ],
    }
    entities, relations = normalise(answer, **LIMITS)
    assert entities == [
        ent("Alice", "person"),
        ent("Atlas", "other"),
        ent("Acme", "organization"),
        ent("Nowhere", "other"),
    ]
    assert relations == [
        rel("Alice", "works_on", "Atlas", 0.9),
        rel("Alice", "works_on", "Acme", 0.8),
        rel("Atlas", "related_to", "Acme", 0.7),
    ]
    assert {e["kind"] for e in entities} <= set(KINDS)


def test_relations_that_cannot_stand_are_dropped() -> None:
    answer = {
        "entities": [ent("Alice", "person"), ent("Atlas", "project"), ent("  "), "junk", 7],
        "relations": [
            rel("Alice", "works_on", "Ghost"),  # object not among the entities
            rel("Ghost", "works_on", "Atlas"),  # subject not among them
            rel("Alice", "uses", "alice"),  # a self-loop, whatever the case
            rel("Alice", "uses", "Atlas", math.nan),
            rel("Alice", "uses", "Atlas", math.inf),
            rel("Alice", "uses", "Atlas", True),
            rel("Alice", "uses", "Atlas", "0.9"),  # type: ignore[arg-type]
            {"subject": "Alice", "predicate": "uses", "object": "Atlas"},  # no confidence
            rel("Alice", "uses", "Atlas", 0.29),  # below min_confidence
            rel("Alice", "owns", "Atlas", 0.3),  # exactly min_confidence: kept
            rel("alice", "OWNS", "ATLAS", 0.9),  # the same fact again
            rel("Alice", "works_on", "Atlas", 7),  # over 1 counts as 1
            "junk",
        ],
    }
    entities, relations = normalise(answer, **LIMITS)
    assert entities == [ent("Alice", "person"), ent("Atlas", "project")]
    assert relations == [rel("Alice", "owns", "Atlas", 0.3), rel("Alice", "works_on", "Atlas", 1.0)]


def test_entities_are_one_per_name_and_relations_use_the_listed_spelling() -> None:
    answer = {
        "entities": [ent("Node.js", "tool"), ent("node.JS", "concept"), ent("Alice   Smith")],
        "relations": [rel("alice smith", "uses", "NODE.JS")],
    }
    entities, relations = normalise(answer, **LIMITS)
    assert entities == [ent("Node.js", "tool"), ent("Alice Smith")]
    assert relations == [rel("Alice Smith", "uses", "Node.js")]


def test_caps_keep_the_first_entities_and_relations() -> None:
    names = [f"E{n}" for n in range(10)]
    answer = {
        "entities": [ent(name) for name in names],
        "relations": [rel(a, "uses", b) for a in names for b in names if a != b],
    }
    entities, relations = normalise(answer, min_confidence=0.3, max_entities=4, max_relations=5)
    assert [e["name"] for e in entities] == names[:4]
    # Relations to entities past the cap are dropped before the relation cap counts.
    assert relations == [
        rel("E0", "uses", "E1"),
        rel("E0", "uses", "E2"),
        rel("E0", "uses", "E3"),
        rel("E1", "uses", "E0"),
        rel("E1", "uses", "E2"),
    ]


@pytest.mark.parametrize(
    "answer", [None, [], "text", {"entities": "x", "relations": 3}, {}], ids=repr
)
def test_an_answer_of_the_wrong_shape_finds_nothing(answer: object) -> None:
    assert normalise(answer, **LIMITS) == ([], [])


# The validity of an extracted fact and the context a provider is given.


def test_a_fact_is_valid_from_the_origin_then_the_document_then_the_drawer_never_the_future() -> (
    None
):
    now = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    drawer_from = dt.datetime(2026, 5, 1, 12, tzinfo=dt.UTC)
    origin = {"source": "chat", "occurred_at": "2026-02-03T04:05:06Z"}
    drawer = {"id": "d", "valid_from": drawer_from, "source": {"kind": "file", "origin": origin}}
    assert fact_valid_from(drawer, "2026-03-01T00:00:00Z", now) == dt.datetime(
        2026, 2, 3, 4, 5, 6, tzinfo=dt.UTC
    )
    del origin["occurred_at"]
    assert fact_valid_from(drawer, "2026-03-01T00:00:00Z", now) == dt.datetime(
        2026, 3, 1, tzinfo=dt.UTC
    )
    assert fact_valid_from(drawer, None, now) == drawer_from
    assert fact_valid_from(drawer, "2027-01-01T00:00:00+02:00", now) == now
    assert fact_valid_from({"id": "n", "valid_from": drawer_from}, "not a time", now) == (
        drawer_from
    )


def test_the_context_names_the_drawer_its_source_and_preference() -> None:
    origin = {"source_id": "s", "source": "directory", "document": "a.md", "chunk": 0}
    assert context_of({"id": "d1", "source": {"kind": "file", "origin": origin}}) == {
        "drawer": "d1",
        "source_kind": "file",
        "preference": "normal",
        "origin": origin,
    }
    assert context_of({"id": "d2", "source": {"kind": "note"}}) == {
        "drawer": "d2",
        "source_kind": "note",
        "preference": "normal",
    }


# Configuration.


def test_extraction_settings_default_and_come_from_the_environment(tmp_path: Path) -> None:
    base = {"MEMCASTLE_PALACE_PATH": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    config = load_config(env=base).extraction
    assert config == ExtractionConfig()
    assert (config.provider, config.timeout_secs, config.batch_size) == ("none", 120.0, 8)
    assert (config.min_confidence, config.max_entities, config.max_relations) == (0.3, 32, 64)
    assert for_config(config) is None
    config = load_config(
        env={
            **base,
            "MEMCASTLE_EXTRACTION_PROVIDER": "http",
            "MEMCASTLE_EXTRACTION_URL": "http://127.0.0.1:9/v1/",
            "MEMCASTLE_EXTRACTION_MODEL": "tiny",
            "MEMCASTLE_EXTRACTION_API_KEY": "sk-secret-value",
            "MEMCASTLE_EXTRACTION_TIMEOUT_SECS": "5",
            "MEMCASTLE_EXTRACTION_BATCH_SIZE": "3",
            "MEMCASTLE_EXTRACTION_MIN_CONFIDENCE": "0.5",
        }
    ).extraction
    assert config.url == "http://127.0.0.1:9/v1"
    assert (config.model, config.api_key, config.timeout_secs) == ("tiny", "sk-secret-value", 5)
    assert (config.batch_size, config.min_confidence) == (3, 0.5)
    assert "sk-secret-value" not in repr(config)
    assert isinstance(for_config(config), HttpProvider)


def test_extraction_settings_from_a_file_and_refusals(tmp_path: Path) -> None:
    base = {"MEMCASTLE_PALACE_PATH": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    path = tmp_path / "config.toml"
    path.write_text(
        '[extraction]\nprovider = "command"\ncommand = ["/bin/extract", "-q"]\n'
        "max_entities = 5\nmax_relations = 7\n"
    )
    config = load_config(env={**base, "MEMCASTLE_CONFIG": str(path)}).extraction
    assert (config.command, config.max_entities, config.max_relations) == (
        ("/bin/extract", "-q"),
        5,
        7,
    )
    assert isinstance(for_config(config), CommandProvider)
    path.write_text('[extraction]\nprovider = "command"\n')
    with pytest.raises(ConfigInvalid, match=r"extraction\.command"):
        load_config(env={**base, "MEMCASTLE_CONFIG": str(path)})
    with pytest.raises(ConfigInvalid, match=r"extraction\.url"):
        load_config(env={**base, "MEMCASTLE_EXTRACTION_PROVIDER": "http"})
    for variable, value in (
        ("MEMCASTLE_EXTRACTION_PROVIDER", "spacy"),
        ("MEMCASTLE_EXTRACTION_TIMEOUT_SECS", "0"),
        ("MEMCASTLE_EXTRACTION_BATCH_SIZE", "257"),
        ("MEMCASTLE_EXTRACTION_MIN_CONFIDENCE", "1.5"),
        ("MEMCASTLE_EXTRACTION_URL", "ftp://x"),
    ):
        with pytest.raises(ConfigInvalid, match=variable):
            load_config(env={**base, variable: value})
    with pytest.raises(ConfigInvalid) as refused:
        load_config(env={**base, "MEMCASTLE_EXTRACTION_API_KEY": " "})
    assert "<secret>" in refused.value.message


# The command provider.

SCRIPT = r"""
import json, os, sys, time
request = json.load(sys.stdin)
mode = os.environ.get("EXTRACT_MODE", "good")
if mode == "fail":
    sys.stderr.write("model not found\n")
    sys.exit(3)
if mode == "garbage":
    print("this is not json")
    sys.exit(0)
if mode == "short":
    print(json.dumps({"extractions": []}))
    sys.exit(0)
if mode == "shape":
    print(json.dumps({"extractions": [{"entities": "x"}] * len(request["texts"])}))
    sys.exit(0)
if mode == "sleep":
    time.sleep(60)
if mode == "env":
    leaked = sorted(k for k in os.environ if k.startswith("MEMCASTLE_"))
    print(json.dumps({"extractions": [{"entities": [{"name": k} for k in leaked]}]}))
    sys.exit(0)
with open(os.environ["EXTRACT_LOG"], "a") as log:
    log.write(json.dumps(request) + "\n")
answers = []
for text in request["texts"]:
    words = text.split()
    answers.append({
        "entities": [{"name": words[0], "kind": "person"}, {"name": words[-1], "kind": "tool"}],
        "relations": [{"subject": words[0], "predicate": "uses", "object": words[-1],
                       "confidence": 0.9}],
    })
print(json.dumps({"extractions": answers}))
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "extract.py"
    path.write_text(SCRIPT)
    return path


def command(script: Path, mode: str, log: Path, timeout: float = 30) -> CommandProvider:
    config = ExtractionConfig(
        provider="command",
        command=(sys.executable, str(script)),
        model="tiny-model",
        timeout_secs=timeout,
        batch_size=2,
    )
    os.environ["EXTRACT_MODE"] = mode
    os.environ["EXTRACT_LOG"] = str(log)
    return CommandProvider(config)


@pytest.fixture(autouse=True)
def _clean_env() -> Iterator[None]:
    yield
    for key in ("EXTRACT_MODE", "EXTRACT_LOG", "MEMCASTLE_TEST_SECRET"):
        os.environ.pop(key, None)


def test_a_command_gets_the_model_vocabulary_texts_and_contexts(
    script: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    provider = command(script, "good", log)
    items = [
        Item("Alice uses Vim", {"drawer": "d1"}),
        Item("Bob likes " + "y" * INPUT_CHARS, {"drawer": "d2"}),
    ]
    answers = list(provider.extract(items))
    assert answers[0]["relations"] == [rel("Alice", "uses", "Vim", 0.9)]
    assert answers[1]["entities"][0] == ent("Bob", "person")
    (request,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert request["model"] == "tiny-model"
    assert request["vocabulary"] == {"kinds": list(KINDS), "predicates": list(PREDICATES)}
    assert request["texts"][0] == "Alice uses Vim"
    assert len(request["texts"][1]) == INPUT_CHARS
    assert request["contexts"] == [{"drawer": "d1"}, {"drawer": "d2"}]
    assert provider.batch_size == 2


def test_a_command_sees_no_memcastle_variables(script: Path, tmp_path: Path) -> None:
    os.environ["MEMCASTLE_TEST_SECRET"] = "x"
    (answer,) = command(script, "env", tmp_path / "log").extract([Item("a b")])
    assert answer == {"entities": []}


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("fail", "exited with status 3: model not found"),
        ("garbage", "output that is not JSON"),
        ("short", "returned 0 extractions for 2 texts"),
        ("shape", "something other than"),
    ],
)
def test_a_failing_command_fails_with_extract_failed(
    script: Path, tmp_path: Path, mode: str, message: str
) -> None:
    provider = command(script, mode, tmp_path / "log")
    with pytest.raises(ExtractFailed) as failed:
        list(provider.extract([Item("a b"), Item("c d")]))
    assert message in failed.value.message
    assert failed.value.status == 502
    assert failed.value.code == "memcastle::extract::failed"
    assert "a b" not in failed.value.message


def test_a_command_that_cannot_start_fails(tmp_path: Path) -> None:
    config = ExtractionConfig(provider="command", command=(str(tmp_path / "missing"),))
    with pytest.raises(ExtractFailed, match="could not be started"):
        list(CommandProvider(config).extract([Item("a")]))


def test_a_command_past_its_timeout_is_killed(script: Path, tmp_path: Path) -> None:
    provider = command(script, "sleep", tmp_path / "log", timeout=0.5)
    started = dt.datetime.now()
    with pytest.raises(ExtractFailed, match=r"did not answer within 0\.5 s and was killed"):
        list(provider.extract([Item("a b")]))
    assert (dt.datetime.now() - started).total_seconds() < 10


# The http provider.


def completion(content: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def http(endpoint: Endpoint, **settings: Any) -> HttpProvider:
    return HttpProvider(
        ExtractionConfig(
            provider="http",
            url=endpoint.url,
            model="gpt-tiny",
            api_key="sk-test-key-0123456789",
            **settings,
        )
    )


def test_http_asks_one_chat_completion_per_drawer(endpoint: Endpoint) -> None:
    good = {"entities": [ent("Alice", "person")], "relations": []}
    endpoint.replies = [
        (200, completion(json.dumps(good))),
        (200, completion("```json\n" + json.dumps(good) + "\n```")),
    ]
    items = [Item("Alice wrote this.", {"drawer": "d1"}), Item("z" * 9000, {"drawer": "d2"})]
    assert list(http(endpoint, batch_size=4).extract(items)) == [good, good]
    assert len(endpoint.requests) == 2
    first = endpoint.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["authorization"] == "Bearer sk-test-key-0123456789"
    body = first["body"]
    assert body["model"] == "gpt-tiny"
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert all(kind in system["content"] for kind in KINDS)
    assert all(predicate in system["content"] for predicate in PREDICATES)
    assert user["content"].endswith("Alice wrote this.")
    assert '"drawer": "d1"' in user["content"]
    second = endpoint.requests[1]["body"]["messages"][1]["content"]
    assert second.endswith("z" * INPUT_CHARS) and "z" * (INPUT_CHARS + 1) not in second


@pytest.mark.parametrize(
    "content",
    ["Sorry, I cannot help.", "[1, 2]", '{"answer": 42}', '{"entities": "Alice"}'],
)
def test_an_answer_that_is_not_the_requested_json_is_nothing_found_and_logged(
    endpoint: Endpoint, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint.replies = [(200, completion(content))]
    with caplog.at_level("WARNING", logger="graph.providers"):
        answers = list(http(endpoint).extract([Item("text", {"drawer": "d9"})]))
    assert answers == [{"entities": [], "relations": []}]
    (record,) = caplog.records
    assert "not the requested JSON" in record.getMessage()
    assert record.fields == {"drawer": "d9"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("status", "reply", "message"),
    [
        (500, {"error": "boom sk-test-key-0123456789"}, "answered HTTP 500"),
        (401, "unauthorised", "answered HTTP 401"),
        (200, {"data": []}, "without an OpenAI-style chat completion"),
        (200, "<html>", "without an OpenAI-style chat completion"),
    ],
)
def test_an_endpoint_that_fails_fails_the_extraction(
    endpoint: Endpoint, status: int, reply: Any, message: str
) -> None:
    endpoint.replies = [(200, completion('{"entities": []}')), (status, reply)]
    answers = http(endpoint).extract([Item("one"), Item("two"), Item("three")])
    assert next(answers) == {"entities": []}
    with pytest.raises(ExtractFailed) as failed:
        next(answers)
    assert message in failed.value.message
    assert "sk-test" not in failed.value.message
    assert len(endpoint.requests) == 2


def test_an_unreachable_or_slow_endpoint_fails(endpoint: Endpoint) -> None:
    closed = HttpProvider(ExtractionConfig(provider="http", url="http://127.0.0.1:9"))
    with pytest.raises(ExtractFailed, match="could not be reached"):
        list(closed.extract([Item("x")]))
    gate = threading.Event()
    original = endpoint.server.RequestHandlerClass.do_POST  # type: ignore[attr-defined]

    def slow(handler: BaseHTTPRequestHandler) -> None:
        gate.wait(10)
        original(handler)

    endpoint.server.RequestHandlerClass.do_POST = slow  # type: ignore[attr-defined]
    endpoint.replies = [(200, completion("{}"))]
    try:
        with pytest.raises(ExtractFailed, match=r"did not answer within 0\.3 s"):
            list(http(endpoint, timeout_secs=0.3).extract([Item("x")]))
    finally:
        gate.set()
