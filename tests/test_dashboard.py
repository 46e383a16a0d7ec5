"""The dashboard's files and how they are served, and `GET /api/config` with `memcastle config
show`: what the Settings page reads (its browser tests are in test_dashboard_browser.py)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.test import RequestFactory

from kernel.config import SECRET_KEYS, Config, load_config
from memcastle_project.configuration import SECRET_FIELDS, ConfigurationReport
from tests.support.auth import AUTH_ENV, SECRET, assert_unauthorized
from tests.support.daemon import Daemon
from web.files import DIST, DashboardFiles
from web.views import dashboard

# The budget the dashboard's scripts and styles must fit in, uncompressed (issue 24).
SIZE_BUDGET = 300 * 1024
# XML namespaces name a vocabulary; nothing is fetched from them.
NAMESPACES = {
    "http://www.w3.org/2000/svg",
    "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/1998/Math/MathML",
    "http://www.w3.org/1999/xlink",
}
SOURCES = sorted(p for p in DIST.rglob("*") if p.suffix in (".js", ".html", ".css", ".svg", ".md"))


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# --- The files: they talk to `/api` and load from `/ui`, nothing else -----------------------


def test_the_dashboard_is_there_and_within_its_size_budget() -> None:
    files = DashboardFiles()
    assert files.installed
    assert {"index.html", "app.css", "js/main.js", "js/api.js"} <= set(files.assets)
    assert 0 < files.size <= SIZE_BUDGET, files.size


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(DIST)))
def test_no_file_names_another_host(path: Path) -> None:
    hosts = set(re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"'`)<>]*", _text(path))) - NAMESPACES
    assert hosts == set(), f"{path} names another host"
    # A protocol-relative reference (`//cdn.example/x.js`) is another host as well.
    assert not re.search(r"""(?:src|href|url|from|import)\s*[=(]?\s*["'`]//""", _text(path))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(DIST)))
def test_every_path_a_file_names_is_under_api_or_ui(path: Path) -> None:
    """A quoted path is `/api/...` or `/ui/...`, or one of the `/api`-relative paths handed to
    the API client (`get("/wings")`, `post(...)`, `api("GET", ...)`), which prefixes `/api`."""
    text = _text(path)
    for match in re.finditer(r"""["'`](/[A-Za-z0-9_${.-][^"'`\s]*)""", text):
        before = text[max(0, match.start() - 20) : match.start()]
        if re.search(r"""(?:\b(?:get|post)\(|\bapi\("[A-Z]+",\s*)$""", before):
            continue
        assert re.match(r"/(api|ui)(/|$|\$\{)", match.group(1)), f"{path}: {match.group(1)}"


def test_only_the_api_client_and_the_event_stream_reach_the_network() -> None:
    """Every request goes through `fetch`, with a URL the API client builds under `/api`, or
    the event stream's; no other way to reach a server is used."""
    for path in SOURCES:
        text = _text(path)
        for forbidden in (
            "new XMLHttpRequest",
            "new WebSocket",
            "new EventSource",
            "new Worker",
            "sendBeacon(",
            "import(",
        ):
            assert forbidden not in text or path.parent.name in ("preact", "htm"), (path, forbidden)
        for call in re.findall(r"fetch\(([^,)]*)", text):
            assert call.startswith("apiUrl(") or call == '"/api/events"', (path, call)
    assert "return `/api${path}" in _text(DIST / "js" / "api.js")


def test_scripts_load_only_from_the_dashboard() -> None:
    index = _text(DIST / "index.html")
    imports = json.loads(re.search(r'<script type="importmap">(.*?)</script>', index, re.S)[1])
    for target in imports["imports"].values():
        assert target.startswith("/ui/vendor/") and (DIST / target[4:]).is_file(), target
    for path in DIST.rglob("*.js"):
        for specifier in re.findall(
            r"""(?:^|[;\s])(?:import|export)[^"';]*?from\s*["']([^"']+)""", _text(path)
        ):
            assert specifier.startswith(("./", "../")) or specifier in imports["imports"], specifier
        # A source map named at the end of a vendored file is shipped beside it.
        for name in re.findall(r"sourceMappingURL=(\S+)", _text(path)):
            assert (path.parent / name).is_file(), (path, name)


def test_every_vendored_library_is_pinned_with_its_licence() -> None:
    notes = _text(DIST / "vendor" / "README.md")
    for library in ("preact", "htm"):
        folder = DIST / "vendor" / library
        assert (folder / "LICENSE").is_file()
        for script in folder.glob("*.js"):
            digest = __import__("hashlib").sha256(script.read_bytes()).hexdigest()
            assert digest in notes, f"{script.name}'s sha256 is not recorded in vendor/README.md"


# --- Serving ---------------------------------------------------------------------------------


def test_enabled_without_its_files_the_dashboard_is_a_503(tmp_path: Path) -> None:
    view = dashboard(web_enabled=True, root=tmp_path / "nothing")
    response = view(RequestFactory().get("/ui/"), "")
    assert response.status_code == 503
    assert b"reinstall" in response.content


