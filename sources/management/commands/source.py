"""`memcastle source ...`: the daemon's mining sources: list and show them (reads), search the
registries, install a package, a source project or a source by name, update one, enable,
disable and remove one, and sign one in (`auth`); and, on the author's machine without a
daemon, `init`, `build`, `test` and `package` a source (`sources.authoring`), and `keygen` and
`index` to publish a registry (`sources.signing`, `sources.registry_publish`).

Installing a package that asks for permissions needs consent to exactly those (cli.md): on a
terminal the command shows what the source asks for and asks; without one it is refused with
`memcastle::source::consent_required` unless `--yes` (agree to what the package asks, its digest
computed here) or `--consent DIGEST` (agree to exactly that digest). An update that asks for no
more than the installed version needs no new consent. A bare name (`NAME[@VERSION]`) comes
from a source registry, unless a file or directory of that spelling is here: the local one wins.
Consent to a source from a registry is asked after a preview of exactly what the daemon fetched
(`GET /api/source-registry/NAME@VERSION`), and the daemon checks it against what it installs.

`auth NAME` starts the source's sign-in on the daemon, tells the person what to do (a code to
type at a page, or a page to open, which it tries to open in a browser), then waits on the
daemon until the sign-in ends. No token ever reaches the CLI.
"""

from __future__ import annotations

import os
import sys
import tempfile
import webbrowser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid, MemCastleError
from memcastle_project.cli import (
    DaemonCommand,
    Output,
    RemoteRejected,
    card,
    confirm,
    is_terminal,
    table,
)
from sources import authoring
from sources.archive import read_package, write_package
from sources.building import APP_MODULE, build_component
from sources.management.commands.sources import render_sources
from sources.management.words import local_path
from sources.manifest import MANIFEST_FILE, NAME_PATTERN, Manifest, consent_digest, parse_manifest
from sources.packages import compiled_cache_dir
from sources.registry_publish import write_index
from sources.signing import key_id, keygen, public_text

GZIP = "application/gzip"
# The commands that need no daemon.
LOCAL = ("init", "build", "test", "package", "keygen", "index")
CONSENT_REQUIRED = "memcastle::source::consent_required"
REGISTRY = "/api/source-registry"


