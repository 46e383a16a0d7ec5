"""Registries without a daemon (sources.md 6): the index read strictly in both forms, the version
chosen, where a registry may be and what it may send the daemon to, the size limits counted as
the bytes arrive, the releases of a repository entry, the trust policy, signing keys, and the
index `memcastle source index` writes."""

from __future__ import annotations

import base64
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernel.config import load_config
from kernel.errors import ConfigInvalid, InputInvalid
from sources.archive import write_package
from sources.registry_fetch import Fetcher, index_url, release_url
from sources.registry_index import (
    MAX_INDEX_BYTES,
    Entry,
    NotInRegistry,
    RegistryUnavailable,
    choose,
    parse_index,
    parse_spec,
)
from sources.registry_publish import write_index
from sources.registry_releases import resolve
from sources.signing import (
    Signature,
    SigningFailed,
    TrustPolicy,
    Untrusted,
    key_id,
    keygen,
    load_private_key,
    public_text,
    sign,
)
from tests.support.components import manifest
from tests.support.static_server import StaticServer

SHA = "a" * 64
COMPONENT = b"\0asm\x0d\x00\x01\x00"


def version(number: str, **extra: Any) -> dict[str, Any]:
    entry = {
        "version": number,
        "contract": "0.4",
        "memcastle": ">=0.1",
        "url": f"notes-{number}.tar.gz",
        "sha256": SHA,
        "yanked": False,
    }
    return {**entry, **extra}


def index(*versions: dict[str, Any], **source: Any) -> bytes:
    entry = {"name": "notes", "description": "plain notes", "versions": list(versions), **source}
    return json.dumps({"format": 1, "name": "test", "sources": [entry]}).encode()


def test_an_index_of_versions_is_read() -> None:
    signature = {"key": "0123456789abcdef", "value": "c2ln"}
    read = parse_index(index(version("1.0.0", size=10, signature=signature)), "here")
    entry = read.find("notes")
    assert entry is not None and entry.description == "plain notes"
    (release,) = entry.releases
    assert release.size == 10 and release.signature == Signature("0123456789abcdef", "c2ln")
    assert read.find("other") is None


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"format": 1, "name": "x", "sources": [], "mirrors": []}, "`mirrors` is not an index key"),
        ({"format": 2, "name": "x", "sources": []}, "`format` must be 1"),
        ({"format": True, "name": "x", "sources": []}, "`format` must be 1"),
        ({"format": 1, "sources": []}, "`.name` must be a non-empty string"),
        (
            {"format": 1, "name": "x", "sources": [{"name": "a", "description": "d"}]},
            "either `versions` or `repository`",
        ),
        (
            json.loads(index(version("1.0.0", yankd=True))),
            "`sources[0].versions[0].yankd` is not an index key",
        ),
        (json.loads(index({**version("1.0.0"), "yanked": "no"})), "yanked` must be true or false"),
        (json.loads(index(version("1.0"))), "must be a semantic version"),
        (json.loads(index(version("1.0.0", sha256="ABC"))), "64 lowercase hex digits"),
        (json.loads(index(version("1.0.0"), version("1.0.0"))), "lists a version more than once"),
        (
            json.loads(index(version("1.0.0", signature={"key": "k", "value": "v"}))),
            "a key id",
        ),
    ],
)
def test_an_index_is_read_strictly(document: object, named: str) -> None:
    with pytest.raises(RegistryUnavailable) as refused:
        parse_index(json.dumps(document).encode(), "https://example.org/memcastle-index.json")
    assert named in refused.value.message
    assert "https://example.org/memcastle-index.json" in refused.value.message
    assert refused.value.status == 502


def test_an_index_that_is_not_json_or_too_large_is_unavailable() -> None:
    with pytest.raises(RegistryUnavailable, match="not UTF-8 JSON"):
        parse_index(b"{nope", "here")
    with pytest.raises(RegistryUnavailable, match="larger than 4 MiB"):
        parse_index(b" " * (MAX_INDEX_BYTES + 1), "here")


def test_a_repository_entry_is_read() -> None:
    document = {
        "format": 1,
        "name": "x",
        "sources": [{"name": "notes", "description": "d", "repository": "acme/notes"}],
    }
    entry = parse_index(json.dumps(document).encode(), "here").find("notes")
    assert entry is not None and entry.repository == "acme/notes" and entry.releases == ()


