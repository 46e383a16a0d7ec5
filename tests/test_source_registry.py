"""Source registries end to end (sources.md 6, api.md /api/source-registry, cli.md Sources): a
real daemon finds, previews, installs and updates the probe source from a registry served by a
static HTTP server on 127.0.0.1 and from a directory, verifying each archive against its index
and the trust policy; refusals carry their codes and install nothing. The CLI publishes a
registry (`keygen`, `index`) and installs from it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sources.archive import sha256_hex
from sources.manifest import consent_digest, parse_manifest
from sources.registry_publish import write_index
from sources.signing import key_id, keygen, load_private_key, public_text, sign
from tests.support.cli import cli, cli_json, in_terminal, refused
from tests.support.components import manifest, package
from tests.support.daemon import Daemon
from tests.support.http import assert_error
from tests.support.static_server import StaticServer

DIGEST = consent_digest("probe", parse_manifest(manifest("probe")).permissions)
VERSIONS = ("1.0.0", "1.1.0", "1.2.0")


def remote(status: int, code: str) -> str:
    return f"memcastle::client::remote_rejected ({status}, {code})"


class Registry:
    """The files a registry is made of, served over HTTP and read from disk."""

    def __init__(self, root: Path, files: StaticServer, api: StaticServer, keys: Path) -> None:
        self.root = root
        self.files = files
        self.api = api
        self.trusted = keys / "trusted.pem"
        self.unknown = keys / "unknown.pem"

    def url(self, name: str) -> str:
        return f"{self.files.url}/{name}/"

    def index(self, name: str, document: dict[str, Any]) -> str:
        """Write a registry's index as it is (without the tool); its URL."""
        (self.root / name).mkdir(exist_ok=True)
        (self.root / name / "memcastle-index.json").write_text(json.dumps(document))
        return self.url(name)

    def archive(self, version: str) -> Path:
        return self.root / "main" / f"probe-{version}.tar.gz"

    def entry(self, *versions: dict[str, Any], name: str = "probe") -> dict[str, Any]:
        """An index of one source listing these versions."""
        source = {"name": name, "description": "the probe", "versions": list(versions)}
        return {"format": 1, "name": "case", "sources": [source]}

    def version(self, version: str, **extra: Any) -> dict[str, Any]:
        """A version of probe as the main registry serves it (by an absolute URL)."""
        listed = {
            "version": version,
            "contract": "0.4",
            "memcastle": ">=0.1",
            "url": f"{self.url('main')}probe-{version}.tar.gz",
            "sha256": sha256_hex(self.archive(version).read_bytes()),
            "yanked": False,
        }
        return {**listed, **extra}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """The main registry (`main/`): probe 1.0.0 and 1.1.0, and 1.2.0 yanked, signed by the
    trusted key; and a server answering GitHub's releases API."""
    root = tmp_path_factory.mktemp("registry")
    keys = tmp_path_factory.mktemp("keys")
    keygen(keys / "trusted.pem")
    keygen(keys / "unknown.pem")
    (root / "main").mkdir()
    for number in VERSIONS:
        text = manifest("probe", version=f'"{number}"')
        (root / "main" / f"probe-{number}.tar.gz").write_bytes(package("probe", text))
    archives = [root / "main" / f"probe-{number}.tar.gz" for number in VERSIONS]
    write_index(archives, root / "main" / "memcastle-index.json", key=keys / "trusted.pem")
    index = root / "main" / "memcastle-index.json"
    document = json.loads(index.read_text())
    document["sources"][0]["versions"][2]["yanked"] = True
    index.write_text(json.dumps(document))
    files, api = StaticServer(root).start(), StaticServer(root / "main").start()
    yield Registry(root, files, api, keys)
    files.stop()
    api.stop()


def trusted_key(registry: Registry) -> str:
    return public_text(load_private_key(registry.trusted).public_key())


