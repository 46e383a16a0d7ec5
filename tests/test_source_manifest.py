"""The manifest of a source package (sources.md 3-5, docs/source-packages.md).

Every table refuses a key it does not know, naming it with its table; every value rule has a
refusal naming the key; the consent digest is pinned by fixed test vectors (the ones the docs
give to authors of other clients); compatibility follows the contract and `memcastle` rules.
Manifests are written from nested dicts by `toml`, so each case states only what it changes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from kernel import __version__
from sources.adapters import Capabilities, OptionSpec
from sources.manifest import (
    CONTRACT,
    Incompatible,
    Limits,
    Manifest,
    ManifestInvalid,
    OAuth,
    Permissions,
    consent_digest,
    incompatibility,
    incompatibility_of,
    parse_manifest,
)

DELETE = object()

MINIMAL: dict[str, Any] = {
    "source": {"name": "notes", "version": "1.0.0", "description": "Some notes"},
    "compatibility": {"contract": "0.4", "memcastle": ">=0.1"},
}

OAUTH: dict[str, Any] = {
    "client_id": "Iv1.0123456789abcdef",
    "token_url": "https://github.com/login/oauth/access_token",
    "device_authorization_url": "https://github.com/login/device/code",
    "scopes": ["repo", "read:user"],
}

# The manifest of docs/source-packages.md, "An example".
EXAMPLE = """
format = 1

[source]
name = "opencode"
version = "0.3.1"
description = "Sessions of the opencode CLI"
license = "MIT"
homepage = "https://example.com/opencode-source"
repository = "https://github.com/example/opencode-source"

[compatibility]
contract = "0.4"
memcastle = ">=0.1, <0.3"

[capabilities]
incremental = true
retains_raw = true

[permissions]
network = false
process = ["opencode"]
env = ["XDG_DATA_HOME", "OPENCODE_CONFIG"]

[permissions.filesystem]
read = ["locator", "~/.local/share/opencode"]

[options.since]
type = "date"
description = "only sessions updated on or after this date"
breadth = "since"

[options.dir]
type = "path"
description = "only sessions of this working directory"
breadth = "include"

[triggers.watch]
description = "the session store changes as opencode writes"

[limits]
memory_mib = 128
timeout_secs = 60

[build]
command = ["componentize-py", "-w", "source", "componentize", "app", "-o", "source.wasm"]
output = "source.wasm"

[test]
fixtures = "tests/fixtures"
"""

# The consent test vectors of docs/source-packages.md.
OPENCODE_JSON = (
    '{"name":"opencode","permissions":{"env":["OPENCODE_CONFIG","XDG_DATA_HOME"],'
    '"filesystem":{"read":["locator","~/.local/share/opencode"]},"network":false,'
    '"process":["opencode"]}}'
)
OPENCODE_DIGEST = "92f4f4a4076990640e0d0b9134c5f7356392362fb19a8f9e7f54749d259bfb0b"
GITHUB_JSON = (
    '{"name":"github","permissions":{"env":[],"filesystem":{"read":[]},"network":true,'
    '"oauth":{"callback_path":"/callback","client_id":"Iv1.0123456789abcdef",'
    '"device_authorization_url":"https://github.com/login/device/code","on_demand":false,'
    '"scopes":["read:user","repo"],"token_url":"https://github.com/login/oauth/access_token"},'
    '"process":[]}}'
)
GITHUB_DIGEST = "1221543beac4781ba223e03b198b087bff7b97030c022df8c3f5c63b9c8de1b5"


def toml(document: dict[str, Any], path: str = "") -> str:
    """TOML of nested dicts of strings, booleans, integers and lists of strings."""
    lines = [f"[{path}]"] if path else []
    tables = []
    for key, value in document.items():
        if isinstance(value, dict):
            tables.append(toml(value, f"{path}.{key}" if path else key))
        else:
            lines.append(f"{key} = {_value(value)}")
    return "\n".join([*lines, "", *tables])


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` deep-merged in; a DELETE value removes the key."""
    result = dict(base)
    for key, value in changes.items():
        if value is DELETE:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def parse(**changes: Any) -> Manifest:
    return parse_manifest(toml(merged(MINIMAL, changes)))


def refused(message: str, **changes: Any) -> None:
    with pytest.raises(ManifestInvalid) as raised:
        parse(**changes)
    assert message in raised.value.message
    assert raised.value.code == "memcastle::source::manifest_invalid"
    assert raised.value.status == 400