def test_the_highest_compatible_version_not_yanked_is_chosen_and_a_pin_takes_any() -> None:
    entry = parse_index(
        index(
            version("1.0.0"),
            version("1.10.0"),
            version("1.9.0"),
            version("2.0.0", yanked=True),
            version("3.0.0", contract="0.3"),
        ),
        "here",
    ).find("notes")
    assert entry is not None
    assert choose(entry, None, "here").version == "1.10.0"
    assert choose(entry, "2.0.0", "here").version == "2.0.0"  # yanked, but pinned
    with pytest.raises(NotInRegistry, match="cannot run here"):
        choose(entry, "3.0.0", "here")
    with pytest.raises(NotInRegistry, match=r"does not offer notes 4\.0\.0"):
        choose(entry, "4.0.0", "here")
    only_yanked = Entry("notes", "d", releases=(entry.releases[3],))
    with pytest.raises(NotInRegistry):
        choose(only_yanked, None, "here")


def test_a_spec_is_a_name_and_an_optional_version() -> None:
    assert parse_spec("notes") == ("notes", None)
    assert parse_spec("notes@1.2.0") == ("notes", "1.2.0")
    for wrong in ("Notes", "notes@1.2", "notes@", "../x"):
        with pytest.raises(InputInvalid):
            parse_spec(wrong)


def test_locations_name_their_index(tmp_path: Path) -> None:
    assert index_url("https://example.org/reg/") == "https://example.org/reg/memcastle-index.json"
    assert index_url("https://example.org") == "https://example.org/memcastle-index.json"
    assert index_url("https://example.org/r/i.json") == "https://example.org/r/i.json"
    assert index_url("http://127.0.0.1:8000/r/") == "http://127.0.0.1:8000/r/memcastle-index.json"
    assert index_url(str(tmp_path)) == (tmp_path / "memcastle-index.json").as_uri()
    assert index_url(tmp_path.as_uri()) == (tmp_path / "memcastle-index.json").as_uri()
    assert index_url(str(tmp_path / "i.json")) == (tmp_path / "i.json").as_uri()
    for refused in (
        "http://example.org/",
        "ftp://example.org/",
        "relative/path",
        "https://user:pw@example.org/",
        "file://otherhost/x",
    ):
        with pytest.raises(InputInvalid) as error:
            index_url(refused)
        assert error.value.field == "registry"


def test_an_archive_url_stays_inside_its_registry() -> None:
    at = "https://example.org/reg/memcastle-index.json"
    assert release_url(at, "notes-1.0.0.tar.gz") == "https://example.org/reg/notes-1.0.0.tar.gz"
    assert release_url(at, "v1/notes.tar.gz") == "https://example.org/reg/v1/notes.tar.gz"
    assert release_url(at, "https://cdn.example/n.tar.gz") == "https://cdn.example/n.tar.gz"
    for climbing in (
        "../notes.tar.gz",
        "v1/../../n.tar.gz",
        "/reg/n.tar.gz",
        "//evil/n",
        "%2e%2e/n",
    ):
        with pytest.raises(RegistryUnavailable, match="climbs out of the registry"):
            release_url(at, climbing)


def test_the_configuration_of_registries_and_trust_is_checked(tmp_path: Path) -> None:
    key = public_text(keygen(tmp_path / "k"))
    config = load_config(
        env={
            "MEMCASTLE_MINING_REGISTRIES": f"https://example.org/r/, {tmp_path}, ",
            "MEMCASTLE_MINING_TRUST": "required",
            "MEMCASTLE_MINING_TRUSTED_KEYS": key,
        }
    )
    assert config.mining.registries == ("https://example.org/r/", str(tmp_path))
    assert config.mining.trust == "required" and config.mining.trusted_keys == (key,)
    assert load_config(env={"MEMCASTLE_MINING_REGISTRIES": ""}).mining.registries == ()
    with pytest.raises(ConfigInvalid, match="`required` needs at least one key"):
        load_config(env={"MEMCASTLE_MINING_TRUST": "required"})
    with pytest.raises(ConfigInvalid, match=r"mining\.registries"):
        load_config(env={"MEMCASTLE_MINING_REGISTRIES": "http://example.org/"})
    with pytest.raises(ConfigInvalid, match=r"mining\.trusted_keys"):
        load_config(env={"MEMCASTLE_MINING_TRUSTED_KEYS": "bm90IGEga2V5"})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StaticServer]:
    running = StaticServer(tmp_path).start()
    yield running
    running.stop()


