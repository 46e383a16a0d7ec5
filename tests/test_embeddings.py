"""Embedding profiles, providers, stored vectors and the embed job, in-process.

Profiles are read from real config files; the local provider runs the real model from the pinned
wheel against reference values of sentence-transformers; the command provider runs a real Python
script; the HTTP provider talks to a real HTTP server on a thread of this process. The embed job
runs on a real in-memory SurrealDB through the real executor, with a recording provider in place
of a model so that its order and batches are exact. Every wait polls with a deadline.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer

from kernel.config import EmbeddingsConfig, load_config
from kernel.context import RequestContext
from kernel.errors import (
    ConfigInvalid,
    EmbedFailed,
    EmbedNotConfigured,
    InputInvalid,
    ModeForbidden,
)
from kernel.profiles import (
    BUILTIN_LOCAL,
    INPUT_CHARS,
    LOCAL_PIPELINE,
    Profile,
)
from kernel.providers import child_environment
from kernel.store import Store
from memcastle_project.composition import Services, compose
from palace.embeddings import local, providers
from palace.embeddings.job import EmbedSweeper
from palace.embeddings.passages import passages
from palace.embeddings.repository import EmbeddingRepository
from palace.embeddings.service import EmbeddingService
from palace.filing import Filing
from palace.hierarchy import DrawerNotFound
from tests.support.embed_stub import stub_argv, stub_calls
from tests.support.waits import wait_for


def stub_vector(text: str, dimensions: int) -> np.ndarray:
    """What the stub answers for `text`, normalised."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = np.array([digest[i % 32] / 255 + 0.01 for i in range(dimensions)])
    return (raw / np.linalg.norm(raw)).astype(np.float32)


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> EmbeddingsConfig:
    return load_config(config_file=str(config_file(tmp_path, text)), env=env or {}).embeddings


def unit(values: list[float]) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    return (array / np.linalg.norm(array)).astype(np.float32)


# Profiles in the configuration.


def test_a_fresh_install_has_the_local_profile_as_its_default() -> None:
    embeddings = load_config(env={}).embeddings
    assert embeddings.default_profile == "local"
    assert dict(embeddings.profiles) == {"local": BUILTIN_LOCAL}
    assert BUILTIN_LOCAL.provenance() == {
        "provider": "local",
        "model": "all-MiniLM-L6-v2",
        "dimensions": 384,
        "pipeline": LOCAL_PIPELINE,
    }
    assert BUILTIN_LOCAL.can_embed
    assert BUILTIN_LOCAL.batch_size == 16


def test_an_empty_default_profile_means_none() -> None:
    assert (
        load_config(env={"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": ""}).embeddings.default_profile
        is None
    )


def test_profiles_of_every_provider_are_read_with_their_defaults(tmp_path: Path) -> None:
    embeddings = load(
        tmp_path,
        """
[embeddings]
default_profile = "cmd"

[embeddings.profiles.cmd]
provider = "command"
command = ["/usr/bin/embed", "--fast"]
dimensions = 8

[embeddings.profiles.openai]
provider = "http"
url = "https://api.example.com/v1/"
model = "text-embedding-3-small"
api_key = "sk-very-secret-key"
dimensions = 1536
timeout_secs = 5
batch_size = 64

[embeddings.profiles.theirs]
provider = "external"
model = "their-model"
dimensions = 768
pipeline = "their chunker; mean"
""",
    )
    assert embeddings.default_profile == "cmd"
    assert set(embeddings.profiles) == {"local", "cmd", "openai", "theirs"}
    cmd = embeddings.profiles["cmd"]
    assert (cmd.provider, cmd.command, cmd.dimensions, cmd.model) == (
        "command",
        ("/usr/bin/embed", "--fast"),
        8,
        None,
    )
    assert (cmd.timeout_secs, cmd.batch_size) == (30.0, 16)
    assert cmd.pipeline == f"command embed; first {INPUT_CHARS} chars; l2"
    openai = embeddings.profiles["openai"]
    assert openai.url == "https://api.example.com/v1"
    assert (openai.timeout_secs, openai.batch_size, openai.api_key) == (
        5.0,
        64,
        "sk-very-secret-key",
    )
    assert "sk-very-secret-key" not in repr(openai)
    assert "sk-very-secret-key" not in repr(embeddings)
    assert "sk-very-secret-key" not in json.dumps(openai.provenance())
    theirs = embeddings.profiles["theirs"]
    assert not theirs.can_embed
    assert theirs.provenance() == {
        "provider": "external",
        "model": "their-model",
        "dimensions": 768,
        "pipeline": "their chunker; mean",
    }


def test_the_environment_overrides_the_files_default_profile(tmp_path: Path) -> None:
    text = """
[embeddings]
default_profile = "theirs"
[embeddings.profiles.theirs]
provider = "external"
dimensions = 3
"""
    assert load(tmp_path, text).default_profile == "theirs"
    env = {"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": "local"}
    assert load(tmp_path, text, env).default_profile == "local"
    assert (
        load(tmp_path, text, {"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": ""}).default_profile is None
    )


def test_a_table_named_local_replaces_the_built_in_profile(tmp_path: Path) -> None:
    embeddings = load(
        tmp_path, '[embeddings.profiles.local]\nprovider = "external"\ndimensions = 384\n'
    )
    assert embeddings.profiles["local"].provider == "external"


