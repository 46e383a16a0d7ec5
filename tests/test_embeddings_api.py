"""Embeddings over real HTTP against real daemons: PUT /api/drawers/{id}/embedding and the embed
job (api.md "Your own vectors", search.md 6-7, jobs.md 1).

The daemons embed with a `command` profile: a Python script that answers deterministic vectors
and logs every call, so which drawers were embedded, in which order and batches, can be read
back exactly. Tests that need a default profile of their own, a kill or a single job slot start a
daemon of their own. Every wait polls a condition with a deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon
from tests.support.embed_stub import stub_argv, stub_calls
from tests.support.http import TERMINAL, Job, assert_error, submit, wait_job, watch
from tests.support.openapi import openapi_document
from tests.support.waits import wait_for

INVALID = "memcastle::input::invalid"
NOT_CONFIGURED = "memcastle::embed::not_configured"
WAIT = 30.0
EXTERNAL_PROVENANCE = {
    "provider": "external",
    "model": "their-model",
    "dimensions": 3,
    "pipeline": "external: vectors supplied by callers; l2",
}


def profiles_toml(directory: Path, mode: str = "good", delay: float = 0.0) -> str:
    argv = ", ".join(f'"{part}"' for part in stub_argv(directory, mode, delay))
    return f"""
[embeddings.profiles.stub]
provider = "command"
command = [{argv}]
model = "stub-model"
dimensions = 4
batch_size = 2