def trusted_id(registry: Registry) -> str:
    return key_id(load_private_key(registry.trusted).public_key())


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Daemon]:
    running = Daemon(
        tmp_path_factory.mktemp("registry-daemon"),
        env={
            "MEMCASTLE_MINING_REGISTRIES": registry.url("main"),
            "MEMCASTLE_MINING_TRUSTED_KEYS": trusted_key(registry),
            "MEMCASTLE_MINING_GITHUB_API_URL": registry.api.url,
            "GH_TOKEN": "gh-test-token",
        },
    ).start()
    yield running
    running.stop()


@pytest.fixture
def client(daemon: Daemon) -> Iterator[httpx.Client]:
    """A client of the module's daemon; the probe source is removed after each test."""
    with daemon.client() as http:
        yield http
        http.delete("/api/source-packages/probe")


def install(client: httpx.Client, spec: str, **body: Any) -> httpx.Response:
    return client.post(f"/api/source-registry/{spec}/install", json=body)


def test_search_finds_sources_by_words_with_the_version_an_install_would_choose(
    client: httpx.Client, registry: Registry
) -> None:
    found = client.get("/api/source-registry", params={"q": "PROBE misbehaves"})
    assert found.status_code == 200, found.text
    (hit,) = found.json()["results"]
    assert found.json()["registries"] == [registry.url("main")]
    assert hit["name"] == "probe" and hit["version"] == "1.1.0"  # 1.2.0 is yanked
    assert hit["registry"] == registry.url("main") and hit["installed"] is None
    assert client.get("/api/source-registry", params={"q": "nothing"}).json()["results"] == []
    everything = client.get("/api/source-registry").json()["results"]
    assert [each["name"] for each in everything] == ["probe"]


def test_preview_shows_what_would_be_installed_and_installs_nothing(
    client: httpx.Client, registry: Registry
) -> None:
    shown = client.get("/api/source-registry/probe")
    assert shown.status_code == 200, shown.text
    preview = shown.json()
    assert preview["version"] == "1.1.0" and preview["consent_digest"] == DIGEST
    assert preview["permissions"]["process"] == ["echo", "printenv"]
    assert preview["signed_by"] == trusted_id(registry)
    assert preview["archive_digest"] == sha256_hex(registry.archive("1.1.0").read_bytes())
    assert client.get("/api/source-packages/probe").status_code == 404
    pinned = client.get("/api/source-registry/probe@1.2.0").json()
    assert pinned["version"] == "1.2.0"  # yanked, but pinned
    assert_error(
        client.get("/api/source-registry/probe@9.0.0"), 404, "memcastle::source::not_in_registry"
    )
    assert_error(
        client.get("/api/source-registry/nobody"), 404, "memcastle::source::not_in_registry"
    )
    assert_error(client.get("/api/source-registry/Bad@x"), 400, "memcastle::input::invalid")
    assert_error(client.get("/api/source-registry/claude"), 400, "memcastle::source::bundled")


def test_install_with_consent_then_update_from_the_same_registry(
    client: httpx.Client, registry: Registry
) -> None:
    refusal = assert_error(
        install(client, "probe@1.0.0"), 400, "memcastle::source::consent_required"
    )
    assert DIGEST in refusal["help"]
    assert client.get("/api/source-packages/probe").status_code == 404
    installed = install(client, "probe@1.0.0", consent=DIGEST, enable=True)
    assert installed.status_code == 200, installed.text
    source = installed.json()["source"]
    assert source["origin"] == "registry" and source["version"] == "1.0.0"
    assert source["state"] == "enabled" and source["registry"] == registry.url("main")
    assert source["signed_by"] == trusted_id(registry)
    assert source["archive_digest"] == sha256_hex(registry.archive("1.0.0").read_bytes())
    assert client.get("/api/source-registry/probe").json()["installed"] == "1.0.0"

    update = "/api/source-registry/probe/update"
    checked = client.post(update, json={"check": True}).json()
    assert checked == {
        "name": "probe",
        "installed": "1.0.0",
        "version": "1.1.0",
        "registry": registry.url("main"),
        "status": "available",
    }
    assert client.get("/api/source-packages/probe").json()["version"] == "1.0.0"
    updated = client.post(update, json={})
    assert updated.status_code == 200, updated.text
    assert updated.json()["status"] == "updated"  # the same permissions: consent stands
    assert updated.json()["source"]["version"] == "1.1.0"
    assert updated.json()["source"]["state"] == "enabled"
    assert client.post(update, json={"check": True}).json()["status"] == "current"
    assert_error(
        client.post("/api/source-registry/nobody/update", json={}),
        404,
        "memcastle::source::not_found",
    )
    assert_error(
        client.post("/api/source-registry/claude/update", json={}),
        400,
        "memcastle::source::bundled",
    )
    assert_error(install(client, "claude"), 400, "memcastle::source::bundled")
    assert_error(client.post(update, json={"force": True}), 400, "memcastle::input::invalid")