def test_a_path_outside_the_files_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>")
    (tmp_path.parent / "secret.txt").write_text("no")
    view = dashboard(web_enabled=True, root=tmp_path)
    for path in ("../secret.txt", "%2e%2e/secret.txt", "/etc/passwd", "nothing.js"):
        assert view(RequestFactory().get("/ui/x"), path).status_code == 404, path
    assert view(RequestFactory().get("/ui/"), "").status_code == 200


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon serving the dashboard, with authentication on and secrets in its configuration
    (the environment's, the file's), for what must never come back."""
    root = tmp_path_factory.mktemp("dashboard")
    config = root / "config" / "memcastle" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[store]\npassword = "store-password-never-shown"\n'
        '[extraction]\nprovider = "http"\nurl = "https://reader:url-password@extract.example/v1"\n'
        '[embeddings.profiles.remote]\nprovider = "http"\nmodel = "m"\ndimensions = 8\n'
        'url = "https://embed.example/v1"\napi_key = "profile-key-never-shown"\n'
    )
    env = {
        **AUTH_ENV,
        "MEMCASTLE_WEB_ENABLE": "true",
        "MEMCASTLE_EXTRACTION_API_KEY": "extraction-key-never-shown",
    }
    running = Daemon(root, env=env).start()
    yield running
    running.stop()


SECRETS = (
    SECRET,
    "store-password-never-shown",
    "url-password",
    "profile-key-never-shown",
    "extraction-key-never-shown",
)


def test_the_files_are_public_and_every_data_call_needs_the_token(served: Daemon) -> None:
    with httpx.Client(base_url=served.base_url) as client:
        moved = client.get("/ui")
        assert moved.status_code == 302 and moved.headers["location"] == "/ui/"
        page = client.get("/ui/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "connect-src 'self'" in policy and "default-src 'none'" in policy
        assert client.get("/ui/js/main.js").headers["content-type"].startswith("text/javascript")
        assert client.head("/ui/app.css").status_code == 200
        assert client.get("/ui/no-such-file.js").status_code == 404
        # Only reading is public: anything else under /ui is held to the token.
        assert_unauthorized(client.post("/ui/"))
        assert_unauthorized(client.get("/api/config"))
        assert_unauthorized(client.get("/api/status"))
        for secret in SECRETS:
            assert secret not in page.text


def test_the_configuration_leaves_every_secret_out(served: Daemon) -> None:
    headers = {"Authorization": f"Bearer {SECRET}", "X-MemCastle-Mode": "read_only"}
    with served.client(**headers) as client:
        answer = client.get("/api/config")
        assert answer.status_code == 200, answer.text
        for secret in SECRETS:
            assert secret not in answer.text
        config = answer.json()
        assert config["secrets"] == {
            "auth.token": True,
            "store.password": True,
            "jobs.broker_url": False,
            "embeddings.profiles.local.api_key": False,
            "embeddings.profiles.remote.api_key": True,
            "extraction.api_key": True,
        }
        settings = config["settings"]
        assert settings["web"] == {"enable": True}
        assert settings["auth"] == {"enabled": True}
        assert settings["extraction"]["url"] == "https://extract.example/v1"
        assert settings["embeddings"]["profiles"]["remote"]["url"] == "https://embed.example/v1"
        assert config["config_file"].endswith("config.toml")
        assert Path(config["assets"]["dashboard"]) == DIST
        # Never gated by a memory mode: a disabled session still reads it.
        disabled = client.get("/api/config", headers={"X-MemCastle-Mode": "disabled"})
        assert disabled.status_code == 200
        assert client.get("/api/config", params={"section": "web"}).status_code == 400


def test_config_show_prints_what_the_daemon_runs_with(served: Daemon) -> None:
    shown = served.run("config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)
    assert answer["settings"]["server"]["bind"] == "127.0.0.1"
    assert answer["secrets"]["auth.token"] is True
    for secret in SECRETS:
        assert secret not in shown.stdout + shown.stderr


def test_config_show_without_a_daemon_says_so(tmp_path: Path) -> None:
    stopped = Daemon(tmp_path)
    shown = stopped.run("config", "show")
    assert shown.returncode == 1
    assert "memcastle daemon start" in shown.stderr or "not running" in shown.stderr


# --- The report covers every setting and knows every secret --------------------------------


def _field_paths(value: object, prefix: str) -> Iterator[str]:
    for item in dataclasses.fields(value):  # type: ignore[arg-type]
        yield f"{prefix}{item.name}"
        inner = getattr(value, item.name)
        if dataclasses.is_dataclass(inner):
            yield from _field_paths(inner, f"{prefix}{item.name}.")


def test_every_field_that_may_hold_a_secret_is_left_out() -> None:
    """A field added later whose name says credential is caught here, not in a leak."""
    config = load_config(env={})
    looks_secret = re.compile(r"token|password|secret|api_?key|broker|credential")
    for path in _field_paths(config, ""):
        name = path.rsplit(".", 1)[-1]
        if looks_secret.search(name):
            assert name in SECRET_FIELDS, f"{path} may hold a secret: add it to SECRET_FIELDS"
    shown = ConfigurationReport(config, dashboard_dir=DIST).show()
    for key in SECRET_KEYS:
        section, name = key.split(".")
        assert name not in shown["settings"].get(section, {}), key
        assert key in shown["secrets"], key


def test_every_field_of_the_configuration_has_a_place_in_the_report() -> None:
    """`show` fails loudly on a top-level field it does not know (a new section is found by
    itself), so this only has to run it on a whole configuration."""
    config: Config = load_config(env={})
    shown = ConfigurationReport(config, dashboard_dir=DIST).show()
    sections = {
        f.name
        for f in dataclasses.fields(config)
        if dataclasses.is_dataclass(getattr(config, f.name))
    }
    assert sections <= set(shown["settings"])