[embeddings.profiles.ext]
provider = "external"
model = "their-model"
dimensions = 3
"""


def embedding_daemon(
    root: Path, default: str, *, mode: str = "good", delay: float = 0.0, **env: str
) -> Daemon:
    """A daemon (not started) whose config has the `stub` and `ext` profiles."""
    daemon = Daemon(root, {"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": default, **env})
    stub_dir = root / "stub"
    stub_dir.mkdir(parents=True, exist_ok=True)
    config = root / "config" / "memcastle" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(profiles_toml(stub_dir, mode, delay), encoding="utf-8")
    return daemon


def new_drawer(client: httpx.Client, wing: str, content: str) -> dict[str, Any]:
    response = client.post(f"/api/wings/{wing}/rooms/notes/drawers", json={"content": content})
    assert response.status_code == 201, response.text
    return response.json()


def put(client: httpx.Client, drawer_id: str, body: Any, **headers: str) -> httpx.Response:
    return client.put(f"/api/drawers/{drawer_id}/embedding", json=body, headers=headers)


def embed_jobs(client: httpx.Client, status: str | None = None) -> list[Job]:
    params = {"kind": "embed", "limit": 200, **({"status": status} if status else {})}
    response = client.get("/api/jobs", params=params)
    assert response.status_code == 200, response.text
    return response.json()["jobs"]


# PUT /api/drawers/{id}/embedding, on a daemon whose default profile is external.


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = embedding_daemon(tmp_path_factory.mktemp("profiled"), "ext").start()
    yield daemon
    daemon.stop()


@pytest.fixture
def client(profiled: Daemon) -> Iterator[httpx.Client]:
    with profiled.client() as opened:
        yield opened


def test_a_vector_is_attached_replaced_and_never_shown(
    client: httpx.Client, wing_name: str
) -> None:
    drawer = new_drawer(client, wing_name, "the deploy runs on Fridays")
    response = put(client, drawer["id"], {"profile": "ext", "embedding": [0.1, 0.2, 0.3]})
    assert response.status_code == 200, response.text
    assert response.json() == {
        "drawer": drawer["id"],
        "profile": "ext",
        "dimensions": 3,
        "provenance": EXTERNAL_PROVENANCE,
    }
    replaced = put(client, drawer["id"], {"profile": "ext", "embedding": [3, 2, 1]})
    assert replaced.status_code == 200, replaced.text
    local = put(
        client,
        drawer["id"],
        {"profile": "local", "embedding": [0.5] * 384, "requested_by": "a-script"},
    )
    assert local.status_code == 200, local.text
    assert local.json()["provenance"] == {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "dimensions": 384,
        "pipeline": (
            "minilm-l6-v2 onnx int8, feed-forward by row; windows 256/32; conversations also as "
            "passages of 6 turns; mean pool; l2"
        ),
    }
    shown = client.get(f"/api/drawers/{drawer['id']}").json()
    assert not {"embedding", "embeddings", "vectors"} & set(shown)
    assert shown["content"] == "the deploy runs on Fridays"
    assert shown["updated_at"] == drawer["updated_at"]


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        ({"embedding": [1, 2, 3]}, "profile", "is required"),
        ({"profile": None, "embedding": [1, 2, 3]}, "profile", "is required"),
        ({"profile": "", "embedding": [1, 2, 3]}, "profile", "is required"),
        ({"profile": "openai", "embedding": [1, 2, 3]}, "profile", "ext, local, stub"),
        ({"profile": 3, "embedding": [1, 2, 3]}, "profile", "must be the name of a configured"),
        ({"profile": "ext"}, "embedding", "a list of 3 numbers"),
        ({"profile": "ext", "embedding": [1, 2]}, "embedding", "profile 'ext' has 3 dimensions"),
        ({"profile": "stub", "embedding": [1, 2, 3]}, "embedding", "'stub' has 4 dimensions"),
        ({"profile": "ext", "embedding": [1, "2", 3]}, "embedding", "finite numbers"),
        ({"profile": "ext", "embedding": [0, 0, 0]}, "embedding", "all zeros"),
        ({"profile": "ext", "embedding": "1,2,3"}, "embedding", "must be a list"),
        ({"profile": "ext", "embedding": [1, 2, 3], "model": "x"}, "model", "not a known field"),
        ([1, 2, 3], "body", "must be a JSON object"),
    ],
)
def test_a_bad_attachment_is_refused_naming_the_field(
    client: httpx.Client, wing_name: str, body: Any, field: str, expected: str
) -> None:
    drawer = new_drawer(client, wing_name, "a drawer to refuse vectors for")
    error = assert_error(put(client, drawer["id"], body), 400, INVALID)
    assert error["error"].startswith(f"`{field}`"), error
    assert expected in error["error"], error


def test_a_vector_for_a_missing_drawer_is_not_found(client: httpx.Client) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    body = {"profile": "ext", "embedding": [1, 2, 3]}
    assert_error(put(client, missing, body), 404, "memcastle::palace::drawer_not_found")
    error = assert_error(put(client, "not-a-drawer", body), 400, INVALID)
    assert error["error"].startswith("`id`")


def test_attaching_a_vector_is_a_write(client: httpx.Client, wing_name: str) -> None:
    drawer = new_drawer(client, wing_name, "written in full mode only")
    body = {"profile": "ext", "embedding": [1, 2, 3]}
    for mode in ("read_only", "disabled"):
        error = assert_error(
            put(client, drawer["id"], body, **{"X-MemCastle-Mode": mode}),
            403,
            "memcastle::mode::forbidden",
        )
        assert "attach_embedding" in error["error"]
    assert_error(put(client, drawer["id"], body, **{"X-MemCastle-Mode": "root"}), 400, INVALID)


def test_an_external_default_embeds_nothing_by_itself(client: httpx.Client, wing_name: str) -> None:
    new_drawer(client, wing_name, "no provider will read this")
    error = assert_error(client.post("/api/jobs", json={"type": "embed"}), 400, NOT_CONFIGURED)
    assert "'ext' is external" in error["error"]
    assert embed_jobs(client) == []


def test_the_route_is_in_the_openapi_schema() -> None:
    schema = openapi_document()
    operation = schema["paths"]["/api/drawers/{drawer_id}/embedding"]["put"]
    assert {"200", "400", "401", "403", "404", "500"} <= set(operation["responses"])
    reference = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert set(body["required"]) == {"profile", "embedding"}
    assert body["properties"]["embedding"]["type"] == "array"


# The shared daemon has no default profile.


def test_without_a_default_profile_embedding_is_not_configured(
    daemon: Daemon, wing_name: str
) -> None:
    with daemon.client() as client:
        drawer = new_drawer(client, wing_name, "searched lexically only")
        error = assert_error(client.post("/api/jobs", json={"type": "embed"}), 400, NOT_CONFIGURED)
        assert "no default embedding profile" in error["error"]
        # The built-in local profile still takes vectors of its own size.
        attached = put(client, drawer["id"], {"profile": "local", "embedding": [1.0] * 384})
        assert attached.status_code == 200, attached.text


# Embed jobs, by hand and automatic, on daemons of their own.


@pytest.fixture
def own(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Makes this test's daemon (see `embedding_daemon`); killed at the end if still running."""
    made: list[Daemon] = []

    def make(default: str, **settings: Any) -> Daemon:
        made.append(embedding_daemon(tmp_path, default, **settings))
        return made[-1]

    yield make
    for daemon in made:
        if daemon.process is not None and daemon.process.poll() is None:
            daemon.kill()