def test_a_default_profile_naming_no_profile_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid) as refused:
        load_config(env={"MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE": "openai"})
    message = refused.value.message
    assert "`embeddings.default_profile`" in message
    assert "MEMCASTLE_EMBEDDINGS_DEFAULT_PROFILE" in message
    assert "'openai'" in message and "local" in message
    assert refused.value.code == "memcastle::config::invalid"
    with pytest.raises(ConfigInvalid) as from_file:
        load(tmp_path, '[embeddings]\ndefault_profile = "nope"\n')
    assert str(tmp_path / "config.toml") in from_file.value.message


@pytest.mark.parametrize(
    ("table", "key", "expected"),
    [
        ("dimensions = 3", "provider", "`local` or `command` or `http` or `external`"),
        ('provider = "torch"', "provider", "`local` or `command`"),
        ('provider = "command"\ndimensions = 3', "command", "the program and its arguments"),
        ('provider = "command"\ncommand = "embed --fast"\ndimensions = 3', "command", "a list"),
        ('provider = "command"\ncommand = []\ndimensions = 3', "command", "a list"),
        ('provider = "command"\ncommand = ["x"]', "dimensions", "a whole number from 1"),
        ('provider = "external"\ndimensions = 0', "dimensions", "a whole number from 1"),
        ('provider = "external"\ndimensions = true', "dimensions", "a whole number"),
        ('provider = "external"\ndimensions = 3.5', "dimensions", "a whole number"),
        ('provider = "http"\ndimensions = 3', "url", "an http:// or https:// URL"),
        ('provider = "http"\nurl = "ftp://x"\ndimensions = 3', "url", "an http:// or https://"),
        ('provider = "local"\ndimensions = 768', "dimensions", "384"),
        ('provider = "local"\nmodel = "bge-small"', "model", "all-MiniLM-L6-v2"),
        ('provider = "local"\nbatch_size = 4', "batch_size", "only command and http use it"),
        ('provider = "local"\npipeline = "x"', "pipeline", "only command and http and external"),
        ('provider = "command"\ncommand = ["x"]\ndimensions = 3\nbatch_size = 0', "batch_size", ""),
        (
            'provider = "command"\ncommand = ["x"]\ndimensions = 3\nbatch_size = 2000',
            "batch_size",
            "",
        ),
        (
            'provider = "command"\ncommand = ["x"]\ndimensions = 3\ntimeout_secs = 0',
            "timeout_secs",
            "",
        ),
        ('provider = "command"\ncommand = ["x"]\ndimensions = 3\nurl = "http://x"', "url", ""),
        ('provider = "external"\ndimensions = 3\nmodel = ""', "model", "a non-empty string"),
    ],
)
def test_a_bad_profile_stops_start_up_naming_its_key(
    tmp_path: Path, table: str, key: str, expected: str
) -> None:
    with pytest.raises(ConfigInvalid) as refused:
        load(tmp_path, f"[embeddings.profiles.p]\n{table}\n")
    message = refused.value.message
    assert f"`embeddings.profiles.p.{key}`" in message
    assert expected in message
    assert str(tmp_path / "config.toml") in message


def test_an_api_key_in_a_refusal_is_never_shown(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid) as refused:
        load(
            tmp_path,
            '[embeddings.profiles.p]\nprovider = "command"\ncommand = ["x"]\ndimensions = 3\n'
            'api_key = "sk-never-shown-anywhere"\n',
        )
    assert "sk-never-shown-anywhere" not in refused.value.message
    assert "<secret>" in refused.value.message


def test_a_profile_name_must_be_simple(tmp_path: Path) -> None:
    with pytest.raises(ConfigInvalid) as refused:
        load(
            tmp_path, '[embeddings.profiles."My Profile"]\nprovider = "external"\ndimensions = 3\n'
        )
    assert "a profile name of lowercase letters" in refused.value.message


def test_unknown_keys_in_a_profile_are_ignored(tmp_path: Path) -> None:
    embeddings = load(
        tmp_path,
        '[embeddings.profiles.p]\nprovider = "external"\ndimensions = 3\ncolour = "blue"\n',
    )
    assert embeddings.profiles["p"].dimensions == 3


# Choosing a profile and checking a caller's vector.


@pytest.fixture
def service(store: Store, tmp_path: Path) -> EmbeddingService:
    config = load(
        tmp_path,
        """
[embeddings]
default_profile = "local"
[embeddings.profiles.theirs]
provider = "external"
dimensions = 4
""",
    )
    return EmbeddingService(EmbeddingRepository(store), config)


def test_no_name_is_the_default_profile_and_an_unknown_name_is_refused(
    service: EmbeddingService, store: Store
) -> None:
    assert service.profile(None) is service.default is service.profiles["local"]
    assert service.profile("") is service.default
    assert service.profile("theirs").provider == "external"
    with pytest.raises(InputInvalid) as refused:
        service.profile("openai", "search.profile")
    assert refused.value.field == "search.profile"
    assert "'openai'" in refused.value.message
    assert "local, theirs" in refused.value.message
    with pytest.raises(InputInvalid):
        service.profile(7)  # type: ignore[arg-type]
    without = EmbeddingService(EmbeddingRepository(store), EmbeddingsConfig(default_profile=None))
    assert without.default is None
    with pytest.raises(EmbedNotConfigured) as not_configured:
        without.profile(None)
    assert not_configured.value.status == 400
    assert not_configured.value.code == "memcastle::embed::not_configured"


