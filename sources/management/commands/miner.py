"""`memcastle miner ...`: the miners of the daemon's configuration file, listed, shown, set,
enabled, disabled, removed, reloaded and run (`/api/miners`).

`set` changes a miner that exists and creates one that does not. An option's value is read as
JSON when it is valid JSON (`3`, `true`, `["a","b"]`) and as a string otherwise (`2026-01`).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from django.core.management.base import CommandParser

from kernel.errors import InputInvalid
from memcastle_project.cli import (
    DaemonCommand,
    Output,
    RemoteRejected,
    card,
    confirm,
    job_card,
    table,
)
from sources.management.words import credential_text, local_path, pairs

UNSETTABLE = ("locator", "wing", "credential")
NAME_HELP = "the miner's name"


class Command(DaemonCommand):
    help = "List, show, set, enable, disable, remove, reload or run the configured miners."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        actions.add("list", "the configured miners")
        actions.add("get", "one miner").add_argument("name", metavar="NAME", help=NAME_HELP)
        _add_set(actions.add("set", "create a miner, or change one (only what is given)"))
        for name, help in (
            ("enable", "enable a miner (it must be able to run)"),
            ("disable", "disable a miner"),
        ):
            actions.add(name, help).add_argument("name", metavar="NAME", help=NAME_HELP)
        remove = actions.add("remove", "remove a miner (asks first; what it mined stays)")
        remove.add_argument("name", metavar="NAME", help=NAME_HELP)
        remove.add_argument("-y", "--yes", action="store_true", help="do not ask")
        actions.add("reload", "read the configuration file again and say what changed")
        run = actions.add("run", "queue a mine job of a miner")
        run.add_argument("name", metavar="NAME", help=NAME_HELP)
        run.add_argument(
            "options",
            nargs="*",
            metavar="KEY=VALUE",
            help="this run's own options over the miner's",
        )
        run.add_argument("--full", action="store_true", help="read everything again")
        run.add_argument(
            "--allow-broaden", action="store_true", help="accept options that may read more"
        )

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            self.out.show(self.daemon.call("GET", "/api/miners")["miners"], _listing)
        elif action == "reload":
            self.out.show(self.daemon.call("POST", "/api/miners/reload"), _reloaded)
        elif action == "set":
            self.out.show(self._set(options), _miner_card)
        elif action == "run":
            body = {
                "options": pairs(options["options"]),
                "full": options["full"],
                "allow_broaden": options["allow_broaden"],
            }
            self.out.show(
                self.daemon.call("POST", _path(options["name"], "run"), body=body), job_card
            )
        elif action == "get":
            self.out.show(self.daemon.call("GET", _path(options["name"])), _miner_card)
        elif action == "remove":
            confirm(f"Remove miner {options['name']}?", yes=options["yes"])
            answer = self.daemon.call("DELETE", _path(options["name"]))
            self.out.show(answer, lambda out, removed: f"removed miner {removed['removed']}")
        else:
            self.out.show(self.daemon.call("POST", _path(options["name"], action)), _miner_card)

    def _set(self, options: dict[str, Any]) -> dict[str, Any]:
        """Change the miner; when there is none of that name, create it."""
        name = options["name"]
        patch = _patch(options)
        try:
            return self.daemon.call("PUT", _path(name), body=patch)
        except RemoteRejected as refused:
            if refused.remote_code != "memcastle::miner::not_found":
                raise
        if not options["source"]:
            raise InputInvalid("--source", f"is needed to create miner {name}")
        definition = {key: value for key, value in patch.items() if value is not None}
        definition.pop("allow_broaden", None)
        definition["scope"] = {k: v for k, v in patch.get("scope", {}).items() if v is not None}
        return self.daemon.call("POST", "/api/miners", body={"name": name, **definition})


def _add_set(parser: CommandParser) -> None:
    parser.add_argument("name", metavar="NAME", help=NAME_HELP)
    parser.add_argument("--source", help="directory, or an installed source (needed to create)")
    parser.add_argument("--locator", help="the place the source reads (a directory's path)")
    parser.add_argument("--wing", help="the wing to file into")
    credential = parser.add_mutually_exclusive_group()
    credential.add_argument(
        "--credential-env", metavar="VARIABLE", help="the credential is in this variable"
    )
    credential.add_argument(
        "--credential-file", metavar="PATH", help="the credential is in this file"
    )
    credential.add_argument(
        "--credential-oauth", action="store_true", help="the source's own sign-in"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set an option of its scope (the value is JSON when valid, else a string)",
    )
    parser.add_argument(
        "--unset-option", action="append", default=[], metavar="KEY", help="remove an option"
    )
    parser.add_argument(
        "--unset", action="append", default=[], choices=UNSETTABLE, help="remove a setting"
    )
    parser.add_argument("--disabled", action="store_true", help="save it disabled")
    parser.add_argument(
        "--allow-broaden", action="store_true", help="accept a change that may read more"
    )


def _patch(options: dict[str, Any]) -> dict[str, Any]:
    """The change `set` asks for, as the JSON merge patch PUT /api/miners/NAME takes."""
    patch: dict[str, Any] = {}
    if options["source"]:
        patch["source"] = options["source"]
    if options["locator"]:
        patch["locator"] = local_path(options["locator"])
    if options["wing"]:
        patch["wing"] = options["wing"]
    if options["credential_env"]:
        patch["credential"] = {"type": "env", "name": options["credential_env"]}
    elif options["credential_file"]:
        path = local_path(options["credential_file"])
        patch["credential"] = {"type": "file", "path": path}
    elif options["credential_oauth"]:
        patch["credential"] = {"type": "oauth"}
    for key in options["unset"]:
        if key in patch:
            raise InputInvalid(f"--unset {key}", f"contradicts the {key} given")
        patch[key] = None
    scope: dict[str, Any] = pairs(options["option"])
    for key in options["unset_option"]:
        if key in scope:
            raise InputInvalid(f"--unset-option {key}", "contradicts the --option given")
        scope[key] = None
    if scope:
        patch["scope"] = scope
    if options["disabled"]:
        patch["enabled"] = False
    if options["allow_broaden"]:
        patch["allow_broaden"] = True
    return patch


def _path(name: str, action: str | None = None) -> str:
    path = f"/api/miners/{quote(name, safe='')}"
    return f"{path}/{action}" if action else path


def _listing(out: Output, miners: list[dict[str, Any]]) -> str:
    rows = [
        [
            miner["name"],
            miner["source"],
            "yes" if miner["enabled"] else out.dim("no"),
            miner.get("locator") or "",
            miner.get("wing") or "",
            credential_text(miner.get("credential")),
        ]
        for miner in miners
    ]
    headers = ["NAME", "SOURCE", "ENABLED", "LOCATOR", "WING", "CREDENTIAL"]
    return table(headers, rows, empty="(no miners)")


def _miner_card(out: Output, miner: dict[str, Any]) -> str:
    return card(
        out,
        f"miner {miner['name']}",
        [
            ("source", miner["source"]),
            ("enabled", "yes" if miner["enabled"] else "no"),
            ("locator", miner.get("locator")),
            ("wing", miner.get("wing")),
            ("credential", credential_text(miner.get("credential"))),
            ("scope", json.dumps(miner["scope"]) if miner.get("scope") else None),
            ("config", json.dumps(miner["config"]) if miner.get("config") else None),
        ],
    )


def _reloaded(out: Output, report: dict[str, Any]) -> str:
    lines = [f"{key}: {', '.join(names)}" for key, names in report.items() if names]
    return "\n".join(lines) or "nothing changed"