def sweeps(daemon: Daemon) -> int:
    """How often the sweeper has looked at the queue: it queued a job or found one waiting."""
    log = daemon.log()
    queued = sum(
        1
        for line in log.splitlines()
        if "job queued" in line and "job_type=embed" in line and "requested_by=auto" in line
    )
    return queued + log.count("embed sweep: a job is already queued")


def test_writes_queue_one_embed_job_and_a_job_by_hand_embeds_oldest_first(
    own: Callable[..., Daemon], tmp_path: Path
) -> None:
    fresh_daemon = own(
        "stub",
        MEMCASTLE_JOBS_MAX_CONCURRENCY="1",
        MEMCASTLE_LOG="info,palace.embeddings.job=debug",
    ).start()
    stub = tmp_path / "stub"
    with fresh_daemon.client() as client:
        # At start-up: one automatic job, with nothing to embed yet.
        (startup,) = wait_for(lambda: embed_jobs(client), timeout=WAIT, what="a start-up job")
        startup = wait_job(client, startup["id"], timeout=WAIT)
        assert startup["requested_by"] == "auto" and startup["priority"] == 25
        assert startup["result"] == {"embedded": 0, "profile": "stub"}
        # A long demo job holds the only job slot, so automatic jobs wait in the queue.
        blocker = submit(client, {"type": "demo", "steps": 1000, "step_ms": 50})
        watch(
            client,
            blocker["id"],
            lambda job: job["status"] == "running",
            "the demo to run",
            timeout=WAIT,
        )
        contents = {"w": [f"wing w memory {n}" for n in range(3)], "v": ["v one", "v two"]}
        for wing, texts in contents.items():
            for text in texts:
                looked = sweeps(fresh_daemon)
                new_drawer(client, wing, text)
                wait_for(
                    lambda looked=looked: sweeps(fresh_daemon) > looked,
                    timeout=WAIT,
                    what="the sweeper to look at the queue",
                )
                # Coalesced: never more than one waiting.
                assert len(embed_jobs(client, "queued")) == 1
        (waiting,) = embed_jobs(client, "queued")
        assert waiting["requested_by"] == "auto"
        assert fresh_daemon.log().count("embed sweep: a job is already queued") == 4
        response = client.post(f"/api/jobs/{waiting['id']}/cancel")
        assert response.status_code == 200, response.text

        by_hand = submit(client, {"type": "embed", "wing": "w"})
        assert by_hand["kind"] == {"type": "embed", "wing": "w"}
        assert (by_hand["priority"], by_hand["requested_by"]) == (25, "http")
        client.post(f"/api/jobs/{blocker['id']}/cancel")
        done = wait_job(client, by_hand["id"], timeout=WAIT)
        assert done["result"] == {"embedded": 3, "profile": "stub"}
        assert done["progress"] == {"current": 3, "total": 3, "message": "done"}
        # Oldest first, in batches of the profile's batch_size (2), with the model and size.
        calls = stub_calls(stub)
        assert [call["texts"] for call in calls] == [contents["w"][:2], contents["w"][2:]]
        assert all(call["model"] == "stub-model" and call["dimension"] == 4 for call in calls)
        # The daemon's MEMCASTLE_* variables never reach the command.
        assert all(call["memcastle_env"] == [] for call in calls)

        # The database is the cursor: the next job embeds only what is still missing.
        rest = wait_job(client, submit(client, {"type": "embed"})["id"], timeout=WAIT)
        assert rest["result"] == {"embedded": 2, "profile": "stub"}
        assert [call["texts"] for call in stub_calls(stub)[2:]] == [contents["v"]]
        nothing = wait_job(client, submit(client, {"type": "embed"})["id"], timeout=WAIT)
        assert nothing["result"] == {"embedded": 0, "profile": "stub"}
        assert nothing["progress"]["message"] == "nothing left to embed"
        assert len(stub_calls(stub)) == 3

        error = assert_error(
            client.post("/api/jobs", json={"type": "embed", "wing": "nowhere"}),
            404,
            "memcastle::palace::wing_not_found",
        )
        assert "nowhere" in error["error"]
        assert_error(
            client.post(
                "/api/jobs", json={"type": "embed"}, headers={"X-MemCastle-Mode": "read_only"}
            ),
            403,
            "memcastle::mode::forbidden",
        )


KILL_DRAWERS = 12


