"""Configuration: defaults < TOML file < `MEMCASTLE_*` environment < flags, validated once.

`load_config` is given its environment explicitly, so nothing here depends on the machine's own
environment or home directory; the last tests run `serve` and `migrate` for real.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from kernel.config import Config, load_config
from kernel.errors import ConfigInvalid, MemCastleError
from tests.support.daemon import Daemon

TOKEN = "0123456789abcdef-secret"
PASSWORD = "hunter2-remote-password"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose default config file (under XDG_CONFIG_HOME) does not exist."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "memcastle.toml"
    path.write_text(text, encoding="utf-8")
    return path


def load(
    env: Mapping[str, str],
    config_file: Path | None = None,
    **overrides: object,
) -> Config:
    return load_config(
        config_file=str(config_file) if config_file else None, env=env, overrides=overrides
    )


def refused(
    env: Mapping[str, str], config_file: Path | None = None, **overrides: object
) -> ConfigInvalid:
    """The `ConfigInvalid` that loading raises, checked for its stable code."""
    with pytest.raises(ConfigInvalid) as caught:
        load(env, config_file, **overrides)
    assert caught.value.code == "memcastle::config::invalid"
    return caught.value


# Defaults and precedence -------------------------------------------------------------------


def test_defaults(env: dict[str, str], tmp_path: Path) -> None:
    config = load(env)

    assert config.bind == "127.0.0.1"
    assert config.port == 8420
    assert config.palace_path == tmp_path / "data" / "memcastle" / "default"
    assert config.auth_enabled is False
    assert config.auth_token is None
    assert config.web_enable is False
    assert config.log_level == "info"
    assert config.log_format == "text"
    assert config.store.mode == "embedded"
    assert config.store.sync == "every"
    assert config.store.url is None
    assert (config.store.namespace, config.store.database) == ("memcastle", "palace")
    assert config.config_file is None, "a missing default config file is fine"


@pytest.mark.parametrize(
    "xdg_data_home", [None, "", "relative/data"], ids=["unset", "empty", "rel"]
)
def test_palace_defaults_under_home_without_a_usable_xdg_data_home(
    tmp_path: Path, xdg_data_home: str | None
) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    if xdg_data_home is not None:
        env["XDG_DATA_HOME"] = xdg_data_home

    config = load(env)

    home = Path(os.path.expanduser("~"))
    assert config.palace_path == home / ".local" / "share" / "memcastle" / "default"


def test_default_config_file_is_read_from_xdg_config_home(env: dict[str, str]) -> None:
    path = Path(env["XDG_CONFIG_HOME"]) / "memcastle" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[server]\nport = 9001\n", encoding="utf-8")

    config = load(env)

    assert config.port == 9001
    assert config.config_file == path


def test_file_values(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(
        tmp_path,
        f"""
[palace]
path = "{tmp_path / "palace"}"

[server]
bind = "::1"
port = 9000

[logging]
level = "memcastle=debug,warn"
format = "json"

[auth]
enabled = true
token = "{TOKEN}"

[web]
enable = true

[store]
sync = "500ms"
""",
    )

    config = load(env, path)

    assert config.palace_path == tmp_path / "palace"
    assert (config.bind, config.port) == ("::1", 9000)
    assert (config.log_level, config.log_format) == ("memcastle=debug,warn", "json")
    assert (config.auth_enabled, config.auth_token) == (True, TOKEN)
    assert config.web_enable is True
    assert config.store.sync == "500ms"
    assert config.config_file == path


def test_remote_store_from_the_file(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(
        tmp_path,
        f"""