def test_a_body_is_counted_as_it_arrives_whatever_its_length(server: StaticServer) -> None:
    fetcher = Fetcher(api_url="https://api.github.com", token=None)
    server.routes["/big"] = (200, {}, b"x" * 1001)
    server.routes["/fits"] = (200, {}, b"x" * 1000)
    assert len(fetcher.fetch(f"{server.url}/fits", 1000, what="it")) == 1000
    with pytest.raises(RegistryUnavailable, match="larger than"):
        fetcher.fetch(f"{server.url}/big", 1000, what="it")
    (server.root / "file").write_bytes(b"y" * 1001)
    with pytest.raises(RegistryUnavailable, match="larger than"):
        fetcher.fetch((server.root / "file").as_uri(), 1000, what="it")


def test_each_redirect_is_checked_by_the_same_rules(server: StaticServer) -> None:
    fetcher = Fetcher(api_url="https://api.github.com", token=None)
    server.routes["/moved"] = (302, {"Location": "/fits"}, b"")
    server.routes["/fits"] = (200, {}, b"here")
    assert fetcher.fetch(f"{server.url}/moved", 100, what="it") == b"here"
    server.routes["/away"] = (302, {"Location": "http://example.org/x"}, b"")
    with pytest.raises(RegistryUnavailable, match=r"redirects to http://example\.org/x"):
        fetcher.fetch(f"{server.url}/away", 100, what="it")
    server.routes["/local"] = (302, {"Location": (server.root / "f").as_uri()}, b"")
    with pytest.raises(RegistryUnavailable, match="refused"):
        fetcher.fetch(f"{server.url}/local", 100, what="it")
    server.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    with pytest.raises(RegistryUnavailable, match="redirects more than"):
        fetcher.fetch(f"{server.url}/loop", 100, what="it")
    with pytest.raises(RegistryUnavailable, match="answered HTTP 404"):
        fetcher.fetch(f"{server.url}/nothing", 100, what="it")