def test_an_external_profile_cannot_embed_text(service: EmbeddingService) -> None:
    theirs = service.profile("theirs")
    assert not theirs.can_embed
    with pytest.raises(EmbedNotConfigured):
        service.embed_query(theirs, "hello")


def test_a_callers_vector_comes_back_normalised(service: EmbeddingService) -> None:
    theirs = service.profile("theirs")
    vector = service.check_vector(theirs, [3, 0, 4.0, 0], "query_embedding")
    assert vector.dtype == np.float32
    assert vector.tolist() == pytest.approx([0.6, 0.0, 0.8, 0.0])
    huge = service.check_vector(theirs, [1e308, 1e308, 0, 0], "e")
    assert huge.tolist() == pytest.approx([math.sqrt(0.5), math.sqrt(0.5), 0, 0])
    tiny = service.check_vector(theirs, [1e-310, 0, 0, 0], "e")
    assert tiny.tolist() == pytest.approx([1, 0, 0, 0])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([1, 2, 3], "has 3 numbers; profile 'theirs' has 4 dimensions"),
        ([1, 2, 3, 4, 5], "has 5 numbers; profile 'theirs' has 4 dimensions"),
        ([], "has 0 numbers"),
        ("1,2,3,4", "must be a list of 4 numbers"),
        ({"0": 1}, "must be a list of 4 numbers"),
        (None, "must be a list of 4 numbers"),
        ([1, 2, "3", 4], "finite numbers (item 2 is '3')"),
        ([1, True, 3, 4], "finite numbers (item 1 is True)"),
        ([1, None, 3, 4], "finite numbers"),
        ([1, [2], 3, 4], "finite numbers"),
        ([1, float("nan"), 3, 4], "finite numbers"),
        ([1, float("inf"), 3, 4], "finite numbers"),
        ([1, 10**400, 3, 4], "finite numbers"),
        ([0, 0, 0.0, -0.0], "is all zeros"),
    ],
)
def test_a_bad_vector_is_refused_naming_the_field(
    service: EmbeddingService, raw: object, expected: str
) -> None:
    with pytest.raises(InputInvalid) as refused:
        service.check_vector(service.profile("theirs"), raw, "query_embedding")
    assert refused.value.field == "query_embedding"
    assert refused.value.code == "memcastle::input::invalid"
    assert expected in refused.value.message


# The local provider: all-MiniLM-L6-v2 from the pinned wheel.


@pytest.fixture(scope="module")
def minilm() -> local.MiniLM:
    return local.model()


@pytest.fixture(scope="module")
def unquantized() -> local.MiniLM:
    """The float graph, which the reference figures of sentence-transformers are for."""
    return local.MiniLM(quantized=False)


def test_hello_world_matches_sentence_transformers(unquantized: local.MiniLM) -> None:
    vector = unquantized.embed_query("hello world")
    assert vector.shape == (384,) and vector.dtype == np.float32
    assert vector[:5].tolist() == pytest.approx(
        [-0.034477, 0.031023, 0.006735, 0.026109, -0.039362], abs=1e-4
    )
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)


def test_similar_sentences_have_the_reference_similarity(
    minilm: local.MiniLM, unquantized: local.MiniLM
) -> None:
    for model, within in ((unquantized, 0.001), (minilm, 0.01)):
        food = model.embed_query("A man is eating food.")
        bread = model.embed_query("A man is eating a piece of bread.")
        horse = model.embed_query("A man is riding a horse.")
        assert float(food @ bread) == pytest.approx(0.7553, abs=within)
        assert float(food @ horse) < float(food @ bread)


def test_the_quantized_model_stays_close_to_the_float_one(
    minilm: local.MiniLM, unquantized: local.MiniLM
) -> None:
    """0.995 or more: with each product's input quantized on one scale these texts were at 0.991
    to 0.995; row by row (scripts/gen_minilm_onnx.py, `by_rows`) 0.996 to 0.997."""
    texts = ["hello world", "yes, the blue one", "what did Caroline say in May", LONG]
    quantized, reference = minilm.embed_documents(texts), unquantized.embed_documents(texts)
    for ours, theirs in zip(quantized, reference, strict=True):
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert np.sum(ours * theirs, axis=1).min() >= 0.995


LONG = " ".join(f"word{n} alpha beta" for n in range(300))


def test_a_long_text_is_every_window_of_256_tokens_sharing_32(minilm: local.MiniLM) -> None:
    windows = minilm.windows(LONG)
    assert len(windows) == 7
    assert all(len(window) <= 256 for window in windows)
    assert [len(window) for window in windows[:-1]] == [256] * 6
    for window in windows:
        assert window[0] == 101 and window[-1] == 102  # [CLS] ... [SEP]
    for before, after in itertools.pairwise(windows):
        assert before[-33:-1] == after[1:33]
    # Together the windows cover every token of the text.
    untruncated = Tokenizer.from_str(minilm.tokenizer.to_str())
    untruncated.no_truncation()
    whole = untruncated.encode(LONG, add_special_tokens=False).ids
    rebuilt = windows[0][1:-1] + [t for window in windows[1:] for t in window[33:-1]]
    assert rebuilt == whole


def test_a_drawer_is_all_its_windows_and_a_query_its_first(minilm: local.MiniLM) -> None:
    short, long = minilm.embed_documents(["hello world", LONG])
    assert short.shape == (1, 384)
    assert long.shape == (7, 384)
    np.testing.assert_allclose(np.linalg.norm(long, axis=1), 1.0, atol=1e-5)
    # Padding to the longest window of a batch changes nothing.
    np.testing.assert_allclose(short[0], minilm.embed_query("hello world"), atol=1e-5)
    np.testing.assert_allclose(long[0], minilm.embed_query(LONG), atol=1e-5)
    assert float(long[0] @ long[-1]) < 0.999  # different windows, different vectors