def with_oauth(**oauth: Any) -> dict[str, Any]:
    return {
        "capabilities": {"needs_credentials": True},
        "permissions": {"oauth": merged(OAUTH, oauth)},
    }


# The whole manifest


def test_the_example_manifest_is_read_whole() -> None:
    manifest = parse_manifest(EXAMPLE)
    assert manifest == Manifest(
        format=1,
        name="opencode",
        version="0.3.1",
        description="Sessions of the opencode CLI",
        license="MIT",
        homepage="https://example.com/opencode-source",
        repository="https://github.com/example/opencode-source",
        contract="0.4",
        memcastle=">=0.1, <0.3",
        capabilities=Capabilities(incremental=True, retains_raw=True),
        permissions=Permissions(
            process=("opencode",),
            env=("XDG_DATA_HOME", "OPENCODE_CONFIG"),
            filesystem_read=("locator", "~/.local/share/opencode"),
        ),
        options=(
            OptionSpec("since", "only sessions updated on or after this date", "date", "since"),
            OptionSpec("dir", "only sessions of this working directory", "path", "include"),
        ),
        triggers=frozenset({"watch"}),
        limits=Limits(memory_mib=128, timeout_secs=60),
        build_command=(
            *("componentize-py", "-w", "source", "componentize", "app"),
            *("-o", "source.wasm"),
        ),
        build_output="source.wasm",
        test_fixtures="tests/fixtures",
    )


def test_as_dict_is_what_the_api_shows() -> None:
    assert parse_manifest(EXAMPLE).as_dict() == {
        "format": 1,
        "name": "opencode",
        "version": "0.3.1",
        "description": "Sessions of the opencode CLI",
        "license": "MIT",
        "homepage": "https://example.com/opencode-source",
        "repository": "https://github.com/example/opencode-source",
        "contract": "0.4",
        "memcastle": ">=0.1, <0.3",
        "capabilities": {"incremental": True, "retains_raw": True, "needs_credentials": False},
        "permissions": {
            "network": False,
            "process": ["opencode"],
            "env": ["OPENCODE_CONFIG", "XDG_DATA_HOME"],
            "filesystem": {"read": ["locator", "~/.local/share/opencode"]},
        },
        "options": [
            {
                "name": "since",
                "description": "only sessions updated on or after this date",
                "type": "date",
                "breadth": "since",
            },
            {
                "name": "dir",
                "description": "only sessions of this working directory",
                "type": "path",
                "breadth": "include",
            },
        ],
        "triggers": ["watch"],
        "limits": {"memory_mib": 128, "timeout_secs": 60},
    }


def test_a_minimal_manifest_takes_every_default() -> None:
    manifest = parse()
    assert manifest.format == 1
    assert manifest.license is manifest.homepage is manifest.repository is None
    assert manifest.capabilities == Capabilities()
    assert manifest.permissions == Permissions()
    assert not manifest.permissions.asks()
    assert (manifest.options, manifest.triggers, manifest.limits) == ((), frozenset(), Limits())
    assert (manifest.build_command, manifest.build_output, manifest.test_fixtures) == (
        (),
        None,
        None,
    )


def test_text_that_is_not_toml_is_refused() -> None:
    with pytest.raises(ManifestInvalid, match="not valid TOML"):
        parse_manifest("[source\nname = ")


# Unknown keys


def test_an_unknown_key_is_named_with_its_table_and_the_known_ones() -> None:
    refused(
        "`permissions.filesystem.write` is not a manifest key (known: read)",
        permissions={"filesystem": {"write": ["/tmp"]}},
    )


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"sources": {"name": "x"}}, "sources"),
        ({"source": {"title": "x"}}, "source.title"),
        ({"compatibility": {"host": "x"}}, "compatibility.host"),
        ({"capabilities": {"streaming": True}}, "capabilities.streaming"),
        ({"permissions": {"write": True}}, "permissions.write"),
        ({"permissions": {"filesystem": {"write": ["/x"]}}}, "permissions.filesystem.write"),
        (with_oauth(audience="x"), "permissions.oauth.audience"),
        (
            {"options": {"since": {"type": "date", "description": "d", "default": "x"}}},
            "options.since.default",
        ),
        ({"triggers": {"cron": {"description": "d"}}}, "triggers.cron"),
        ({"triggers": {"watch": {"description": "d", "path": "/x"}}}, "triggers.watch.path"),
        ({"limits": {"cpu": 1}}, "limits.cpu"),
        ({"build": {"command": ["make"], "output": "o", "env": "x"}}, "build.env"),
        ({"test": {"fixtures": "f", "cases": "x"}}, "test.cases"),
    ],
)
def test_every_table_refuses_unknown_keys(changes: dict[str, Any], key: str) -> None:
    refused(f"`{key}` is not a manifest key (known: ", **changes)