[store]
mode = "remote"
url = "wss://db.example:8000"
namespace = "ns"
database = "db"
username = "root"
password = "{PASSWORD}"
""",
    )

    store = load(env, path).store

    assert (store.mode, store.url) == ("remote", "wss://db.example:8000")
    assert (store.namespace, store.database) == ("ns", "db")
    assert (store.username, store.password) == ("root", PASSWORD)


def test_unknown_keys_are_ignored(env: dict[str, str], tmp_path: Path) -> None:
    """Only `[[miners]]`, `[[triggers]]` and manifests are strict; `doctor` warns for the rest."""
    path = write_toml(tmp_path, "[server]\nport = 9003\ncolour = 'blue'\n\n[future]\nx = 1\n")

    assert load(env, path).port == 9003


def test_memcastle_config_names_the_file(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[server]\nport = 9002\n")

    config = load({**env, "MEMCASTLE_CONFIG": str(path)})

    assert config.port == 9002
    assert config.config_file == path


def test_environment_overrides_the_file_and_flags_override_the_environment(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = write_toml(
        tmp_path,
        f"""
palace.path = "{tmp_path / "from-file"}"
server.port = 9000
server.bind = "127.0.0.1"
auth.enabled = false
store.sync = "never"
""",
    )
    env |= {
        "MEMCASTLE_PALACE_PATH": str(tmp_path / "from-env"),
        "MEMCASTLE_PORT": "9100",
        "MEMCASTLE_BIND": "0.0.0.0",
        "MEMCASTLE_AUTH_ENABLED": "yes",
        "MEMCASTLE_AUTH_TOKEN": TOKEN,
        "MEMCASTLE_STORE_SYNC": "5s",
    }

    from_env = load(env, path)
    assert from_env.palace_path == tmp_path / "from-env"
    assert (from_env.bind, from_env.port) == ("0.0.0.0", 9100)
    assert from_env.auth_enabled is True
    assert from_env.store.sync == "5s"

    flagged = {"palace.path": str(tmp_path / "from-flag"), "server.port": "9200"}
    from_flags = load(env, path, **flagged, **{"server.bind": "::1"})
    assert from_flags.palace_path == tmp_path / "from-flag"
    assert (from_flags.bind, from_flags.port) == ("::1", 9200)


def test_absent_flags_do_not_override(env: dict[str, str]) -> None:
    """`serve` passes every flag, `None` when it was not given."""
    config = load({**env, "MEMCASTLE_PORT": "9100"}, **{"server.port": None, "palace.path": None})

    assert config.port == 9100


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("MEMCASTLE_PORT", "0", 0),
        ("MEMCASTLE_PORT", "65535", 65535),
        ("MEMCASTLE_BIND", "0.0.0.0", "0.0.0.0"),
        ("MEMCASTLE_BIND", "::", "::"),
        ("MEMCASTLE_AUTH_ENABLED", "1", True),
        ("MEMCASTLE_AUTH_ENABLED", "OFF", False),
        ("MEMCASTLE_STORE_SYNC", "never", "never"),
        ("MEMCASTLE_STORE_SYNC", "101ms", "101ms"),
        ("MEMCASTLE_STORE_SYNC", "1m", "1m"),
        ("MEMCASTLE_LOG", "debug", "debug"),
        ("MEMCASTLE_LOG_FORMAT", "json", "json"),
    ],
)
def test_valid_environment_values(
    env: dict[str, str], variable: str, value: str, expected: object
) -> None:
    config = load({**env, variable: value})

    actual = {
        "MEMCASTLE_PORT": config.port,
        "MEMCASTLE_BIND": config.bind,
        "MEMCASTLE_AUTH_ENABLED": config.auth_enabled,
        "MEMCASTLE_STORE_SYNC": config.store.sync,
        "MEMCASTLE_LOG": config.log_level,
        "MEMCASTLE_LOG_FORMAT": config.log_format,
    }[variable]
    assert actual == expected


def test_the_environment_token_overrides_the_file(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'auth.token = "file-secret-0123456789"')

    assert load(env, path).auth_token == "file-secret-0123456789"
    assert load({**env, "MEMCASTLE_AUTH_TOKEN": TOKEN}, path).auth_token == TOKEN


def test_the_environment_token_is_trimmed(env: dict[str, str]) -> None:
    config = load({**env, "MEMCASTLE_AUTH_TOKEN": f"  {TOKEN}\n"})

    assert config.auth_token == TOKEN


# Invalid values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("MEMCASTLE_PORT", "abc", "server.port"),
        ("MEMCASTLE_PORT", "70000", "server.port"),
        ("MEMCASTLE_PORT", "-1", "server.port"),
        ("MEMCASTLE_PORT", "", "server.port"),
        ("MEMCASTLE_BIND", "localhost", "server.bind"),
        ("MEMCASTLE_BIND", "127.0.0.1:80", "server.bind"),
        ("MEMCASTLE_PALACE_PATH", "relative/palace", "palace.path"),
        ("MEMCASTLE_AUTH_ENABLED", "maybe", "auth.enabled"),
        ("MEMCASTLE_WEB_ENABLE", "2", "web.enable"),
        ("MEMCASTLE_AUTH_TOKEN", "too-short", "auth.token"),
        ("MEMCASTLE_LOG_FORMAT", "xml", "logging.format"),
        ("MEMCASTLE_LOG", "loud", "logging.level"),
        ("MEMCASTLE_LOG", "memcastle=loud", "logging.level"),
        ("MEMCASTLE_STORE_SYNC", "50ms", "store.sync"),
        ("MEMCASTLE_STORE_SYNC", "100ms", "store.sync"),
        ("MEMCASTLE_STORE_SYNC", "always", "store.sync"),
    ],
)
def test_invalid_environment_value_names_key_and_variable(
    env: dict[str, str], variable: str, value: str, key: str
) -> None:
    error = refused({**env, variable: value})

    assert key in error.message
    assert variable in error.message


def test_host_and_port_in_bind_gets_a_hint(env: dict[str, str]) -> None:
    error = refused({**env, "MEMCASTLE_BIND": "127.0.0.1:80"})

    assert "server.port" in error.message


def test_a_refused_secret_is_never_echoed(env: dict[str, str]) -> None:
    error = refused({**env, "MEMCASTLE_AUTH_TOKEN": "tiny-secret"})

    assert "tiny-secret" not in str(error)
    assert "tiny-secret" not in repr(error.body())


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('server.port = "abc"', "server.port"),
        ("server.port = 70000", "server.port"),
        ("server.port = true", "server.port"),
        ('server.bind = "localhost"', "server.bind"),
        ('server.bind = "127.0.0.1:80"', "server.bind"),
        ('palace.path = "relative/palace"', "palace.path"),
        ("palace.path = 42", "palace.path"),
        ('auth.enabled = "maybe"', "auth.enabled"),
        (f'auth.token = " {TOKEN} "', "auth.token"),
        (f'auth.token = "{TOKEN}\\n"', "auth.token"),
        ('auth.token = "short"', "auth.token"),
        ("web.enable = 1", "web.enable"),
        ('logging.format = "xml"', "logging.format"),
        ('logging.level = "loud"', "logging.level"),
        ('store.mode = "cloud"', "store.mode"),
        ('store.mode = "remote"\nstore.url = "http://x"', "store.url"),
        ('store.sync = "50ms"', "store.sync"),
    ],
)
def test_invalid_file_value_names_key_and_file(
    env: dict[str, str], tmp_path: Path, toml: str, key: str
) -> None:
    path = write_toml(tmp_path, toml)

    error = refused(env, path)

    assert key in error.message
    assert str(path) in error.message


def test_remote_store_without_url_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    error = refused(env, write_toml(tmp_path, 'store.mode = "remote"'))

    assert "store.url" in error.message


def test_store_url_without_remote_mode_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    error = refused(env, write_toml(tmp_path, 'store.url = "ws://127.0.0.1:8000"'))

    assert "store.url" in error.message


def test_invalid_flag_value_names_the_key(env: dict[str, str]) -> None:
    error = refused(env, **{"server.port": "abc"})

    assert "server.port" in error.message
    assert "--port" in error.message


def test_malformed_toml_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[server\nport = 8420\n")

    error = refused(env, path)

    assert str(path) in error.message


@pytest.mark.parametrize("via", ["flag", "MEMCASTLE_CONFIG"])
def test_an_explicit_config_file_must_exist(env: dict[str, str], tmp_path: Path, via: str) -> None:
    missing = tmp_path / "missing.toml"

    with pytest.raises(MemCastleError) as caught:
        if via == "flag":
            load(env, missing)
        else:
            load({**env, "MEMCASTLE_CONFIG": str(missing)})

    assert caught.value.code == "memcastle::io::failed"
    assert str(missing) in caught.value.message


def test_repr_never_shows_secrets(env: dict[str, str], tmp_path: Path) -> None:
    path = write_toml(
        tmp_path,
        f"""