class Command(DaemonCommand):
    help = "List, show, install, update, enable, disable or remove the daemon's mining sources."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        actions.add("list", "the sources this daemon has, and the places mined")
        show = actions.add("show", "a source: its state, options and permissions")
        show.add_argument("name", metavar="NAME")
        search = actions.add("search", "find sources in the registries by words")
        search.add_argument(
            "words", metavar="Q", nargs="*", help="words of its name or description"
        )
        search.add_argument("--registry", metavar="LOC", help=REGISTRY_HELP)
        install = actions.add(
            "install",
            "install a package (.tar.gz), a source project (a directory), or a source by name "
            "from a registry",
        )
        install.add_argument(
            "place",
            metavar="FILE|DIR|NAME[@VER]",
            help="a package, a source project, or a source's name (a file or directory here of "
            "that spelling wins)",
        )
        install.add_argument("--registry", metavar="LOC", help=REGISTRY_HELP)
        install.add_argument("--enable", action="store_true", help="enable it once installed")
        agreed = install.add_mutually_exclusive_group()
        agreed.add_argument(
            "-y", "--yes", action="store_true", help="agree to the permissions it asks for"
        )
        agreed.add_argument("--consent", metavar="DIGEST", help="agree to exactly this digest")
        update = actions.add(
            "update",
            "update installed sources from their registry (all installed from one, or NAME), or "
            "replace one with a package (.tar.gz) or a source project",
        )
        update.add_argument(
            "place",
            metavar="FILE|DIR|NAME",
            nargs="?",
            help="a package, a source project, or a source's name; none: every source installed "
            "from a registry",
        )
        update.add_argument(
            "--check", action="store_true", help="only say which have a newer version"
        )
        update.add_argument("--registry", metavar="LOC", help=REGISTRY_HELP)
        update.add_argument(
            "-y", "--yes", action="store_true", help="agree to wider permissions it asks for"
        )
        for name, help in (
            ("enable", "allow a source to be mined (for a bundled one, the consent)"),
            ("disable", "stop a source from being mined"),
        ):
            actions.add(name, help).add_argument("name", metavar="NAME")
        auth = actions.add(
            "auth", "sign a source in to its account (the device flow, or a browser)"
        )
        auth.add_argument("name", metavar="NAME")
        remove = actions.add("remove", "remove an installed source; what it mined stays")
        remove.add_argument("name", metavar="NAME")
        remove.add_argument("-y", "--yes", action="store_true", help="do not ask")
        init = actions.add("init", "start a source project from a template (no daemon needed)")
        init.add_argument("name", metavar="NAME")
        init.add_argument(
            "--template", default="python", help=f"one of {', '.join(authoring.templates())}"
        )
        init.add_argument("--parent", default=".", help="where to create it (here)")
        for name, help in (
            ("build", "build the project's component (no daemon needed)"),
            ("test", "run the built component against the project's fixtures (PASS/FAIL)"),
            ("package", "write the project's .tar.gz and print its consent digest"),
        ):
            local = actions.add(name, help)
            local.add_argument("path", metavar="PATH", nargs="?", default=".")
            if name != "build":
                local.add_argument("--no-build", action="store_true", help="use what is built")
            if name == "package":
                local.add_argument("--output", metavar="FILE", help="the archive's path")
        keys = actions.add(
            "keygen", "write a new ed25519 signing key, readable by you only (no daemon needed)"
        )
        keys.add_argument("file", metavar="FILE", help="the private key's path (never overwritten)")
        index = actions.add(
            "index", "add package archives to a registry's index (no daemon needed)"
        )
        index.add_argument("archives", metavar="ARCHIVE", nargs="+")
        index.add_argument(
            "--output", metavar="FILE", default="memcastle-index.json", help="the index's path"
        )
        index.add_argument(
            "--base-url",
            metavar="URL",
            help="where the archives are served (default: beside the index, by relative URLs)",
        )
        index.add_argument("--sign", metavar="KEYFILE", help="sign each archive with this key")
        index.add_argument("--name", metavar="NAME", help="the registry's name")

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action in LOCAL:
            self._local(action, options)
        elif action == "list":
            self.out.show(self.daemon.call("GET", "/api/sources"), render_sources)
        elif action == "show":
            self.out.show(self.daemon.call("GET", _path(options["name"])), source_card)
        elif action == "search":
            params = {"q": " ".join(options["words"]) or None, "registry": _registry(options)}
            self.out.show(self.daemon.call("GET", REGISTRY, params=params), _found)
        elif action in ("install", "update") and _by_name(options["place"]):
            if action == "install":
                self._install_named(options["place"], options)
            else:
                self._update_named(options)
        elif action in ("install", "update"):
            if options.get("check") or options.get("registry"):
                raise InputInvalid(
                    "--check" if options.get("check") else "--registry",
                    "applies to a source asked for by name, not to a file or directory",
                )
            self._install(options, update=action == "update")
        elif action == "auth":
            self._sign_in(options["name"])
        elif action == "remove":
            confirm(f"Remove source {options['name']}?", yes=options["yes"])
            self.out.show(self.daemon.call("DELETE", _path(options["name"])), _removed)
        else:
            answer = self.daemon.call("POST", _path(options["name"], action))
            self.out.show(answer, source_card)

    def _sign_in(self, name: str) -> None:
        """Start the sign-in, say what to do, and wait until the daemon tells how it ended."""
        started = self.daemon.call("POST", _path(name, "auth"))
        if started["kind"] == "device":
            self.out.note(
                f"open {started['verification_uri']} and enter the code {started['user_code']}"
            )
            if started["url"] != started["verification_uri"]:
                self.out.note(f"(or open {started['url']}, which has the code filled in)")
        else:
            self.out.note(f"open this page in a browser on the daemon's machine:\n{started['url']}")
            webbrowser.open(started["url"])
        self.out.note("waiting for the sign-in to finish...")
        wait = _path(name, f"auth/{started['flow']}/wait")
        while (answer := self.daemon.call("POST", wait))["status"] == "pending":
            pass
        self.out.show(answer, _signed_in)

    def _local(self, action: str, options: dict[str, Any]) -> None:
        """The author's commands: they print progress lines on every stream (cli.md)."""
        if action == "init":
            made = authoring.init(options["name"], options["template"], Path(options["parent"]))
            self.stdout.write(f"created: {made}\nnext: memcastle source build {made}")
            return
        if action == "keygen":
            public_key = keygen(Path(options["file"]))
            self.stdout.write(
                f"key id: {key_id(public_key)}\npublic key: {public_text(public_key)}"
            )
            self.stdout.write(
                f"private key: {options['file']} (keep it secret; trust the public key with "
                "mining.trusted_keys)"
            )
            return
        if action == "index":
            self._index(options)
            return
        project = Path(options["path"]).resolve()
        if action == "build" or not options["no_build"]:
            built = authoring.build(project)
            self.stdout.write(f"built: {built} ({built.stat().st_size:,} bytes)")
        if action == "test":
            results = authoring.test(project, compiled_cache_dir(os.environ))
            for result in results:
                self.stdout.write(
                    f"{'PASS' if result.passed else 'FAIL'} {result.case}: {result.detail}"
                )
            if not all(result.passed for result in results):
                raise TestsFailed(
                    f"{sum(not result.passed for result in results)} of {len(results)} "
                    "fixture cases failed"
                )
        elif action == "package":
            output = Path(options["output"]).resolve() if options["output"] else None
            packed = authoring.package(project, output)
            self.stdout.write(f"packaged: {packed.path}\nsha256: {packed.sha256}")
            self.stdout.write(f"consent digest: {packed.consent or '(it asks for nothing)'}")

    def _index(self, options: dict[str, Any]) -> None:
        output = Path(options["output"])
        indexed = write_index(
            [Path(archive) for archive in options["archives"]],
            output,
            base_url=options["base_url"],
            key=Path(options["sign"]) if options["sign"] else None,
            name=options["name"],
        )
        for each in indexed:
            signed = each.release.signature
            self.stdout.write(
                f"indexed: {each.name} {each.release.version} (sha256 {each.release.sha256}"
                + (f", signed by {signed.key})" if signed else ", unsigned)")
            )
        self.stdout.write(f"wrote: {output}")

    def _install(self, options: dict[str, Any], *, update: bool) -> None:
        data = package_of(options["place"])
        manifest = parse_manifest(read_package(data).manifest_text)
        if update:
            self.daemon.call("GET", _path(manifest.name))
        digest = consent_digest(manifest.name, manifest.permissions)
        consent = options.get("consent") or (digest if options["yes"] else None)
        params = {"consent": consent, "enable": "true" if options.get("enable") else None}
        try:
            answer = self.daemon.upload("/api/source-packages", data, GZIP, params=params)
        except RemoteRejected as refused:
            if refused.remote_code != CONSENT_REQUIRED or consent is not None:
                raise
            self._ask_consent(manifest, refused, "update" if update else "install")
            params["consent"] = digest
            answer = self.daemon.upload("/api/source-packages", data, GZIP, params=params)
        self.out.show(answer, _installed)

    def _install_named(self, spec: str, options: dict[str, Any]) -> None:
        """Install a source by name from a registry, asking for consent as `_install` does."""
        registry, consent = _registry(options), options.get("consent")
        body = {"consent": consent, "enable": bool(options["enable"]), "registry": registry}
        route = f"{REGISTRY}/{spec}/install"
        try:
            answer = self.daemon.call("POST", route, body=body)
        except RemoteRejected as refused:
            if refused.remote_code != CONSENT_REQUIRED or consent is not None:
                raise
            body["consent"] = self._agree(spec, registry, refused, yes=options["yes"])
            answer = self.daemon.call("POST", route, body=body)
        self.out.show(answer, _installed)

    def _update_named(self, options: dict[str, Any]) -> None:
        """Update NAME, or every source installed from a registry, from its registry."""
        registry = _registry(options)
        if options["place"] is not None:
            names = [options["place"]]
        else:
            listed = self.daemon.call("GET", "/api/sources")["adapters"]
            names = [entry["name"] for entry in listed if entry["origin"] == "registry"]
        updates = []
        for name in names:
            route = f"{REGISTRY}/{name}/update"
            body: dict[str, Any] = {"check": options["check"], "registry": registry}
            try:
                answer = self.daemon.call("POST", route, body=body)
            except RemoteRejected as refused:
                if refused.remote_code != CONSENT_REQUIRED:
                    raise
                offered = self.daemon.call("POST", route, body={**body, "check": True})
                spec = f"{name}@{offered['version']}"
                body["consent"] = self._agree(
                    spec, offered["registry"], refused, yes=options["yes"], verb="update"
                )
                answer = self.daemon.call("POST", route, body=body)
            updates.append(answer)
        self.out.show({"updates": updates}, _updated)

    def _agree(
        self,
        spec: str,
        registry: str | None,
        refused: RemoteRejected,
        *,
        yes: bool,
        verb: str = "install",
    ) -> str:
        """The consent digest of what the daemon fetches for `spec`, once agreed: by `--yes`,
        or on a terminal after showing what it asks for; without one the refusal stands."""
        preview = self.daemon.call("GET", f"{REGISTRY}/{spec}", params={"registry": registry})
        if not yes:
            if not (is_terminal(sys.stdin) and is_terminal(sys.stderr)):
                raise refused
            sys.stderr.write(
                f"The {preview['name']} source {preview['version']} from {preview['registry']} "
                f"({'signed by ' + preview['signed_by'] if preview['signed_by'] else 'unsigned'}) "
                "asks for:\n"
            )
            for line in permission_lines(preview["permissions"]):
                sys.stderr.write(f"  {line}\n")
            confirm(f"Agree and {verb} it?", yes=False)
        return str(preview["consent_digest"])

    def _ask_consent(self, manifest: Manifest, refused: RemoteRejected, verb: str) -> None:
        """On a terminal, show what the source asks for and ask; without one, the refusal
        stands (`--yes` or `--consent` agree without asking)."""
        if not (is_terminal(sys.stdin) and is_terminal(sys.stderr)):
            raise refused
        permissions = manifest.permissions.normalized()
        sys.stderr.write(f"The {manifest.name} source {manifest.version} asks for:\n")
        for line in permission_lines(permissions):
            sys.stderr.write(f"  {line}\n")
        confirm(f"Agree and {verb} it?", yes=False)