def test_a_directory_and_a_file_url_are_registries(
    client: httpx.Client, registry: Registry
) -> None:
    folder = registry.root / "main"
    for location in (str(folder), folder.as_uri(), str(folder / "memcastle-index.json")):
        found = client.get("/api/source-registry", params={"registry": location}).json()
        assert [hit["version"] for hit in found["results"]] == ["1.1.0"]
    installed = install(client, "probe", consent=DIGEST, registry=str(folder))
    assert installed.status_code == 200, installed.text
    assert installed.json()["source"]["registry"] == str(folder)


def test_the_first_registry_offering_a_name_wins_and_redirects_are_followed(
    client: httpx.Client, registry: Registry
) -> None:
    # A redirect to the main registry on the same server is followed.
    registry.files.routes["/moved/memcastle-index.json"] = (
        302,
        {"Location": "/main/memcastle-index.json"},
        b"",
    )
    found = client.get("/api/source-registry", params={"registry": registry.url("moved")})
    assert found.status_code == 200, found.text
    assert [hit["version"] for hit in found.json()["results"]] == ["1.1.0"]


@pytest.mark.parametrize(
    ("case", "status", "code", "said"),
    [
        ("digest", 502, "memcastle::source::integrity", "not the"),
        ("name", 502, "memcastle::source::integrity", "not the probe-other"),
        ("tampered", 400, "memcastle::source::untrusted", "does not verify"),
        ("unknown-field", 502, "memcastle::source::registry_unavailable", "`mirror` is not"),
        ("climb", 502, "memcastle::source::registry_unavailable", "climbs out"),
        ("big", 502, "memcastle::source::registry_unavailable", "larger than 4 MiB"),
        ("away", 502, "memcastle::source::registry_unavailable", "http://example.org"),
        ("gone", 502, "memcastle::source::registry_unavailable", "HTTP 404"),
    ],
)
def test_what_fails_verification_is_refused_and_nothing_is_installed(
    client: httpx.Client, registry: Registry, case: str, status: int, code: str, said: str
) -> None:
    entry = registry.entry
    signer = load_private_key(registry.trusted)
    name = "probe"
    if case == "digest":
        # The listed archive is not a package at all: its digest is refused before it is read.
        (registry.root / "digest").mkdir(exist_ok=True)
        (registry.root / "digest" / "probe-1.0.0.tar.gz").write_bytes(b"not a package")
        location = registry.index(case, entry(registry.version("1.0.0", url="probe-1.0.0.tar.gz")))
    elif case == "name":
        name = "probe-other"
        location = registry.index(case, entry(registry.version("1.0.0"), name=name))
    elif case == "tampered":
        other = sign(signer, registry.archive("1.0.0").read_bytes()).as_dict()
        location = registry.index(case, entry(registry.version("1.1.0", signature=other)))
    elif case == "unknown-field":
        location = registry.index(case, {**entry(registry.version("1.0.0")), "mirror": "x"})
    elif case == "climb":
        (registry.root / "climb").mkdir(exist_ok=True)
        document = entry(registry.version("1.0.0", url="../../etc/probe.tar.gz"))
        location = registry.index(case, document)
    elif case == "big":
        # Valid JSON, over 4 MiB, sent without a length: counted as it arrives.
        text = json.dumps(entry(registry.version("1.0.0")))
        registry.files.routes["/big/memcastle-index.json"] = (
            200,
            {},
            text[:-1].encode() + b" " * (4 * 2**20) + b"}",
        )
        location = registry.url(case)
    elif case == "away":
        registry.files.routes["/away/memcastle-index.json"] = (
            302,
            {"Location": "http://example.org/memcastle-index.json"},
            b"",
        )
        location = registry.url(case)
    else:
        location = registry.url(case)
    refusal = client.get(f"/api/source-registry/{name}", params={"registry": location})
    assert said in assert_error(refusal, status, code)["error"]
    refusal = install(client, name, consent=DIGEST, registry=location)
    assert_error(refusal, status, code)
    assert client.get("/api/source-packages/probe").status_code == 404