def test_a_client_secret_is_refused_for_what_it_is() -> None:
    with pytest.raises(ManifestInvalid) as raised:
        parse(**with_oauth(client_secret="hunter2"))
    assert "`permissions.oauth.client_secret` is not accepted" in raised.value.message
    assert "hunter2" not in raised.value.message


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"source": "notes"}, "`source` must be a table"),
        ({"permissions": {"filesystem": ["/x"]}}, "`permissions.filesystem` must be a table"),
        ({"options": {"since": "date"}}, "`options.since` must be a table"),
    ],
)
def test_a_table_must_be_a_table(changes: dict[str, Any], message: str) -> None:
    refused(message, **changes)


# [source] and [compatibility]


@pytest.mark.parametrize("table", ["source", "compatibility"])
def test_the_required_tables_are_required(table: str) -> None:
    refused(f"the manifest has no `[{table}]` table", **{table: DELETE})


@pytest.mark.parametrize(
    "key",
    [
        "source.name",
        "source.version",
        "source.description",
        "compatibility.contract",
        "compatibility.memcastle",
    ],
)
def test_the_required_keys_are_required(key: str) -> None:
    table, name = key.split(".")
    refused(f"`{key}` is missing", **{table: {name: DELETE}})


@pytest.mark.parametrize("value", ["", "   ", 3, ["x"]])
def test_strings_are_non_empty_strings(value: Any) -> None:
    refused("`source.description` must be a non-empty string", source={"description": value})


@pytest.mark.parametrize("name", ["a", "0", "a-b", "pi2", "my-long-source", "a" * 48])
def test_names_that_are_accepted(name: str) -> None:
    assert parse(source={"name": name}).name == name


@pytest.mark.parametrize("name", ["-a", "a-", "A", "a_b", "a.b", "a b", "é", "a" * 49])
def test_names_that_are_refused(name: str) -> None:
    refused("`source.name`", source={"name": name})


def test_a_builtin_name_is_refused() -> None:
    refused("is the name of a built-in source", source={"name": "directory"})
    text = toml(merged(MINIMAL, {"source": {"name": "pi"}}))
    with pytest.raises(ManifestInvalid, match="built-in"):
        parse_manifest(text, builtin_names=("directory", "pi"))
    assert parse_manifest(text).name == "pi"


@pytest.mark.parametrize("version", ["1.0.0", "0.1.0-rc.1", "2.3.4+build.5", "10.20.30"])
def test_versions_that_are_semver(version: str) -> None:
    assert parse(source={"version": version}).version == version


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "01.0.0", "1.0.0.0", "latest"])
def test_versions_that_are_not(version: str) -> None:
    refused("`source.version`", source={"version": version})


@pytest.mark.parametrize("key", ["homepage", "repository"])
def test_links_are_web_addresses(key: str) -> None:
    assert getattr(parse(source={key: "https://example.com/x"}), key) == "https://example.com/x"
    refused(f"`source.{key}`", source={key: "javascript:alert(1)"})
    refused(f"`source.{key}`", source={key: "example/repo"})


@pytest.mark.parametrize("contract", ["0.4", "0.4.0", "1.10", "1.2.3"])
def test_contracts_that_are_read(contract: str) -> None:
    assert parse(compatibility={"contract": contract}).contract == contract


@pytest.mark.parametrize("contract", ["0", "0.4.0.1", "04.1", "0.4-rc", "v0.4", "x"])
def test_contracts_that_are_refused(contract: str) -> None:
    refused("`compatibility.contract`", compatibility={"contract": contract})


@pytest.mark.parametrize(
    "requirement",
    [">=0.1", ">=0.1, <0.3", ">= 0.1", "^0.1", "0.1", "1.2.3", "~0.1.2", "=0.1.0", "*", "<1"],
)
def test_requirements_that_are_read(requirement: str) -> None:
    assert parse(compatibility={"memcastle": requirement}).memcastle == requirement