class TestsFailed(MemCastleError):
    code = "memcastle::source::test_failed"
    help = "read the FAIL lines above: what the source gave against what the fixture expects"


def _path(name: str, action: str | None = None) -> str:
    return f"/api/source-packages/{name}" + (f"/{action}" if action else "")


REGISTRY_HELP = (
    "the registry to ask instead of mining.registries: an https:// URL, an http:// URL of this "
    "machine, a file:// URL or a path"
)


def _by_name(word: str | None) -> bool:
    """Whether `word` asks a registry: a source's name, optionally `@VERSION`, that is not a
    file or directory here (the local one wins); no word at all means every source."""
    if word is None:
        return True
    name, _, _ = word.partition("@")
    return not Path(word).expanduser().exists() and bool(NAME_PATTERN.fullmatch(name))


def _registry(options: dict[str, Any]) -> str | None:
    """The `--registry` given, a path of this shell made absolute for the daemon."""
    registry = options.get("registry")
    if registry is None:
        return None
    if "://" in registry:
        return str(registry)
    return str(Path(local_path(registry)).absolute())


def package_of(word: str) -> bytes:
    """The package to send: a `.tar.gz` as it is, or a source project built and packed here."""
    place = Path(word).expanduser()
    if place.is_file():
        return place.read_bytes()
    if (place / MANIFEST_FILE).is_file() and (place / f"{APP_MODULE}.py").is_file():
        with tempfile.TemporaryDirectory(prefix="memcastle-source-") as scratch:
            component = Path(scratch) / "source.wasm"
            build_component([place], component)
            return write_package(
                (place / MANIFEST_FILE).read_text(encoding="utf-8"), component.read_bytes()
            )
    raise InputInvalid(
        "FILE|DIR",
        f"{str(place)!r} is neither a package file nor a source project (a directory with "
        f"{MANIFEST_FILE} and {APP_MODULE}.py)",
    )