def test_a_web_registry_cannot_send_the_daemon_to_a_file(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    fetcher = Fetcher(api_url="https://api.github.com", token=None)
    with pytest.raises(RegistryUnavailable, match="cannot send the daemon to a file"):
        fetcher.fetch(
            (tmp_path / "secret").as_uri(),
            100,
            what="the archive",
            listed_by="https://example.org/memcastle-index.json",
        )


def test_releases_resolve_a_repository_entry_and_only_the_api_gets_the_token(
    server: StaticServer, tmp_path: Path
) -> None:
    files = StaticServer(tmp_path).start()
    try:
        asset = f"{files.url}/notes-1.1.0.tar.gz"
        releases = [
            {"draft": True, "prerelease": False, "assets": [gh_asset("notes-3.0.0.tar.gz", asset)]},
            {"draft": False, "prerelease": True, "assets": [gh_asset("notes-2.0.0.tar.gz", asset)]},
            {
                "draft": False,
                "prerelease": False,
                "assets": [gh_asset("notes-1.5.0.tar.gz", asset, None)],
            },
            {
                "draft": False,
                "prerelease": False,
                "assets": [gh_asset("notes-1.1.0.tar.gz", asset), gh_asset("other.zip", asset)],
            },
        ]
        route = "/repos/acme/notes/releases?per_page=100"
        server.routes[route] = (200, {}, json.dumps(releases).encode())
        fetcher = Fetcher(api_url=server.url, token="tok-123")
        entry = resolve(Entry("notes", "d", repository="acme/notes"), fetcher)
        assert [(each.version, each.url, each.sha256) for each in entry.releases] == [
            ("1.1.0", asset, SHA)
        ]
        (files.root / "notes-1.1.0.tar.gz").write_bytes(b"z")
        fetcher.fetch(asset, 10, what="the archive")
        assert [each.get("authorization") for each in server.headers_of("/repos/")] == [
            "Bearer tok-123"
        ]
        assert [each.get("authorization") for each in files.headers_of("/notes")] == [None]
    finally:
        files.stop()


def gh_asset(name: str, url: str, digest: str | None = f"sha256:{SHA}") -> dict[str, Any]:
    return {"name": name, "browser_download_url": url, "digest": digest, "size": 1}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("keys")
    keygen(folder / "trusted.pem")
    keygen(folder / "unknown.pem")
    return folder / "trusted.pem", folder / "unknown.pem"


def test_the_trust_policy(keys: tuple[Path, Path]) -> None:
    trusted, unknown = (load_private_key(path) for path in keys)
    archive, other = b"the archive", b"another archive"
    keyed = [public_text(trusted.public_key())]
    optional, required = TrustPolicy("optional", keyed), TrustPolicy("required", keyed)
    good, foreign = sign(trusted, archive), sign(unknown, archive)
    tampered = Signature(good.key, sign(trusted, other).value)
    assert optional.judge("n", None, archive) is None
    assert optional.judge("n", foreign, archive) is None  # an unknown key counts as unsigned
    assert optional.judge("n", good, archive) == key_id(trusted.public_key())
    assert required.judge("n", good, archive) == good.key
    for policy in (optional, required):
        with pytest.raises(Untrusted, match="does not verify"):
            policy.judge("n", tampered, archive)
        with pytest.raises(Untrusted, match="does not verify"):
            policy.judge("n", Signature(good.key, "not base64!"), archive)
    with pytest.raises(Untrusted, match="unsigned"):
        required.judge("n", None, archive)
    with pytest.raises(Untrusted, match="unknown key"):
        required.judge("n", foreign, archive)


def test_keygen_writes_an_owner_only_key_and_never_overwrites_one(tmp_path: Path) -> None:
    path = tmp_path / "signing.pem"
    public_key = keygen(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(base64.b64decode(public_text(public_key))) == 32
    assert len(key_id(public_key)) == 16
    before = path.read_bytes()
    with pytest.raises(SigningFailed, match="never overwritten"):
        keygen(path)
    assert path.read_bytes() == before
    (tmp_path / "junk").write_text("not a key")
    with pytest.raises(SigningFailed, match="not an unencrypted PEM"):
        load_private_key(tmp_path / "junk")


def archive_of(version_text: str) -> bytes:
    return write_package(manifest("probe", version=f'"{version_text}"'), COMPONENT)


def test_source_index_writes_and_merges_an_index(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    for number in ("1.0.0", "1.1.0"):
        (tmp_path / f"probe-{number}.tar.gz").write_bytes(archive_of(number))
    output = tmp_path / "memcastle-index.json"
    write_index([tmp_path / "probe-1.0.0.tar.gz"], output, key=keys[0], name="mine")
    document = json.loads(output.read_text())
    document["sources"][0]["versions"][0]["yanked"] = True
    output.write_text(json.dumps(document))
    written = write_index(
        [tmp_path / "probe-1.1.0.tar.gz", tmp_path / "probe-1.0.0.tar.gz"], output
    )
    assert [(each.name, each.release.version) for each in written] == [
        ("probe", "1.1.0"),
        ("probe", "1.0.0"),
    ]
    read = parse_index(output.read_bytes(), str(output))
    entry = read.find("probe")
    assert read.name == "mine" and entry is not None
    assert [(each.version, each.yanked, each.url) for each in entry.releases] == [
        ("1.0.0", True, "probe-1.0.0.tar.gz"),
        ("1.1.0", False, "probe-1.1.0.tar.gz"),
    ]
    assert entry.releases[1].signature is None  # the second run was not asked to sign
    elsewhere = tmp_path / "site" / "memcastle-index.json"
    elsewhere.parent.mkdir()
    with pytest.raises(InputInvalid, match="--base-url"):
        write_index([tmp_path / "probe-1.0.0.tar.gz"], elsewhere)
    write_index([tmp_path / "probe-1.0.0.tar.gz"], elsewhere, base_url="https://cdn.example/p/")
    listed = parse_index(elsewhere.read_bytes(), "here").find("probe")
    assert (
        listed is not None and listed.releases[0].url == "https://cdn.example/p/probe-1.0.0.tar.gz"
    )
