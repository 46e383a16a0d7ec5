"""`memcastle source ...`: the daemon's mining sources: list and show them (reads), install a
package or a source project, update one, enable, disable and remove one; and, on the author's
machine without a daemon, `init`, `build`, `test` and `package` a source (`sources.authoring`).

Installing a package that asks for permissions needs consent to exactly those (cli.md): on a
terminal the command shows what the source asks for and asks; without one it is refused with
`memcastle::source::consent_required` unless `--yes` (agree to what the package asks, its digest
computed here) or `--consent DIGEST` (agree to exactly that digest). An update that asks for no
more than the installed version needs no new consent. A bare name (`NAME[@VERSION]`) would come
from a source registry, which this version cannot reach yet: it is refused as not implemented.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
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
)
from sources import authoring
from sources.archive import read_package, write_package
from sources.building import APP_MODULE, build_component
from sources.management.commands.sources import render_sources
from sources.manifest import MANIFEST_FILE, Manifest, consent_digest, parse_manifest
from sources.packages import compiled_cache_dir

GZIP = "application/gzip"
# The commands that need no daemon.
LOCAL = ("init", "build", "test", "package")
CONSENT_REQUIRED = "memcastle::source::consent_required"
# What a registry would be asked for: a source's name, optionally pinned to a version.
REGISTRY_NAME = re.compile(r"^[a-z][a-z0-9_-]*(@[0-9A-Za-z.+-]+)?$")


class Command(DaemonCommand):
    help = "List, show, install, update, enable, disable or remove the daemon's mining sources."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        actions.add("list", "the sources this daemon has, and the places mined")
        show = actions.add("show", "a source: its state, options and permissions")
        show.add_argument("name", metavar="NAME")
        install = actions.add(
            "install", "install a package (.tar.gz) or a source project (a directory)"
        )
        install.add_argument("place", metavar="FILE|DIR")
        install.add_argument("--enable", action="store_true", help="enable it once installed")
        agreed = install.add_mutually_exclusive_group()
        agreed.add_argument(
            "-y", "--yes", action="store_true", help="agree to the permissions it asks for"
        )
        agreed.add_argument("--consent", metavar="DIGEST", help="agree to exactly this digest")
        update = actions.add(
            "update", "replace an installed source with a package (.tar.gz) or a source project"
        )
        update.add_argument("place", metavar="FILE|DIR")
        update.add_argument(
            "-y", "--yes", action="store_true", help="agree to wider permissions it asks for"
        )
        for name, help in (
            ("enable", "allow a source to be mined (for a bundled one, the consent)"),
            ("disable", "stop a source from being mined"),
        ):
            actions.add(name, help).add_argument("name", metavar="NAME")
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

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action in LOCAL:
            self._local(action, options)
        elif action == "list":
            self.out.show(self.daemon.call("GET", "/api/sources"), render_sources)
        elif action == "show":
            self.out.show(self.daemon.call("GET", _path(options["name"])), source_card)
        elif action in ("install", "update"):
            self._install(options, update=action == "update")
        elif action == "remove":
            confirm(f"Remove source {options['name']}?", yes=options["yes"])
            self.out.show(self.daemon.call("DELETE", _path(options["name"])), _removed)
        else:
            answer = self.daemon.call("POST", _path(options["name"], action))
            self.out.show(answer, source_card)

    def _local(self, action: str, options: dict[str, Any]) -> None:
        """The author's commands: they print progress lines on every stream (cli.md)."""
        if action == "init":
            made = authoring.init(options["name"], options["template"], Path(options["parent"]))
            self.stdout.write(f"created: {made}\nnext: memcastle source build {made}")
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


class RegistriesUnavailable(MemCastleError):
    """A source asked for by name: that needs a source registry, which is not there yet."""

    code = "memcastle::cli::not_implemented"
    help = "give a package (.tar.gz) or a source project's directory instead"


class TestsFailed(MemCastleError):
    code = "memcastle::source::test_failed"
    help = "read the FAIL lines above: what the source gave against what the fixture expects"


def _path(name: str, action: str | None = None) -> str:
    return f"/api/source-packages/{name}" + (f"/{action}" if action else "")


def package_of(word: str) -> bytes:
    """The package to send: a `.tar.gz` as it is, or a source project built and packed here.
    A local file or directory wins over a registry name of the same spelling."""
    place = Path(word).expanduser()
    if not place.exists() and REGISTRY_NAME.match(word):
        raise RegistriesUnavailable(
            f"{word!r} is not a file or directory here, and installing or updating a source by "
            "name needs a source registry: registries are not available yet"
        )
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


def _removed(out: Output, answer: dict[str, Any]) -> str:
    return f"removed: {answer['removed']} (what it mined stays in the palace)"