@pytest.mark.parametrize("requirement", ["latest", ">=0.1,", ">=0.1 || >=1.0", "0.x", ">>1"])
def test_requirements_that_are_refused(requirement: str) -> None:
    refused("`compatibility.memcastle`", compatibility={"memcastle": requirement})


# format


def test_format_defaults_to_1_and_1_is_read() -> None:
    assert parse().format == 1
    assert parse(format=1).format == 1


def test_a_newer_format_is_incompatible_before_its_keys_are_checked() -> None:
    with pytest.raises(Incompatible) as raised:
        parse(format=2, sandbox={"gpu": True})
    assert "format 2" in raised.value.message
    assert raised.value.code == "memcastle::source::incompatible"
    assert raised.value.status == 400


@pytest.mark.parametrize("value", [0, -1, "1", True])
def test_a_format_that_is_not_a_positive_integer_is_invalid(value: Any) -> None:
    refused("`format` must be a positive whole number", format=value)


# [capabilities], [limits], [build], [test]


@pytest.mark.parametrize("key", ["incremental", "retains_raw", "needs_credentials"])
def test_capabilities_are_booleans(key: str) -> None:
    assert getattr(parse(capabilities={key: True}).capabilities, key) is True
    refused(f"`capabilities.{key}` must be true or false", capabilities={key: "yes"})


@pytest.mark.parametrize("key", ["memory_mib", "timeout_secs"])
def test_limits_are_positive_integers(key: str) -> None:
    assert getattr(parse(limits={key: 1}).limits, key) == 1
    for value in (0, -5, "64", True):
        refused(f"`limits.{key}` must be a positive whole number", limits={key: value})


def test_build_needs_a_command_and_an_output() -> None:
    manifest = parse(build={"command": ["make", "wasm"], "output": "out/source.wasm"})
    assert (manifest.build_command, manifest.build_output) == (("make", "wasm"), "out/source.wasm")
    refused("`build.output` is missing", build={"command": ["make"]})
    refused("`build.command` must be a non-empty list", build={"output": "o"})
    refused("`build.command` must be a non-empty list", build={"command": [], "output": "o"})
    refused("`build.command` must be a non-empty list", build={"command": [""], "output": "o"})
    refused("`build.command` must be a list of strings", build={"command": "make", "output": "o"})


def test_test_needs_fixtures() -> None:
    assert parse(test={"fixtures": "tests/cases"}).test_fixtures == "tests/cases"
    refused("`test.fixtures` is missing", test={})


# [options] and [triggers]


def test_options_keep_their_declared_order() -> None:
    manifest = parse(
        options={
            "z-last": {"type": "string", "description": "z"},
            "a_first": {"type": "path", "description": "a", "breadth": "exclude"},
        }
    )
    assert manifest.options == (
        OptionSpec("z-last", "z", "string"),
        OptionSpec("a_first", "a", "path", "exclude"),
    )


@pytest.mark.parametrize("key", ["Since", "1x", "_x", "-x", "a.b"])
def test_option_keys_that_are_refused(key: str) -> None:
    refused(f"`options.{key}`", options={key: {"type": "string", "description": "d"}})


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"description": "d"}, "`options.x.type` is missing"),
        ({"type": "int", "description": "d"}, "`options.x.type` 'int' must be one of"),
        ({"type": "date"}, "`options.x.description` is missing"),
        (
            {"type": "date", "description": "d", "breadth": "all"},
            "`options.x.breadth` 'all' must be one of",
        ),
    ],
)
def test_option_rules(option: dict[str, Any], message: str) -> None:
    refused(message, options={"x": option})


@pytest.mark.parametrize("breadth", ["include", "opt_in_include", "exclude", "since"])
def test_every_breadth_is_read(breadth: str) -> None:
    option = {"type": "string", "description": "d", "breadth": breadth}
    assert parse(options={"x": option}).options[0].breadth == breadth


def test_triggers_are_watch_and_webhook_with_a_description() -> None:
    triggers = {"watch": {"description": "w"}, "webhook": {"description": "h"}}
    assert parse(triggers=triggers).triggers == frozenset({"watch", "webhook"})
    refused("`triggers.watch.description` is missing", triggers={"watch": {}})


