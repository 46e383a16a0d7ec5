"""`memcastle trigger ...`: the triggers of the daemon's configuration file, listed, shown, set,
enabled, disabled, removed, reloaded and fired (`/api/triggers`).

`set` changes a trigger that exists and creates one that does not; a new trigger is disabled
unless `--enable` is given. A setting's value is read as JSON when it is valid JSON (`true`) and
as a string otherwise (`30s`); another `--type` starts the settings afresh.
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
    table,
)
from sources.management.words import credential_text, local_path, pairs
from sources.triggers import TYPES

NAME_HELP = "the trigger's name"


class Command(DaemonCommand):
    help = "List, show, set, enable, disable, remove, reload or fire the configured triggers."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        actions.add("list", "the configured triggers, with their status")
        actions.add("get", "one trigger").add_argument("name", metavar="NAME", help=NAME_HELP)
        _add_set(actions.add("set", "create a trigger, or change one (only what is given)"))
        for name, help in (
            ("enable", "enable a trigger (everything it needs must be there)"),
            ("disable", "disable a trigger"),
            ("fire", "fire a trigger now: its miner's job is queued or joins a queued one"),
        ):
            actions.add(name, help).add_argument("name", metavar="NAME", help=NAME_HELP)
        remove = actions.add("remove", "remove a trigger (asks first)")
        remove.add_argument("name", metavar="NAME", help=NAME_HELP)
        remove.add_argument("-y", "--yes", action="store_true", help="do not ask")
        actions.add("reload", "read the configuration file again and say what changed")

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            self.out.show(self.daemon.call("GET", "/api/triggers")["triggers"], _listing)
        elif action == "reload":
            self.out.show(self.daemon.call("POST", "/api/triggers/reload"), _reloaded)
        elif action == "set":
            self.out.show(self._set(options), _trigger_card)
        elif action == "get":
            self.out.show(self.daemon.call("GET", _path(options["name"])), _trigger_card)
        elif action == "fire":
            answer = self.daemon.call("POST", _path(options["name"], "fire"))
            self.out.show(answer, lambda out, fired: f"{fired['status']}: job {fired['job']}")
        elif action == "remove":
            confirm(f"Remove trigger {options['name']}?", yes=options["yes"])
            answer = self.daemon.call("DELETE", _path(options["name"]))
            self.out.show(answer, lambda out, removed: f"removed trigger {removed['removed']}")
        else:
            self.out.show(self.daemon.call("POST", _path(options["name"], action)), _trigger_card)

    def _set(self, options: dict[str, Any]) -> dict[str, Any]:
        """Change the trigger; when there is none of that name, create it."""
        name = options["name"]
        patch = _patch(options)
        try:
            return self.daemon.call("PUT", _path(name), body=patch)
        except RemoteRejected as refused:
            if refused.remote_code != "memcastle::trigger::not_found":
                raise
        for flag in ("miner", "type"):
            if not options[flag]:
                raise InputInvalid(f"--{flag}", f"is needed to create trigger {name}")
        definition = {key: value for key, value in patch.items() if value is not None}
        settings = {k: v for k, v in patch.get("settings", {}).items() if v is not None}
        definition["settings"] = settings
        return self.daemon.call("POST", "/api/triggers", body={"name": name, **definition})


def _add_set(parser: CommandParser) -> None:
    parser.add_argument("name", metavar="NAME", help=NAME_HELP)
    parser.add_argument("--miner", help="the miner it runs (needed to create)")
    parser.add_argument(
        "--type", choices=TYPES, help="when it fires (needed to create; another drops settings)"
    )
    credential = parser.add_mutually_exclusive_group()
    credential.add_argument(
        "--credential-env", metavar="VARIABLE", help="a webhook's secret is in this variable"
    )
    credential.add_argument(
        "--credential-file", metavar="PATH", help="a webhook's secret is in this file"
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a setting of its type (every=1h, path=/srv/notes, auth=token, ...)",
    )
    parser.add_argument(
        "--unset-setting", action="append", default=[], metavar="KEY", help="remove a setting"
    )
    parser.add_argument(
        "--unset", action="append", default=[], choices=("credential",), help="remove it"
    )
    parser.add_argument("--enable", action="store_true", help="enable it too")


def _patch(options: dict[str, Any]) -> dict[str, Any]:
    """The change `set` asks for, as the JSON merge patch PUT /api/triggers/NAME takes."""
    patch: dict[str, Any] = {}
    for key in ("miner", "type"):
        if options[key]:
            patch[key] = options[key]
    if options["credential_env"]:
        patch["credential"] = {"type": "env", "name": options["credential_env"]}
    elif options["credential_file"]:
        patch["credential"] = {"type": "file", "path": local_path(options["credential_file"])}
    if "credential" in options["unset"]:
        if "credential" in patch:
            raise InputInvalid("--unset credential", "contradicts the credential given")
        patch["credential"] = None
    settings: dict[str, Any] = pairs(options["setting"])
    if isinstance(settings.get("path"), str):
        settings["path"] = local_path(settings["path"])
    for key in options["unset_setting"]:
        if key in settings:
            raise InputInvalid(f"--unset-setting {key}", "contradicts the --setting given")
        settings[key] = None
    if settings:
        patch["settings"] = settings
    if options["enable"]:
        patch["enabled"] = True
    return patch


def _path(name: str, action: str | None = None) -> str:
    path = f"/api/triggers/{quote(name, safe='')}"
    return f"{path}/{action}" if action else path


def _listing(out: Output, triggers: list[dict[str, Any]]) -> str:
    rows = [
        [
            trigger["name"],
            trigger["type"],
            trigger["miner"],
            trigger["status"] if trigger["enabled"] else out.dim(trigger["status"]),
            trigger["state"].get("next_due") or "",
            str(trigger["state"].get("fires", 0)),
        ]
        for trigger in triggers
    ]
    headers = ["NAME", "TYPE", "MINER", "STATUS", "NEXT DUE", "FIRES"]
    return table(headers, rows, empty="(no triggers)")


def _trigger_card(out: Output, trigger: dict[str, Any]) -> str:
    state = trigger["state"]
    return card(
        out,
        f"trigger {trigger['name']}",
        [
            ("miner", trigger["miner"]),
            ("type", trigger["type"]),
            ("enabled", "yes" if trigger["enabled"] else "no"),
            ("status", trigger["status"]),
            ("missing", trigger.get("unavailable_reason")),
            ("settings", json.dumps(trigger["settings"]) if trigger.get("settings") else None),
            ("secret", credential_text(trigger.get("credential"))),
            ("next due", state.get("next_due")),
            ("last fired", state.get("last_fired")),
            ("fires", str(state.get("fires", 0))),
            ("failures", str(state["failures"]) if state.get("failures") else None),
            ("last error", state.get("last_error")),
            ("last job", state.get("last_job")),
        ],
    )


def _reloaded(out: Output, report: dict[str, Any]) -> str:
    lines = [f"{key}: {', '.join(names)}" for key, names in report.items() if names]
    return "\n".join(lines) or "nothing changed"