def test_an_unknown_key_counts_as_unsigned_under_optional_trust(
    client: httpx.Client, registry: Registry
) -> None:
    foreign = sign(load_private_key(registry.unknown), registry.archive("1.0.0").read_bytes())
    location = registry.index(
        "foreign", registry.entry(registry.version("1.0.0", signature=foreign.as_dict()))
    )
    preview = client.get("/api/source-registry/probe", params={"registry": location})
    assert preview.status_code == 200, preview.text
    assert preview.json()["signed_by"] is None


def test_a_location_the_rules_refuse_is_an_invalid_input(client: httpx.Client) -> None:
    for location in ("http://example.org/", "relative/dir", "ftp://example.org/"):
        refusal = client.get("/api/source-registry", params={"registry": location})
        assert "`registry`" in assert_error(refusal, 400, "memcastle::input::invalid")["error"]
    missing = client.get("/api/source-registry", params={"registry": "/no/such/registry"})
    assert_error(missing, 502, "memcastle::source::registry_unavailable")


def test_a_repository_entry_is_resolved_through_the_releases_api(
    client: httpx.Client, registry: Registry, daemon: Daemon
) -> None:
    archive = f"{registry.url('main')}probe-1.1.0.tar.gz"
    digest = f"sha256:{sha256_hex(registry.archive('1.1.0').read_bytes())}"

    def asset(version: str, with_digest: bool = True) -> dict[str, Any]:
        return {
            "name": f"probe-{version}.tar.gz",
            "browser_download_url": archive,
            "digest": digest if with_digest else None,
        }

    releases = [
        {"tag_name": "v3", "draft": True, "prerelease": False, "assets": [asset("3.0.0")]},
        {"tag_name": "v2", "draft": False, "prerelease": True, "assets": [asset("2.0.0")]},
        {
            "tag_name": "v1.5",
            "draft": False,
            "prerelease": False,
            "assets": [asset("1.5.0", False)],
        },
        {"tag_name": "v1.1", "draft": False, "prerelease": False, "assets": [asset("1.1.0")]},
    ]
    route = "/repos/acme/probe/releases?per_page=100"
    registry.api.routes[route] = (200, {}, json.dumps(releases).encode())
    location = registry.index(
        "github",
        {
            "format": 1,
            "name": "gh",
            "sources": [{"name": "probe", "description": "the probe", "repository": "acme/probe"}],
        },
    )
    found = client.get("/api/source-registry", params={"registry": location}).json()["results"]
    assert [(hit["repository"], hit["version"]) for hit in found] == [("acme/probe", "1.1.0")]
    installed = install(client, "probe", consent=DIGEST, registry=location)
    assert installed.status_code == 200, installed.text
    assert installed.json()["source"]["signed_by"] is None  # a release is unsigned
    assert "probe-1.5.0.tar.gz of acme/probe has no sha256 digest" in daemon.log()
    assert {each.get("authorization") for each in registry.api.headers_of("/repos/")} == {
        "Bearer gh-test-token"
    }
    assert all("authorization" not in each for each in registry.files.headers_of("/main/probe"))


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory, registry: Registry) -> Iterator[Daemon]:
    """A daemon that installs only what a trusted key signed."""
    running = Daemon(
        tmp_path_factory.mktemp("strict-daemon"),
        env={
            "MEMCASTLE_MINING_TRUST": "required",
            "MEMCASTLE_MINING_TRUSTED_KEYS": trusted_key(registry),
        },
    ).start()
    yield running
    running.stop()