# A session of the conversational benchmark (tests/eval/conversations.py), whose answer to "What
# does Hannah drive?" is one turn among fourteen.
SESSION = "\n".join(
    [
        "Grace: hi!",
        "Grace: seen the new cafe on the corner?",
        "Hannah: tried it, the cake is good",
        "Hannah: did you see the game last night?",
        "Grace: only the second half, what a mess",
        "Grace: how do you get around?",
        "Hannah: an old Volvo estate mostly",
        "Grace: oh no",
        "Grace: I'm saving up for a trip to Japan next year",
        "Hannah: ugh, sorry",
        "Grace: what should I watch next?",
        "Hannah: Bake Off, trust me",
        "Grace: haha love that",
        "Hannah: ttyl",
    ]
)


def test_a_conversation_is_its_windows_then_its_passages(minilm: local.MiniLM) -> None:
    (vectors,) = minilm.embed_documents([SESSION])
    found = passages(SESSION)
    assert vectors.shape == (1 + len(found), 384) and len(found) == 14 - 6 + 1
    np.testing.assert_allclose(vectors[0], minilm.embed_query(SESSION), atol=1e-5)
    np.testing.assert_allclose(vectors[-1], minilm.embed_query(found[-1]), atol=1e-5)
    # The passage nearest the question holds its answer, and is nearer it than the session.
    question = minilm.embed_query("What does Hannah drive?")
    nearest = int(np.argmax(vectors[1:] @ question))
    assert "Volvo" in found[nearest]
    assert float(vectors[1 + nearest] @ question) > float(vectors[0] @ question) + 0.05


def test_windows_embedded_at_once_are_each_what_they_are_alone(minilm: local.MiniLM) -> None:
    """The windows of one call are shared between the model's callers (one thread each): a
    window's vector is the same, to the bit, whoever ran it and beside whatever."""
    windows = [*minilm.windows(LONG), *minilm.windows("yes, the blue one"), [101, 7592, 102]]
    together = minilm.embed_windows(windows)
    alone = np.stack([minilm.embed_windows([window])[0] for window in windows])
    np.testing.assert_array_equal(together, alone)


def test_the_model_is_loaded_once_even_when_asked_from_many_threads(
    minilm: local.MiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[int] = []

    def slow_load() -> local.MiniLM:
        loads.append(1)
        time.sleep(0.2)  # every thread asks while the first load is under way
        return minilm

    monkeypatch.setattr(local, "_model", None)
    monkeypatch.setattr(local, "_load", slow_load)
    found: list[local.MiniLM] = []
    threads = [threading.Thread(target=lambda: found.append(local.model())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(found) == 4 and all(model is minilm for model in found)
    assert len(loads) == 1


def test_weights_other_than_the_graphs_are_refused(tmp_path: Path) -> None:
    source = local.model_dir()
    for name in ("tokenizer.json", "config.json"):
        (tmp_path / name).symlink_to(source / name)
    weights = bytearray((source / local.WEIGHTS).read_bytes())
    at = weights.index(b'"format":"pt"')
    weights[at : at + 13] = b'"format":"px"'  # same offsets, another header
    (tmp_path / local.WEIGHTS).write_bytes(bytes(weights))
    with pytest.raises(EmbedFailed) as refused:
        local.MiniLM(tmp_path)
    assert "not the ones its graph was made for" in refused.value.message


def test_a_model_that_cannot_load_fails_as_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "model_dir", lambda: tmp_path)
    with pytest.raises(EmbedFailed) as failed:
        local._load()
    assert "the local embedding model could not be loaded" in failed.value.message


def test_the_local_provider_is_used_through_the_service(
    service: EmbeddingService, minilm: local.MiniLM
) -> None:
    vector = service.embed_query(service.profile("local"), "hello world")
    np.testing.assert_allclose(vector, minilm.embed_query("hello world"), atol=1e-6)


# The command provider.


def command_profile(tmp_path: Path, mode: str = "good", **settings: Any) -> Profile:
    return Profile(
        name="stub",
        provider="command",
        model=settings.pop("model", "stub-model"),
        dimensions=settings.pop("dimensions", 6),
        pipeline="command stub",
        command=tuple(stub_argv(tmp_path, mode, settings.pop("delay", 0.0))),
        **settings,
    )


def test_the_command_gets_json_on_stdin_and_answers_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCASTLE_AUTH_TOKEN", "never-for-the-child-0000")
    monkeypatch.setenv("MEMCASTLE_PALACE_PATH", "/somewhere")
    monkeypatch.setenv("EMBED_STUB_MARK", "kept")
    provider = providers.CommandProvider(command_profile(tmp_path, batch_size=2))
    texts = ["first", "second", "third " + "x" * 9000]
    vectors = provider.embed_documents(texts)
    assert [v.shape for v in vectors] == [(1, 6)] * 3
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector[0], stub_vector(text[:INPUT_CHARS], 6), atol=1e-6)
    calls = stub_calls(tmp_path)
    # Once per batch of batch_size, the texts cut to their first 8,000 characters.
    assert [call["texts"] for call in calls] == [["first", "second"], [texts[2][:INPUT_CHARS]]]
    assert all(call["model"] == "stub-model" and call["dimension"] == 6 for call in calls)
    assert all(call["memcastle_env"] == [] for call in calls)
    assert all(call["other_env"] == "kept" for call in calls)
    query = provider.embed_query("what is it")
    np.testing.assert_allclose(query, stub_vector("what is it", 6), atol=1e-6)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("fail", "exited with status 3: the model server is down"),
        ("garbage", "wrote output that is not JSON"),
        ("noobject", 'wrote no {"embeddings": [...]} object'),
        ("fewer", "returned 1 embeddings for 2 texts"),
        ("short", "returned 5 numbers for text 0; the profile 'stub' has 6 dimensions"),
        ("zero", "an all-zero or non-finite vector"),
    ],
)
def test_a_failing_command_fails_the_call(tmp_path: Path, mode: str, expected: str) -> None:
    provider = providers.CommandProvider(command_profile(tmp_path, mode))
    with pytest.raises(EmbedFailed) as failed:
        provider.embed_documents(["one", "two"])
    assert failed.value.status == 502
    assert failed.value.code == "memcastle::embed::failed"
    assert expected in failed.value.message
    if mode == "fail":
        assert len(failed.value.message) < 500  # only the start of stderr