# [permissions]


def test_permissions_are_read() -> None:
    permissions = parse(
        permissions={
            "network": True,
            "process": ["git", "python3", "git"],
            "env": ["GH_HOST", "_X1"],
            "filesystem": {"read": ["locator", "/srv/data", "~/notes", "/"]},
        }
    ).permissions
    assert permissions == Permissions(
        network=True,
        process=("git", "python3", "git"),
        env=("GH_HOST", "_X1"),
        filesystem_read=("locator", "/srv/data", "~/notes", "/"),
    )
    assert permissions.asks()


def test_network_is_a_boolean() -> None:
    refused("`permissions.network` must be true or false", permissions={"network": 1})


@pytest.mark.parametrize(
    "program", ["/usr/bin/git", "bin/git", "git status", "", ".", "..", "a\\b"]
)
def test_processes_are_bare_program_names(program: str) -> None:
    refused("`permissions.process` entry", permissions={"process": [program]})


def test_processes_are_a_list_of_strings() -> None:
    refused("`permissions.process` must be a list of strings", permissions={"process": "git"})


@pytest.mark.parametrize("name", ["1X", "A-B", "", "A B", "PATH=x"])
def test_env_entries_are_variable_names(name: str) -> None:
    refused("`permissions.env` entry", permissions={"env": [name]})


@pytest.mark.parametrize(
    "path", ["relative/dir", "~", "~user/x", "/a/../b", "~/./x", "/a/..", "", "./x"]
)
def test_filesystem_read_entries_are_locator_absolute_or_home(path: str) -> None:
    refused("`permissions.filesystem.read` entry", permissions={"filesystem": {"read": [path]}})


def test_oauth_is_read_with_its_defaults() -> None:
    oauth = parse(**with_oauth()).permissions.oauth
    assert oauth == OAuth(
        client_id="Iv1.0123456789abcdef",
        token_url="https://github.com/login/oauth/access_token",
        device_authorization_url="https://github.com/login/device/code",
        scopes=("repo", "read:user"),
        callback_path="/callback",
        on_demand=False,
    )


def test_oauth_needs_credentials() -> None:
    refused(
        "`[permissions.oauth]` needs `capabilities.needs_credentials = true`",
        permissions={"oauth": OAUTH},
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/device",
        "http://localhost:8080/device",
        "http://127.0.0.1:9000/device",
        "http://[::1]:9000/device",
        "https://example.com/device?x=1",
    ],
)
def test_oauth_urls_that_are_accepted(url: str) -> None:
    oauth = parse(**with_oauth(device_authorization_url=url)).permissions.oauth
    assert oauth is not None
    assert oauth.device_authorization_url == url


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/token",
        "http://localhost.example.com/token",
        "ftp://example.com/token",
        "https:///token",
        "https://user:pass@example.com/token",
        "https://example.com/token#x",
        "example.com/token",
    ],
)
@pytest.mark.parametrize("key", ["token_url", "device_authorization_url", "authorize_url"])
def test_oauth_urls_that_are_refused(key: str, url: str) -> None:
    refused(f"`permissions.oauth.{key}`", **with_oauth(**{key: url}))


def test_oauth_needs_one_authorization_url_or_both() -> None:
    refused(
        "needs `device_authorization_url`, `authorize_url` or both",
        **with_oauth(device_authorization_url=DELETE),
    )
    browser = parse(
        **with_oauth(
            device_authorization_url=DELETE,
            authorize_url="https://github.com/login/oauth/authorize",
        )
    ).permissions.oauth
    assert browser is not None
    assert browser.authorize_url == "https://github.com/login/oauth/authorize"
    assert browser.device_authorization_url is None


@pytest.mark.parametrize("key", ["client_id", "token_url", "scopes"])
def test_oauth_required_keys(key: str) -> None:
    refused(f"`permissions.oauth.{key}` is missing", **with_oauth(**{key: DELETE}))


@pytest.mark.parametrize("scope", ["repo read:user", "", "a\tb"])
def test_oauth_scopes_are_one_word_each(scope: str) -> None:
    refused("`permissions.oauth.scopes` entry", **with_oauth(scopes=[scope]))