def permission_lines(permissions: dict[str, Any]) -> list[str]:
    lines = [f"read {path}" for path in permissions.get("filesystem", {}).get("read", [])]
    lines += [f"run {program}" for program in permissions.get("process", [])]
    lines += [f"the variable {name}" for name in permissions.get("env", [])]
    if permissions.get("network"):
        lines.append("the network")
    if permissions.get("oauth"):
        lines.append(f"a sign-in at {permissions['oauth'].get('token_url')}")
    return lines or ["nothing"]


def source_card(out: Output, source: dict[str, Any]) -> str:
    permissions = source.get("permissions")
    return card(
        out,
        f"source {source['name']}",
        [
            ("state", out.status(str(source["state"]))),
            ("unavailable", source.get("unavailable_reason")),
            ("origin", source.get("origin")),
            ("version", source.get("version")),
            ("description", source.get("description")),
            ("options", ", ".join(option["name"] for option in source.get("options", []))),
            ("asks for", "; ".join(permission_lines(permissions)) if permissions else None),
            ("consent", source.get("consent_digest")),
        ],
    )


def _installed(out: Output, answer: dict[str, Any]) -> str:
    verb = "replaced" if answer["replaced"] else "installed"
    return f"{verb}: {answer['source']['name']}\n{source_card(out, answer['source'])}"


def _found(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [
            hit["name"],
            hit["version"] or "(none runs here)",
            hit["installed"] or "",
            hit["registry"],
            hit["description"],
        ]
        for hit in answer["results"]
    ]
    return table(["NAME", "VERSION", "INSTALLED", "REGISTRY", "DESCRIPTION"], rows)


def _updated(out: Output, answer: dict[str, Any]) -> str:
    if not answer["updates"]:
        return "no source installed from a registry"
    return "\n".join(
        f"{each['name']}: {each['installed'] or '?'} -> {each['version']} ({each['status']})"
        for each in answer["updates"]
    )


def _signed_in(out: Output, answer: dict[str, Any]) -> str:
    expires = answer.get("expires_at")
    return (
        f"signed in: {answer['source']} (scopes: {', '.join(answer['scopes']) or 'none'}; "
        f"stored in the {answer['stored_in']}"
        + (f"; access token valid until {expires})" if expires else ")")
    )


def _removed(out: Output, answer: dict[str, Any]) -> str:
    return f"removed: {answer['removed']} (what it mined stays in the palace)"