def test_a_command_that_cannot_start_fails_the_call(tmp_path: Path) -> None:
    profile = Profile(
        name="gone",
        provider="command",
        model=None,
        dimensions=3,
        pipeline="p",
        command=(str(tmp_path / "no-such-program"),),
    )
    with pytest.raises(EmbedFailed) as failed:
        providers.CommandProvider(profile).embed_query("x")
    assert "could not be started" in failed.value.message


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def test_a_command_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    provider = providers.CommandProvider(command_profile(tmp_path, "hang", timeout_secs=1.0))
    started = time.monotonic()
    with pytest.raises(EmbedFailed) as failed:
        provider.embed_query("x")
    assert time.monotonic() - started < 10
    assert "did not answer within 1 s and was killed" in failed.value.message
    (call,) = stub_calls(tmp_path)
    wait_for(lambda: _gone(call["grandchild"]), timeout=10, what="the command's child to die")


# The HTTP provider, against a real server on this machine.


class Endpoint:
    """An OpenAI-style /embeddings endpoint whose answer the test chooses by URL path."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                mode = self.path.split("/")[1]
                if mode == "down":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "sk-secret-in-body"}')
                    return
                size = body["dimensions"]
                data = [
                    {"index": i, "embedding": [float(i + 1)] * size}
                    for i in range(len(body["input"]))
                ]
                answer: Any = {"data": list(reversed(data)), "model": body.get("model")}
                if mode == "odd":
                    answer = {"result": "nothing"}
                payload = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.close()


def http_profile(url: str, **settings: Any) -> Profile:
    return Profile(
        name="openai",
        provider="http",
        model=settings.pop("model", "text-embedding-3-small"),
        dimensions=3,
        pipeline="http",
        url=url,
        **settings,
    )


def test_the_http_provider_posts_openai_requests_with_the_bearer_key(endpoint: Endpoint) -> None:
    provider = providers.HttpProvider(
        http_profile(f"{endpoint.url}/ok/v1", api_key="sk-test-key-1234", batch_size=2)
    )
    vectors = provider.embed_documents(["a", "b", "c" * 9000])
    # Answers are put back in input order by their `index`.
    assert [v[0].tolist() for v in vectors] == [pytest.approx([1 / math.sqrt(3)] * 3)] * 3
    assert [r["path"] for r in endpoint.requests] == ["/ok/v1/embeddings"] * 2
    first, second = (r["body"] for r in endpoint.requests)
    assert first == {"model": "text-embedding-3-small", "input": ["a", "b"], "dimensions": 3}
    assert second["input"] == ["c" * INPUT_CHARS]
    assert all(
        r["headers"]["Authorization"] == "Bearer sk-test-key-1234" for r in endpoint.requests
    )


def test_the_http_provider_sends_no_authorization_without_a_key(endpoint: Endpoint) -> None:
    providers.HttpProvider(http_profile(f"{endpoint.url}/ok")).embed_query("a")
    assert "Authorization" not in endpoint.requests[0]["headers"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [("down", "answered HTTP 500 Internal Server Error"), ("odd", "OpenAI-style")],
)
def test_a_failing_endpoint_fails_the_call_with_its_status(
    endpoint: Endpoint, path: str, expected: str
) -> None:
    provider = providers.HttpProvider(
        http_profile(f"{endpoint.url}/{path}", api_key="sk-secret-in-key")
    )
    with pytest.raises(EmbedFailed) as failed:
        provider.embed_query("a")
    assert expected in failed.value.message
    assert "sk-secret" not in failed.value.message


@contextlib.contextmanager
def free_port() -> Iterator[int]:
    """A port nothing listens on, for as long as the block runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_an_unreachable_endpoint_fails_the_call() -> None:
    with free_port() as port:
        provider = providers.HttpProvider(http_profile(f"http://127.0.0.1:{port}", timeout_secs=2))
        with pytest.raises(EmbedFailed) as failed:
            provider.embed_query("a")
    assert "could not be reached (ConnectError)" in failed.value.message


# Stored vectors, the PUT service and the embed job, in-process.