def test_oauth_callback_path_and_on_demand() -> None:
    oauth = parse(**with_oauth(callback_path="/oauth/done", on_demand=True)).permissions.oauth
    assert oauth is not None
    assert (oauth.callback_path, oauth.on_demand) == ("/oauth/done", True)
    for path in ("callback", "/cb?x=1", "/cb#x", "/c b"):
        refused("`permissions.oauth.callback_path`", **with_oauth(callback_path=path))
    refused("`permissions.oauth.on_demand` must be true or false", **with_oauth(on_demand="no"))


# The consent digest


def test_the_consent_digest_of_the_example_is_the_documented_vector() -> None:
    manifest = parse_manifest(EXAMPLE)
    canonical = json.dumps(
        {"name": manifest.name, "permissions": manifest.permissions.normalized()},
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    )
    assert canonical == OPENCODE_JSON
    assert consent_digest(manifest.name, manifest.permissions) == OPENCODE_DIGEST


def test_the_consent_digest_with_oauth_is_the_documented_vector() -> None:
    changes = merged(
        with_oauth(scopes=["repo", "read:user", "repo"]), {"permissions": {"network": True}}
    )
    manifest = parse(source={"name": "github"}, **changes)
    canonical = json.dumps(
        {"name": "github", "permissions": manifest.permissions.normalized()},
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
    )
    assert canonical == GITHUB_JSON
    assert consent_digest("github", manifest.permissions) == GITHUB_DIGEST


def test_the_digest_ignores_order_repeats_and_written_out_defaults() -> None:
    one = Permissions(process=("git", "gh"), env=("B", "A"), filesystem_read=("/b", "/a"))
    other = Permissions(
        process=("gh", "git", "gh"), env=("A", "B", "A"), filesystem_read=("/a", "/b")
    )
    assert consent_digest("x", one) == consent_digest("x", other)
    implicit = OAuth(client_id="c", token_url="https://t", authorize_url="https://a")
    explicit = OAuth(
        client_id="c",
        token_url="https://t",
        authorize_url="https://a",
        callback_path="/callback",
        on_demand=False,
    )
    assert consent_digest("x", Permissions(oauth=implicit)) == consent_digest(
        "x", Permissions(oauth=explicit)
    )


@pytest.mark.parametrize(
    "changed",
    [
        Permissions(network=True, process=("git",)),
        Permissions(process=("git", "gh")),
        Permissions(process=("git",), env=("HOME2",)),
        Permissions(process=("git",), filesystem_read=("locator",)),
        Permissions(process=("git",), oauth=OAuth(client_id="c", token_url="https://t")),
    ],
)
def test_the_digest_changes_with_any_permission(changed: Permissions) -> None:
    base = Permissions(process=("git",))
    assert consent_digest("x", changed) != consent_digest("x", base)
    assert consent_digest("y", base) != consent_digest("x", base)


def test_the_digest_of_non_ascii_paths_is_of_their_utf8() -> None:
    permissions = Permissions(filesystem_read=("/données",))
    text = (
        '{"name":"x","permissions":{"env":[],"filesystem":{"read":["/données"]},'
        '"network":false,"process":[]}}'
    )
    assert consent_digest("x", permissions) == hashlib.sha256(text.encode()).hexdigest()


def test_asks_is_whether_anything_is_asked() -> None:
    assert not Permissions().asks()
    assert Permissions(network=True).asks()
    assert Permissions(process=("git",)).asks()
    assert Permissions(env=("X",)).asks()
    assert Permissions(filesystem_read=("locator",)).asks()
    assert Permissions(oauth=OAuth(client_id="c", token_url="https://t")).asks()


# covers: an update with the same or narrower permissions needs no new consent

GRANTED = Permissions(
    network=True,
    process=("git", "gh"),
    env=("GH_HOST",),
    filesystem_read=("locator", "~/code"),
    oauth=OAuth(client_id="c", token_url="https://t", authorize_url="https://a", scopes=("a", "b")),
)


@pytest.mark.parametrize(
    "asked",
    [
        GRANTED,
        Permissions(),
        Permissions(process=("gh", "gh"), filesystem_read=("~/code",)),
        Permissions(
            oauth=OAuth(
                client_id="c", token_url="https://t", authorize_url="https://a", scopes=("b",)
            )
        ),
    ],
)
def test_the_same_or_narrower_permissions_are_covered(asked: Permissions) -> None:
    assert GRANTED.covers(asked)