def test_an_embed_job_killed_mid_way_resumes_and_embeds_everything_once(
    own: Callable[..., Daemon], tmp_path: Path
) -> None:
    # Drawers filed while nothing embeds; then the daemon starts with a slow provider, and the
    # start-up job is killed with kill -9 part of the way through.
    fresh_daemon = own("", delay=0.3).start()
    with fresh_daemon.client() as client:
        texts = [f"memory {n} to embed after a crash" for n in range(KILL_DRAWERS)]
        for text in texts:
            new_drawer(client, "kill", text)
        assert embed_jobs(client) == []
    assert fresh_daemon.stop() == 0

    fresh_daemon.env["MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE"] = "stub"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        (job,) = wait_for(lambda: embed_jobs(client), timeout=WAIT, what="the start-up job")
        seen = watch(
            client,
            job["id"],
            lambda job: job["progress"]["current"] >= 4 or job["status"] in TERMINAL,
            "two batches to be saved",
            timeout=WAIT,
        )
    fresh_daemon.kill()
    assert seen["status"] == "running", "the job ended before the kill"
    before = len(stub_calls(tmp_path / "stub"))
    assert before < KILL_DRAWERS // 2

    log_before = len(fresh_daemon.log())
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        done = wait_job(client, job["id"], timeout=WAIT)
        assert f"job recovered job_id={job['id']} status=queued" in fresh_daemon.log()[log_before:]
        assert done["attempt"] == 2 and done["recovery_attempts"] == 1
        # The recovered job was waiting: the start-up sweep queued no other.
        assert [j["id"] for j in embed_jobs(client)] == [job["id"]]
        # A batch embedded but not saved before the kill may be counted by neither run.
        assert KILL_DRAWERS - 2 <= done["result"]["embedded"] <= KILL_DRAWERS
        assert done["result"]["profile"] == "stub"
        embedded = [text for call in stub_calls(tmp_path / "stub") for text in call["texts"]]
        assert sorted(set(embedded)) == sorted(texts)
        # Only the batch in flight at the kill can have been asked for twice.
        assert len(embedded) - len(set(embedded)) <= 2
        again = wait_job(client, submit(client, {"type": "embed"})["id"], timeout=WAIT)
        assert again["result"] == {"embedded": 0, "profile": "stub"}


def test_a_failing_provider_fails_the_automatic_job(own: Callable[..., Daemon]) -> None:
    fresh_daemon = own("stub", mode="fail").start()
    with fresh_daemon.client() as client:
        (startup,) = wait_for(lambda: embed_jobs(client), timeout=WAIT, what="a start-up job")
        wait_job(client, startup["id"], timeout=WAIT)
        new_drawer(client, "failing", "the provider cannot read this")
        failed = wait_for(
            lambda: embed_jobs(client, "failed"), timeout=WAIT, what="the embed job to fail"
        )
        (job,) = failed
        assert job["error_code"] == "memcastle::embed::failed"
        assert "exited with status 3: the model server is down" in job["error"]
        assert job["requested_by"] == "auto"


def test_a_session_filed_whole_is_found_by_the_turns_that_answer(
    own: Callable[..., Daemon],
) -> None:
    """The local profile embeds a conversation's drawer with its passages of turns: one of the
    conversational benchmark's conversations, a drawer per session, and a question answered by
    two of a session's fourteen turns. Embedded as one vector a session, that session came 8th
    of 12 (docs/retrieval.md, "Passages")."""
    from tests.eval import conversations

    daemon = own("local").start()
    dataset = conversations.dataset("session")
    sessions = [document for document in dataset.documents if document.wing == "c03"]
    (question,) = [
        q for q in dataset.queries if q.wing == "c03" and q.text == "What does Hannah drive?"
    ]
    with daemon.client() as client:
        filed = {
            new_drawer(client, "c03", session.content)["id"]: session.id for session in sessions
        }

        def ask(limit: int) -> httpx.Response:
            body = {"text": question.text, "ranking": "semantic", "limit": limit}
            body |= {"filter": {"wing": "c03"}, "profile": "local"}
            return client.post("/api/search", json=body)

        def embedded() -> bool:
            return len(ask(20).json().get("results", [])) == len(filed)

        wait_for(embedded, timeout=120, what="every session embedded and searchable")
        response = ask(3)
    assert response.status_code == 200, response.text
    found = [filed[hit["id"]] for hit in response.json()["results"]]
    assert len(filed) == 12 and list(question.grades()) == ["c03/s4"]
    assert "c03/s4" in found, found
    daemon.stop()