class Recording:
    """A provider that records each call and answers stub vectors; `during` runs inside a call
    (to pause, cancel or delete while a batch is being embedded)."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.calls: list[list[str]] = []
        self.during: Callable[[int], None] | None = None
        self.fail_at: int | None = None

    def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        self.calls.append(list(texts))
        if self.during is not None:
            self.during(len(self.calls))
        if self.fail_at == len(self.calls):
            raise EmbedFailed("the embedding command of profile 'stub' exited with status 3")
        return [stub_vector(text, self.dimensions)[None, :] for text in texts]

    def embed_query(self, text: str) -> np.ndarray:
        return stub_vector(text, self.dimensions)

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


CONFIG = """
[embeddings]
default_profile = "stub"
[embeddings.profiles.stub]
provider = "command"
command = ["/bin/false"]
dimensions = 4
batch_size = 3
[embeddings.profiles.theirs]
provider = "external"
dimensions = 2
"""


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    made = Recording(4)
    monkeypatch.setattr(providers, "for_profile", lambda profile: made)
    return made


def build(store: Store, tmp_path: Path, text: str = CONFIG) -> Services:
    config = load_config(config_file=str(config_file(tmp_path, text)), env={})
    return compose(config, store)


@pytest.fixture
def daemon(store: Store, tmp_path: Path) -> Services:
    return build(store, tmp_path)


CTX = RequestContext.build()


def file_drawers(daemon: Services, wing: str, count: int, prefix: str = "") -> list[str]:
    """Drawers filed one at a time, so each has a later created_at than the one before."""
    ids = []
    for n in range(count):
        drawer, _ = daemon.filing.file(
            CTX, wing, "room", Filing(content=f"{prefix}{wing} memory number {n}")
        )
        ids.append(drawer["id"])
    return ids


def content_of(daemon: Services, drawer_id: str) -> str:
    return daemon.hierarchy.show_drawer_by_id(CTX, drawer_id)["content"]


def test_missing_lists_the_drawers_without_a_vector_oldest_first(daemon: Services) -> None:
    ids = file_drawers(daemon, "w", 3)
    (elsewhere,) = file_drawers(daemon, "other", 1)
    theirs = daemon.embeddings.profile("theirs")
    daemon.embeddings.store_vectors(theirs, {ids[1]: np.array([[1.0, 0.0]], dtype=np.float32)})
    wing_id = daemon.hierarchy.find_wing("w")["id"]
    assert daemon.embeddings.missing(theirs, wing_id) == [ids[0], ids[2]]
    assert daemon.embeddings.missing(theirs, None) == [ids[0], ids[2], elsewhere]
    assert daemon.embeddings.missing(daemon.embeddings.profile("stub"), wing_id) == ids


def test_contents_are_those_of_the_drawers_that_exist(daemon: Services) -> None:
    (drawer,) = file_drawers(daemon, "w", 1)
    gone = str(uuid.uuid4())
    assert daemon.embeddings.contents([drawer, gone]) == {drawer: "w memory number 0"}


def run_embed(daemon: Services, **params: Any) -> dict[str, Any]:
    job = daemon.jobs.submit(CTX, {"type": "embed", **params})
    daemon.executor.execute(job["id"])
    row = daemon.jobs.record(job["id"])
    assert row is not None
    return row


def test_attach_stores_a_callers_vector_with_its_profiles_provenance(
    daemon: Services,
) -> None:
    (drawer,) = file_drawers(daemon, "w", 1)
    answer = daemon.embeddings.attach(CTX, drawer, {"profile": "theirs", "embedding": [3, 4]})
    provenance = {
        "provider": "external",
        "model": None,
        "dimensions": 2,
        "pipeline": "external: vectors supplied by callers; l2",
    }
    assert answer == {
        "drawer": drawer,
        "profile": "theirs",
        "dimensions": 2,
        "provenance": provenance,
    }
    row = EmbeddingRepository(daemon.store).get(drawer, "theirs")
    assert row is not None
    assert row["vectors"] == [pytest.approx([0.6, 0.8])]
    assert row["provenance"] == provenance
    assert row["id"] == [drawer, "theirs"] and row["drawer"] == drawer
    # Replacing it is allowed; another profile's vector is kept beside it.
    daemon.embeddings.attach(CTX, drawer, {"profile": "theirs", "embedding": [0, 1]})
    daemon.embeddings.attach(CTX, drawer, {"profile": "stub", "embedding": [1, 0, 0, 0]})
    assert EmbeddingRepository(daemon.store).get(drawer, "theirs")["vectors"] == [[0.0, 1.0]]
    assert EmbeddingRepository(daemon.store).embedded("stub") == {drawer}
    # A drawer's view never carries a vector.
    view = daemon.hierarchy.show_drawer_by_id(CTX, drawer)
    assert not {"embedding", "embeddings", "vectors"} & set(view)


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        ({"embedding": [1, 2]}, "profile", "is required: name the configured embedding profile"),
        ({"profile": "", "embedding": [1, 2]}, "profile", "is required"),
        ({"profile": "openai", "embedding": [1, 2]}, "profile", "local, stub, theirs"),
        ({"profile": "theirs"}, "embedding", "is required: a list of 2 numbers"),
        ({"profile": "theirs", "embedding": [1, 2, 3]}, "embedding", "has 2 dimensions"),
        ({"profile": "theirs", "embedding": [1, 2], "vector": []}, "vector", "known:"),
    ],
)
def test_attach_refuses_bad_bodies_naming_the_field(
    daemon: Services, body: dict[str, Any], field: str, expected: str
) -> None:
    (drawer,) = file_drawers(daemon, "w", 1)
    with pytest.raises(InputInvalid) as refused:
        daemon.embeddings.attach(CTX, drawer, body)
    assert refused.value.field == field
    assert expected in refused.value.message


def test_attach_to_a_missing_drawer_is_not_found_and_stores_nothing(
    daemon: Services,
) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(DrawerNotFound):
        daemon.embeddings.attach(CTX, missing, {"profile": "theirs", "embedding": [1, 2]})
    assert EmbeddingRepository(daemon.store).get(missing, "theirs") is None
    with pytest.raises(InputInvalid) as refused:
        daemon.embeddings.attach(CTX, "not-a-uuid", {"profile": "theirs", "embedding": [1, 2]})
    assert refused.value.field == "id"


def test_attach_is_a_write(daemon: Services) -> None:
    (drawer,) = file_drawers(daemon, "w", 1)
    for mode in ("read_only", "disabled"):
        with pytest.raises(ModeForbidden):
            daemon.embeddings.attach(
                RequestContext.build(mode=mode), drawer, {"profile": "theirs", "embedding": [1, 2]}
            )
    assert EmbeddingRepository(daemon.store).get(drawer, "theirs") is None


def test_a_deleted_drawer_takes_its_vectors_with_it(daemon: Services) -> None:
    kept, deleted = file_drawers(daemon, "w", 2)
    other = file_drawers(daemon, "gone", 1)[0]
    for drawer in (kept, deleted, other):
        daemon.embeddings.attach(CTX, drawer, {"profile": "theirs", "embedding": [1, 2]})
    daemon.hierarchy.delete_drawer(CTX, "w", "room", deleted)
    daemon.hierarchy.delete_wing(CTX, "gone")
    assert EmbeddingRepository(daemon.store).embedded("theirs") == {kept}
    assert EmbeddingRepository(daemon.store).get(deleted, "theirs") is None
    assert EmbeddingRepository(daemon.store).get(other, "theirs") is None


def test_the_embed_job_embeds_the_oldest_first_in_batches(
    daemon: Services, recording: Recording
) -> None:
    ids = file_drawers(daemon, "w", 7)
    # A superseded drawer is embedded too; its replacement is newer than all the others.
    revision = daemon.revisions.supersede(CTX, ids[2], {"content": "w memory number 2, corrected"})
    replacement = revision["replacement"]["id"]
    row = run_embed(daemon)
    assert row["status"] == "completed"
    assert row["result"] == {"embedded": 8, "profile": "stub"}
    assert row["progress"] == {"current": 8, "total": 8, "message": "done"}
    expected = [content_of(daemon, drawer) for drawer in [*ids, replacement]]
    assert recording.calls == [expected[0:3], expected[3:6], expected[6:8]]
    assert EmbeddingRepository(daemon.store).embedded("stub") == {*ids, replacement}
    stored = EmbeddingRepository(daemon.store).get(ids[0], "stub")
    assert stored is not None
    assert stored["provenance"] == daemon.embeddings.profile("stub").provenance()
    np.testing.assert_allclose(stored["vectors"][0], stub_vector(expected[0], 4), atol=1e-6)
    # Nothing is left: the next run embeds nothing.
    again = run_embed(daemon)
    assert again["result"] == {"embedded": 0, "profile": "stub"}
    assert again["progress"]["message"] == "nothing left to embed"
    assert len(recording.calls) == 3


def test_the_embed_job_skips_drawers_that_already_have_a_vector(
    daemon: Services, recording: Recording
) -> None:
    ids = file_drawers(daemon, "w", 4)
    daemon.embeddings.attach(CTX, ids[1], {"profile": "stub", "embedding": [1, 0, 0, 0]})
    daemon.embeddings.attach(CTX, ids[2], {"profile": "theirs", "embedding": [1, 0]})
    row = run_embed(daemon)
    assert row["result"] == {"embedded": 3, "profile": "stub"}
    assert recording.texts == [content_of(daemon, d) for d in (ids[0], ids[2], ids[3])]
    # The caller's vector was kept.
    assert EmbeddingRepository(daemon.store).get(ids[1], "stub")["vectors"] == [[1.0, 0, 0, 0]]


def test_the_embed_job_can_be_limited_to_one_wing(daemon: Services, recording: Recording) -> None:
    mine = file_drawers(daemon, "mine", 2)
    others = file_drawers(daemon, "others", 2)
    row = run_embed(daemon, wing="mine")
    assert row["kind"] == {"type": "embed", "wing": "mine"}
    assert row["result"] == {"embedded": 2, "profile": "stub"}
    assert EmbeddingRepository(daemon.store).embedded("stub") == set(mine)
    assert run_embed(daemon)["result"]["embedded"] == 2
    assert EmbeddingRepository(daemon.store).embedded("stub") == {*mine, *others}


def test_a_paused_embed_job_resumes_without_embedding_twice(
    daemon: Services, recording: Recording
) -> None:
    ids = file_drawers(daemon, "w", 8)
    job = daemon.jobs.submit(CTX, {"type": "embed"})

    def pause_during_the_second_batch(call: int) -> None:
        if call == 2:
            daemon.jobs.control("pause", job["id"])

    recording.during = pause_during_the_second_batch
    daemon.executor.execute(job["id"])
    row = daemon.jobs.record(job["id"])
    assert row["status"] == "paused"
    assert row["checkpoint"] == {"embedded": 6, "profile": "stub"}
    assert row["progress"] == {"current": 6, "total": 8, "message": "drawer 6 of 8"}
    assert len(EmbeddingRepository(daemon.store).embedded("stub")) == 6
    recording.during = None
    daemon.jobs.control("resume", job["id"])
    daemon.executor.execute(job["id"])
    row = daemon.jobs.record(job["id"])
    assert row["status"] == "completed"
    assert row["result"] == {"embedded": 8, "profile": "stub"}
    assert row["progress"]["current"] == row["progress"]["total"] == 8
    assert recording.texts == [content_of(daemon, d) for d in ids]


def test_a_cancelled_embed_job_keeps_what_it_stored(daemon: Services, recording: Recording) -> None:
    file_drawers(daemon, "w", 8)
    job = daemon.jobs.submit(CTX, {"type": "embed"})
    recording.during = lambda call: call == 1 and daemon.jobs.control("cancel", job["id"])
    daemon.executor.execute(job["id"])
    assert daemon.jobs.record(job["id"])["status"] == "cancelled"
    assert len(EmbeddingRepository(daemon.store).embedded("stub")) == 3


def test_a_drawer_deleted_during_its_batch_is_not_embedded(
    daemon: Services, recording: Recording
) -> None:
    ids = file_drawers(daemon, "w", 4)

    def delete_one(call: int) -> None:
        if call == 1:
            daemon.hierarchy.delete_drawer(CTX, "w", "room", ids[1])

    recording.during = delete_one
    row = run_embed(daemon)
    assert row["result"] == {"embedded": 3, "profile": "stub"}
    assert row["progress"]["total"] == 3
    assert EmbeddingRepository(daemon.store).embedded("stub") == {ids[0], ids[2], ids[3]}
    assert EmbeddingRepository(daemon.store).get(ids[1], "stub") is None


def test_a_failing_provider_fails_the_job_and_keeps_the_batches_before(
    daemon: Services, recording: Recording
) -> None:
    file_drawers(daemon, "w", 7)
    recording.fail_at = 2
    row = run_embed(daemon)
    assert row["status"] == "failed"
    assert row["error_code"] == "memcastle::embed::failed"
    assert "exited with status 3" in row["error"]
    assert len(EmbeddingRepository(daemon.store).embedded("stub")) == 3


def test_embed_needs_a_default_profile_that_can_embed(store: Store, tmp_path: Path) -> None:
    for default in ('""', '"theirs"'):
        daemon = build(store, tmp_path, CONFIG.replace('"stub"', default, 1))
        with pytest.raises(EmbedNotConfigured):
            daemon.jobs.submit(CTX, {"type": "embed"})


@pytest.mark.parametrize(
    ("body", "field"), [({"wing": 3}, "wing"), ({"wing": ""}, "wing"), ({"path": "/x"}, "path")]
)
def test_a_bad_embed_job_is_refused_at_submission(
    daemon: Services, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputInvalid) as refused:
        daemon.jobs.submit(CTX, {"type": "embed", **body})
    assert refused.value.field == field


def test_an_embed_job_is_a_write(daemon: Services) -> None:
    with pytest.raises(ModeForbidden):
        daemon.jobs.submit(RequestContext.build(mode="read_only"), {"type": "embed"})


# Automatic embed jobs.


def queued_embed_jobs(daemon: Services) -> list[dict[str, Any]]:
    return daemon.jobs.list_jobs(CTX, status="queued", kind="embed")["jobs"]


def test_the_sweeper_queues_at_most_one_waiting_embed_job(daemon: Services) -> None:
    sweeper = EmbedSweeper(daemon)
    first = sweeper.queue()
    assert first is not None and first["requested_by"] == "auto"
    assert first["priority"] == 25
    assert sweeper.queue() is None
    assert [job["id"] for job in queued_embed_jobs(daemon)] == [first["id"]]


def test_the_sweeper_follows_drawer_writes_until_the_bus_closes(
    daemon: Services,
) -> None:
    sweeper = EmbedSweeper(daemon)
    sweeper.start()
    started = wait_for(lambda: queued_embed_jobs(daemon), timeout=10, what="the start-up job")
    daemon.jobs.control("cancel", started[0]["id"])
    wait_for(lambda: daemon.events.subscriber_count == 1, timeout=10, what="the sweeper to follow")
    file_drawers(daemon, "w", 5)
    after = wait_for(lambda: queued_embed_jobs(daemon), timeout=10, what="a job after writes")
    assert len(after) == 1
    daemon.events.close()
    assert sweeper._thread is not None
    sweeper._thread.join(10)
    assert not sweeper._thread.is_alive()


def test_no_sweeps_without_a_default_profile_that_can_embed(store: Store, tmp_path: Path) -> None:
    for default in ('""', '"theirs"'):
        daemon = build(store, tmp_path, CONFIG.replace('"stub"', default, 1))
        sweeper = EmbedSweeper(daemon)
        assert not sweeper.enabled
        sweeper.start()
        assert sweeper._thread is None
        assert queued_embed_jobs(daemon) == []


def test_child_environment_drops_every_memcastle_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCASTLE_ANYTHING", "x")
    monkeypatch.setenv("NOT_MEMCASTLE_X", "y")
    env = child_environment()
    assert not [key for key in env if key.startswith("MEMCASTLE_")]
    assert env["NOT_MEMCASTLE_X"] == "y"
    assert env.get("PATH") == os.environ.get("PATH")