@pytest.mark.parametrize(
    "asked",
    [
        Permissions(process=("git", "curl")),
        Permissions(env=("GH_TOKEN",)),
        Permissions(filesystem_read=("~/code/sub",)),
        Permissions(
            oauth=OAuth(
                client_id="c", token_url="https://t", authorize_url="https://a", scopes=("c",)
            )
        ),
        Permissions(
            oauth=OAuth(
                client_id="d", token_url="https://t", authorize_url="https://a", scopes=("a",)
            )
        ),
        Permissions(
            oauth=OAuth(
                client_id="c", token_url="https://other", authorize_url="https://a", scopes=("a",)
            )
        ),
    ],
)
def test_broader_or_different_permissions_are_not(asked: Permissions) -> None:
    assert not GRANTED.covers(asked)


def test_network_and_oauth_are_not_covered_when_not_granted() -> None:
    assert not Permissions().covers(Permissions(network=True))
    assert not Permissions(network=True).covers(GRANTED)


# Compatibility


def manifest_for(contract: str, requirement: str = ">=0.1") -> Manifest:
    return parse(compatibility={"contract": contract, "memcastle": requirement})


def test_the_host_runs_its_own_contract_and_version() -> None:
    assert CONTRACT == "0.4.0"
    assert incompatibility(manifest_for("0.4")) is None
    assert incompatibility(manifest_for("0.4", f"={__version__}")) is None


@pytest.mark.parametrize(
    ("built_for", "host", "runs"),
    [
        ("0.4", "0.4.0", True),
        ("0.4.7", "0.4.0", True),
        ("0.4.0", "0.4.9", True),
        ("0.3", "0.4.0", False),
        ("0.5", "0.4.0", False),
        ("1.0", "0.4.0", False),
        ("0.9", "1.0.0", False),
        ("1.0", "1.2.0", True),
        ("1.2.5", "1.2.0", True),
        ("1.3", "1.2.0", False),
        ("2.0", "1.9.0", False),
        ("1.9", "2.0.0", False),
    ],
)
def test_contract_compatibility(built_for: str, host: str, runs: bool) -> None:
    reason = incompatibility(manifest_for(built_for), contract=host)
    assert (reason is None) is runs
    if not runs:
        assert reason is not None
        assert "contract" in reason


@pytest.mark.parametrize(
    ("requirement", "version", "runs"),
    [
        (">=0.1", "0.1.0", True),
        (">=0.2", "0.1.9", False),
        (">=0.2", "0.2.0-rc.1", True),  # a pre-release host is tested as its release
        ("<0.2", "0.2.0-rc.1", False),
        (">=0.1, <0.3", "0.2.5", True),
        (">=0.1, <0.3", "0.3.0", False),
        # A bare version means `^`, with Cargo's bounds.
        ("0.1", "0.1.9", True),
        ("0.1", "0.2.0", False),
        ("1.2", "1.9.0", True),
        ("1.2", "2.0.0", False),
        ("1.2.3", "1.5.0", True),
        ("1.2.3", "1.2.2", False),
        ("^0", "0.9.9", True),
        ("^0", "1.0.0", False),
        ("^0.0", "0.0.9", True),
        ("^0.0", "0.1.0", False),
        ("^0.0.3", "0.0.3", True),
        ("^0.0.3", "0.0.4", False),
        ("=0.1.0", "0.1.0", True),
        ("=0.1.0", "0.1.1", False),
        ("~0.1.2", "0.1.5", True),
        ("*", "7.0.0", True),
    ],
)
def test_memcastle_requirement(requirement: str, version: str, runs: bool) -> None:
    reason = incompatibility(manifest_for("0.4", requirement), version=version)
    assert (reason is None) is runs
    if not runs:
        assert reason == f"requires MemCastle {requirement}; this is MemCastle {version}"


def test_the_contract_is_checked_before_the_version() -> None:
    reason = incompatibility(manifest_for("0.3", ">=9"), version="0.1.0")
    assert reason == "built for source contract 0.3; this MemCastle runs contract 0.4"


def test_an_index_entry_that_cannot_be_read_is_a_reason_not_an_error() -> None:
    assert incompatibility_of("0.4", ">=0.1") is None
    assert (
        incompatibility_of("four", ">=0.1")
        == "its source contract 'four' is not a contract version"
    )
    assert incompatibility_of("0.4", "soon") == (
        "its MemCastle requirement 'soon' is not a version requirement"
    )