def test_required_trust_accepts_only_a_valid_signature_by_a_trusted_key(
    strict: Daemon, registry: Registry
) -> None:
    archive = registry.archive("1.0.0").read_bytes()
    unsigned = registry.index("unsigned", registry.entry(registry.version("1.0.0")))
    foreign = sign(load_private_key(registry.unknown), archive).as_dict()
    unknown = registry.index(
        "unknown", registry.entry(registry.version("1.0.0", signature=foreign))
    )
    with strict.client() as client:
        for location, said in ((unsigned, "unsigned"), (unknown, "unknown key")):
            refusal = client.get("/api/source-registry/probe", params={"registry": location})
            assert said in assert_error(refusal, 400, "memcastle::source::untrusted")["error"]
        signed = client.get("/api/source-registry/probe", params={"registry": registry.url("main")})
        assert signed.status_code == 200, signed.text
        assert signed.json()["signed_by"] == trusted_id(registry)


# The CLI.


def test_keygen_writes_an_owner_only_key_and_never_overwrites_it(
    daemon: Daemon, tmp_path: Path
) -> None:
    key = tmp_path / "publisher.pem"
    made = cli(daemon, "source", "keygen", str(key))
    assert made.returncode == 0, made.stderr
    public_key = load_private_key(key).public_key()
    assert f"key id: {key_id(public_key)}" in made.stdout
    assert f"public key: {public_text(public_key)}" in made.stdout
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    before = key.read_bytes()
    refused(cli(daemon, "source", "keygen", str(key)), "memcastle::source::signing_failed")
    assert key.read_bytes() == before


def test_a_registry_published_with_source_index_is_searched_installed_and_updated(
    daemon: Daemon, registry: Registry, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    for number in ("1.0.0", "1.1.0"):
        (site / f"probe-{number}.tar.gz").write_bytes(registry.archive(number).read_bytes())
    indexed = cli(
        daemon,
        "source",
        "index",
        str(site / "probe-1.0.0.tar.gz"),
        "--output",
        str(site / "memcastle-index.json"),
        "--sign",
        str(registry.trusted),
        "--name",
        "mine",
    )
    assert indexed.returncode == 0, indexed.stderr
    assert "indexed: probe 1.0.0 (sha256 " in indexed.stdout
    found = cli_json(daemon, "source", "search", "tide", "probe", "--registry", str(site))
    assert found["results"] == []
    found = cli_json(daemon, "source", "search", "probe", "--registry", str(site))
    assert [hit["version"] for hit in found["results"]] == ["1.0.0"]

    by_name = cli(daemon, "source", "install", "probe", "--registry", str(site), cwd=tmp_path)
    assert DIGEST in refused(by_name, remote(400, "memcastle::source::consent_required"))
    installed = cli_json(daemon, "source", "install", "probe", "--registry", str(site), "--yes")
    assert installed["source"]["signed_by"] == trusted_id(registry)

    more = cli(
        daemon,
        "source",
        "index",
        str(site / "probe-1.1.0.tar.gz"),
        "--output",
        str(site / "memcastle-index.json"),
    )
    assert more.returncode == 0, more.stderr
    checked = cli_json(daemon, "source", "update", "--check")
    assert [(each["name"], each["status"]) for each in checked["updates"]] == [
        ("probe", "available")
    ]
    updated = cli_json(daemon, "source", "update", "probe", "--yes")
    assert updated["updates"][0]["status"] == "updated"
    assert updated["updates"][0]["source"]["version"] == "1.1.0"
    assert cli_json(daemon, "source", "remove", "probe", "--yes") == {"removed": "probe"}


def test_install_by_name_asks_for_consent_on_a_terminal(daemon: Daemon) -> None:
    status, shown = in_terminal(daemon, "source", "install", "probe@1.0.0", answer="n")
    assert status == 1 and "run echo" in shown and "memcastle::cli::aborted" in shown
    status, shown = in_terminal(daemon, "source", "install", "probe@1.0.0", answer="y")
    assert status == 0 and "installed: probe" in shown, shown
    assert cli_json(daemon, "source", "show", "probe")["version"] == "1.0.0"
    assert cli_json(daemon, "source", "remove", "probe", "--yes") == {"removed": "probe"}