auth.enabled = true
auth.token = "{TOKEN}"
store.mode = "remote"
store.url = "ws://127.0.0.1:8000"
store.username = "root"
store.password = "{PASSWORD}"
""",
    )

    config = load(env, path)

    for shown in (repr(config), str(config), repr(config.store), str(config.store)):
        assert TOKEN not in shown
        assert PASSWORD not in shown


# End to end --------------------------------------------------------------------------------


def test_serve_refuses_an_invalid_port_from_the_environment(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path, env={"MEMCASTLE_PORT": "abc"})

    result = daemon.run("serve", timeout=60)

    assert result.returncode != 0
    assert "memcastle::config::invalid" in result.stderr
    assert "server.port" in result.stderr
    assert "MEMCASTLE_PORT" in result.stderr
    assert not daemon.palace.exists(), "configuration is validated before the palace is touched"


def test_serve_refuses_an_invalid_port_flag(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)

    result = daemon.run("serve", "--port", "70000", timeout=60)

    assert result.returncode != 0
    assert "memcastle::config::invalid" in result.stderr
    assert "server.port" in result.stderr


def test_json_log_format_writes_one_object_per_line(fresh_daemon: Daemon) -> None:
    fresh_daemon.env |= {"MEMCASTLE_LOG_FORMAT": "json", "MEMCASTLE_LOG": "debug"}
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        assert client.get("/api/nope").status_code == 404
    assert fresh_daemon.stop() == 0, fresh_daemon.log()

    lines = fresh_daemon.log().splitlines()
    assert lines
    entries = [json.loads(line) for line in lines]
    assert all({"ts", "level", "target", "message"} <= set(entry) for entry in entries)
    assert any("serving palace" in entry["message"] for entry in entries)


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [("serve", "--port", "70000"), ("serve", "--bind", "localhost"), ("migrate", "--palace", "x")],
)
def test_an_invalid_flag_is_named(tmp_path: Path, command: str, flag: str, value: str) -> None:
    """errors.md: `memcastle::config::invalid` names the key, variable or flag at fault."""
    result = Daemon(tmp_path).run(command, flag, value, timeout=60)

    assert result.returncode == 1
    assert "memcastle::config::invalid" in result.stderr
    assert flag in result.stderr


def test_a_missing_config_file_fails_the_command(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path)
    missing = tmp_path / "missing.toml"

    result = daemon.run("migrate", "--status", "--config", str(missing))

    assert result.returncode == 1
    assert "memcastle::io::failed" in result.stderr
    assert str(missing) in result.stderr


# The database console's defaults ([db]) --------------------------------------------------------


def test_the_console_defaults_to_loopback_port_8000(env: dict[str, str]) -> None:
    console = load(env).db

    assert (console.bind, console.port, console.allow_remote) == ("127.0.0.1", 8000, False)
    assert console.allowed_origins == ()


def test_the_console_settings_from_the_file_and_the_environment(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = write_toml(
        tmp_path,
        '[db]\nbind = "0.0.0.0"\nallow_remote = true\nport = 9000\n'
        'allowed_origins = ["https://studio.example.org"]\n',
    )
    from_file = load(env, path).db
    assert (from_file.bind, from_file.port, from_file.allow_remote) == ("0.0.0.0", 9000, True)
    assert from_file.allowed_origins == ("https://studio.example.org",)

    environment = {
        **env,
        "MEMCASTLE_DB_PORT": "0",
        "MEMCASTLE_DB_ALLOWED_ORIGINS": "http://a.example, http://b.example:3000",
    }
    from_env = load(environment).db
    assert from_env.port == 0
    assert from_env.allowed_origins == ("http://a.example", "http://b.example:3000")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[db]\nbind = "0.0.0.0"\n', "db.bind"),
        ('[db]\nbind = "db.example"\n', "db.bind"),
        ("[db]\nport = 8420\n", "db.port"),
        ('[db]\nallowed_origins = ["studio.example.org"]\n', "db.allowed_origins"),
        ('[db]\nallowed_origins = "http://a.example"\nport = "x"\n', "db.port"),
    ],
)
def test_unsafe_or_invalid_console_settings_are_refused(
    env: dict[str, str], tmp_path: Path, text: str, named: str
) -> None:
    error = refused(env, write_toml(tmp_path, text))

    assert f"`{named}`" in error.message


# The webhook listener ([webhook]) ----------------------------------------------------------------


def test_the_webhook_listener_is_off_and_on_loopback_by_default(env: dict[str, str]) -> None:
    webhook = load(env).webhook

    assert (webhook.enable, webhook.bind, webhook.port, webhook.allow_remote) == (
        False,
        "127.0.0.1",
        8787,
        False,
    )
    assert (webhook.max_body_bytes, webhook.max_concurrent) == (1_048_576, 16)


def test_a_webhook_listener_beyond_loopback_needs_allow_remote_and_auth(
    env: dict[str, str], tmp_path: Path
) -> None:
    text = '[webhook]\nenable = true\nbind = "0.0.0.0"\nallow_remote = true\n'
    with_auth = {**env, "MEMCASTLE_AUTH_ENABLED": "true"}

    assert load(with_auth, write_toml(tmp_path, text)).webhook.bind == "0.0.0.0"
    assert "`webhook.bind`" in refused(env, write_toml(tmp_path, text)).message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[webhook]\nbind = "0.0.0.0"\n', "webhook.bind"),
        ('[webhook]\nbind = "hooks.example"\n', "webhook.bind"),
        ("[webhook]\nport = 8420\n", "webhook.port"),
        ("[webhook]\nport = 8000\n", "webhook.port"),
        ("[webhook]\nmax_body_bytes = 0\n", "webhook.max_body_bytes"),
        ("[webhook]\nmax_concurrent = 0\n", "webhook.max_concurrent"),
        ('[webhook]\nenable = "maybe"\n', "webhook.enable"),
    ],
)
def test_unsafe_or_invalid_webhook_settings_are_refused(
    env: dict[str, str], tmp_path: Path, text: str, named: str
) -> None:
    error = refused(env, write_toml(tmp_path, text))

    assert f"`{named}`" in error.message


# [mining.oauth.<source>] ------------------------------------------------------------------------


def test_a_source_can_sign_in_with_the_owners_own_oauth_client(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = write_toml(
        tmp_path,
        "[mining.oauth.github]\n"
        'client_id = "Ov23liOwnApp"\n'
        'device_authorization_url = "https://ghe.example.com/login/device/code"\n'
        'token_url = "https://ghe.example.com/login/oauth/access_token"\n',
    )
    assert load(env, path).mining.oauth_clients == {
        "github": {
            "client_id": "Ov23liOwnApp",
            "device_authorization_url": "https://ghe.example.com/login/device/code",
            "token_url": "https://ghe.example.com/login/oauth/access_token",
        }
    }


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('client_secret = "s"', "mining.oauth.github.client_secret"),
        ('client_id = ""', "mining.oauth.github.client_id"),
        ('token_url = "http://ghe.example.com/token"', "mining.oauth.github.token_url"),
        ('authorize_url = "ftp://example.com"', "mining.oauth.github.authorize_url"),
    ],
)
def test_an_oauth_client_setting_that_cannot_be_used_is_refused_naming_it(
    env: dict[str, str], tmp_path: Path, line: str, named: str
) -> None:
    path = write_toml(tmp_path, f"[mining.oauth.github]\n{line}\n")
    assert f"`{named}`" in refused(env, path).message
