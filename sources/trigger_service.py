"""The triggers of one daemon, served to REST, the CLI and MCP: list and show them (reads),
define, change, enable, disable, remove and reload them (configuration, not gated by the memory
mode), and fire one (a write: it runs its miner).

The definitions are the `[[triggers]]` of the configuration file (`sources.section_file`), read
again whenever the file changed; what running them taught the daemon is in the store
(`TriggerRepository`). `sources.trigger_supervisor` runs the enabled ones through `fire`.
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel.clock import utc_now
from kernel.config import WebhookConfig
from kernel.context import RequestContext, without_channel
from kernel.errors import InputInvalid, MemCastleError
from kernel.events import EventBus
from kernel.logs import fields
from kernel.validation import body_object
from sources.section_file import DefinitionError, Planned, configured
from sources.triggers import (
    KEYS,
    TRIGGERS,
    NotActivatable,
    Trigger,
    TriggerDisabled,
    TriggerInvalid,
    TriggerNotFound,
    TriggersFileRefused,
    next_due,
    parse_trigger,
    timetable_key,
)

if TYPE_CHECKING:
    from sources.miner_service import MinerService
    from sources.repository import TriggerRepository

logger = logging.getLogger(__name__)

REPORT_KEYS = ("added", "removed", "changed", "enabled", "disabled")
PATCH_KEYS = (*KEYS, "settings")
FIRED_BY = "trigger"


class TriggerStates:
    """What running each trigger taught the daemon, kept in the store and in memory.

    This daemon is the only writer of its triggers' state, so it reads the rows once and then
    writes through: a webhook delivery costs no read of it."""

    def __init__(self, repository: TriggerRepository) -> None:
        self._repository = repository
        self._states: dict[str, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def all(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: dict(state) for name, state in self._loaded().items()}

    def get(self, name: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._loaded().get(name, {}))

    def put(
        self,
        name: str,
        state: Mapping[str, Any],
        now: dt.datetime,
        *,
        deliveries: Sequence[str] = (),
    ) -> None:
        """Save `state`; with `deliveries` (their keys), record that the webhook deliveries
        fired its `last_job`, in the same write."""
        with self._lock:
            job = state.get("last_job")
            self._repository.put_state(name, state, now, deliveries=deliveries, job=job)
            self._loaded()[name] = dict(state)

    def delete(self, name: str) -> None:
        with self._lock:
            self._repository.delete_state(name)
            self._loaded().pop(name, None)

    def _loaded(self) -> dict[str, dict[str, Any]]:
        if self._states is None:
            self._states = self._repository.states()
        return self._states


class TriggerService:
    """The triggers of one daemon, as its configuration file holds them, with their state."""

    def __init__(
        self,
        path: Path,
        miners: MinerService,
        repository: TriggerRepository,
        events: EventBus,
        webhook: WebhookConfig,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._miners = miners
        self._states = TriggerStates(repository)
        self._events = events
        self._webhook = webhook
        self._clock = clock
        self._environ = os.environ if environ is None else environ
        self._set = configured(path, TRIGGERS)
        self._lock = self._set.lock
        self._reported = builtins.list(self._set.entries)

    # Reading.

    def list(self, ctx: RequestContext) -> dict[str, Any]:
        ctx.require_read("trigger_list")
        triggers = sorted(self.current(), key=lambda trigger: trigger.name)
        states = self._states.all()
        return {"triggers": [self._shown(t, states.get(t.name, {})) for t in triggers]}

    def get(self, ctx: RequestContext, name: object) -> dict[str, Any]:
        ctx.require_read("trigger_get")
        trigger = self._find(name)
        return self._shown(trigger, self._states.get(trigger.name))

    def current(self) -> builtins.list[Trigger]:
        """The triggers as the file holds them now (a hand edit is picked up here)."""
        with self._lock:
            self._refresh()
            return builtins.list(self._set.entries)

    def _shown(self, trigger: Trigger, state: Mapping[str, Any]) -> dict[str, Any]:
        shown = trigger.shown(self._environ)
        problems = self.problems(trigger) if trigger.enabled else []
        shown["status"] = status(trigger, state, problems)
        if problems:
            shown["unavailable_reason"] = "; ".join(problems)
        shown["state"] = {
            "last_fired": state.get("last_fired"),
            "next_due": state.get("next_due") if trigger.enabled else None,
            "fires": state.get("fires", 0),
            "failures": state.get("failures", 0),
            "last_error": state.get("last_error"),
            "last_job": state.get("last_job"),
            "watching": bool(state.get("watching")) if trigger.type == "watch" else None,
        }
        return shown

    # Changing the file.

    def define(self, data: object) -> dict[str, Any]:
        trigger = _definition(without_channel(body_object(data)))
        with self._lock:
            self._set.writable()
            if self._set.indexed(trigger.name) is not None:
                raise TriggerInvalid(
                    f"`name` {trigger.name!r} is taken by another trigger",
                    help="choose another name, or change that trigger with PUT "
                    f"/api/triggers/{trigger.name} (`memcastle trigger set`)",
                )
            if trigger.enabled:
                self._check_activatable(trigger)
            self._write([*self._set.kept(), Planned(trigger)])
        self._started(trigger, None)
        self._announce("created", trigger.name, "defined")
        return self._shown(trigger, self._states.get(trigger.name))

    def change(self, name: str, data: object) -> dict[str, Any]:
        """Apply a JSON merge patch to a trigger's definition: a key replaces its value, null
        removes it, `settings` merges key by key. A new `type` starts its settings afresh."""
        patch = without_channel(body_object(data))
        for key in patch:
            if key not in PATCH_KEYS:
                raise InputInvalid(
                    key, f"is not a field of a trigger change (known: {', '.join(PATCH_KEYS)})"
                )
        with self._lock:
            self._set.writable()
            index, old = self._indexed(name)
            new = _definition(_merged(old, patch))
            if new.name != old.name and self._set.indexed(new.name) is not None:
                raise TriggerInvalid(f"`name` {new.name!r} is taken by another trigger")
            if new.enabled:
                self._check_activatable(new)
            self._write(self._set.replacing(index, new))
        if new.name != old.name:
            self._states.delete(old.name)
        self._started(new, old)
        self._announce("updated", new.name, "changed")
        return self._shown(new, self._states.get(new.name))

    def enable(self, name: str) -> dict[str, Any]:
        return self._switch(name, enabled=True)

    def disable(self, name: str) -> dict[str, Any]:
        return self._switch(name, enabled=False)

    def _switch(self, name: str, *, enabled: bool) -> dict[str, Any]:
        with self._lock:
            self._set.writable()
            index, trigger = self._indexed(name)
            if trigger.enabled == enabled:
                return self._shown(trigger, self._states.get(trigger.name))
            old, trigger = trigger, replace(trigger, enabled=enabled)
            if enabled:
                self._check_activatable(trigger)
            self._write(self._set.replacing(index, trigger))
        self._started(trigger, old)
        self._announce("updated", trigger.name, "enabled" if enabled else "disabled")
        return self._shown(trigger, self._states.get(trigger.name))

    def remove(self, name: str) -> dict[str, Any]:
        with self._lock:
            self._set.writable()
            index, trigger = self._indexed(name)
            self._write([planned for planned in self._set.kept() if planned.origin != index])
        self._states.delete(trigger.name)
        self._announce("deleted", trigger.name, "removed")
        return {"removed": trigger.name}

    def reload(self) -> dict[str, Any]:
        """Read the file now and report what changed since start-up or the last reload or
        write."""
        with self._lock:
            self._refresh(force=True)
            if self._set.error is not None:
                raise TriggersFileRefused(f"{self._set.error}; the last good triggers are kept")
            report = _report(self._reported, self._set.entries)
            self._reported = builtins.list(self._set.entries)
        return report

    # Firing.

    def fire(self, ctx: RequestContext, name: str) -> dict[str, Any]:
        """Run the trigger's miner now, as a fire of the trigger would: `queued`, or
        `coalesced` into a run of it already queued."""
        ctx.require_write("trigger_fire")
        trigger = self._find(name)
        if not trigger.enabled:
            raise TriggerDisabled(f"trigger {trigger.name} is disabled")
        return self.run(trigger, ctx)

    def run(
        self,
        trigger: Trigger,
        ctx: RequestContext | None = None,
        *,
        deliveries: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Fire `trigger` (the supervisor, the webhook listener and `fire` come here): its
        miner's job queued or joined, counted in its state; a refusal is counted as a failure
        and raised. Unattended fires are requested by `trigger`. `deliveries` are the keys of
        the webhook deliveries that fired it, whose rows are given the job in the same write."""
        ctx = ctx or RequestContext.build(requested_by=FIRED_BY)
        now = self._clock()
        state = self._states.get(trigger.name)
        try:
            job, joined = self._miners.fire(ctx, trigger.miner)
        except MemCastleError as exc:
            self.failed(trigger.name, state, f"{exc.code}: {exc.message}")
            raise
        state.update(last_fired=now, fires=state.get("fires", 0) + 1, last_job=job["id"])
        self._states.put(trigger.name, state, now, deliveries=deliveries)
        word = "coalesced" if joined else "fired"
        self._announce("updated", trigger.name, word)
        logger.info(
            "trigger fired", extra=fields(trigger=trigger.name, job_id=job["id"], outcome=word)
        )
        return {"status": "coalesced" if joined else "queued", "job": job["id"]}

    def failed(self, name: str, state: dict[str, Any], error: str) -> None:
        """Count a failure of the trigger's last fire (refused, or its job failed)."""
        state.update(failures=state.get("failures", 0) + 1, last_error=error)
        self._states.put(name, state, self._clock())
        self._announce("updated", name, "failed")

    def succeeded(self, name: str, state: dict[str, Any]) -> None:
        state.update(failures=0)
        self._states.put(name, state, self._clock())

    # What a trigger needs.

    def problems(self, trigger: Trigger) -> builtins.list[str]:
        """What is missing for `trigger` to run: nothing when it can."""
        miner = self._miners.find(trigger.miner)
        if miner is None:
            return [f"no miner is named {trigger.miner!r} (define it with `memcastle miner set`)"]
        missing = self._miners.problems(miner)
        declared = self._miners.source_triggers(miner.source)
        if trigger.type in ("watch", "webhook") and trigger.type not in declared:
            missing.append(
                f"the {miner.source} source of miner {miner.name} cannot be started by a "
                f"{trigger.type} trigger (its manifest declares no [triggers.{trigger.type}])"
            )
        if trigger.type == "watch" and not os.path.isdir(trigger.path):
            missing.append(f"the watched directory {trigger.path} does not exist")
        if trigger.type == "webhook":
            if not self._webhook.enable:
                missing.append("the webhook listener is off: set `enable = true` in [webhook]")
            if trigger.credential is None:
                missing.append(
                    "the webhook has no secret: give it a credential (an env or a file one)"
                )
            elif trigger.secret() is None:
                where = "variable is not set" if trigger.credential.kind == "env" else "file"
                missing.append(
                    f"the webhook's secret does not resolve (its {where} "
                    + ("" if trigger.credential.kind == "env" else "cannot be read ")
                    + "in the daemon's environment)"
                )
        return missing

    def _check_activatable(self, trigger: Trigger) -> None:
        missing = self.problems(trigger)
        if missing:
            raise NotActivatable(
                f"trigger {trigger.name} cannot be enabled: {'; '.join(missing)}; nothing was "
                "written"
            )

    # State.

    def schedule(self, trigger: Trigger, state: dict[str, Any], now: dt.datetime) -> None:
        """Set a timetabled trigger's next due time one interval from `now` (a first enable, a
        changed timetable, a fire)."""
        interval = state.get("interval") if trigger.type == "poll" else None
        state.update(
            next_due=next_due(trigger, now, interval=interval), timetable=timetable_key(trigger)
        )
        self._states.put(trigger.name, state, now)

    def state(self, name: str) -> dict[str, Any]:
        return self._states.get(name)

    def save_state(self, name: str, state: Mapping[str, Any]) -> None:
        self._states.put(name, state, self._clock())

    def _started(self, trigger: Trigger, old: Trigger | None) -> None:
        """A trigger enabled now, or whose timetable changed, is first due one interval on."""
        if not (trigger.enabled and trigger.timetabled):
            return
        if old is not None and old.enabled and timetable_key(old) == timetable_key(trigger):
            return
        state = self._states.get(trigger.name)
        state.pop("interval", None)
        self.schedule(trigger, state, self._clock())

    # The file's state.

    def _refresh(self, *, force: bool = False) -> None:
        before = self._set.refresh(force=force)
        if before is None:
            return
        report = _report(before, self._set.entries)
        if any(report.values()):
            logger.info("picked up an edit of the triggers configuration: %s", report)

    def _write(self, plan: Sequence[Planned[Trigger]]) -> None:
        self._set.write(plan)
        self._reported = builtins.list(self._set.entries)

    def _find(self, name: object) -> Trigger:
        with self._lock:
            self._refresh()
            return self._indexed(name)[1]

    def _indexed(self, name: object) -> tuple[int, Trigger]:
        found = self._set.indexed(name)
        if found is None:
            raise TriggerNotFound(f"no trigger is named {name!r}")
        return found

    def _announce(self, action: str, name: str, word: str) -> None:
        self._events.publish("trigger", action, name=name, event=word)


def status(trigger: Trigger, state: Mapping[str, Any], problems: Sequence[str]) -> str:
    if not trigger.enabled:
        return "disabled"
    if problems:
        return "unavailable"
    return "failing" if state.get("failures", 0) else "active"


def _definition(raw: Mapping[str, Any]) -> Trigger:
    """A trigger from a request's body: the common keys, and the type's settings under
    `settings` (the file has them beside the common keys)."""
    for key in raw:
        if key not in PATCH_KEYS:
            raise TriggerInvalid(
                f"`{key}` is not a field of a trigger (known: {', '.join(PATCH_KEYS)}); give "
                "the type's settings under `settings`"
            )
    flat = {key: value for key, value in raw.items() if key != "settings"}
    settings = raw.get("settings")
    if settings is not None and not isinstance(settings, Mapping):
        raise TriggerInvalid("`settings` must be an object of the type's settings")
    for key, value in (settings or {}).items():
        if key in KEYS:
            raise TriggerInvalid(f"`settings.{key}` is not a setting: give it beside settings")
        flat[key] = value
    try:
        return parse_trigger(flat)
    except DefinitionError as exc:
        raise TriggerInvalid(str(exc)) from None


def _merged(trigger: Trigger, patch: Mapping[str, Any]) -> dict[str, Any]:
    definition = trigger.definition()
    common = {key: definition[key] for key in KEYS if key in definition}
    kind = patch.get("type", trigger.type)
    settings = dict(trigger.settings) if kind == trigger.type else {}
    for key, value in patch.items():
        if key == "settings":
            if value is not None and not isinstance(value, Mapping):
                raise TriggerInvalid("`settings` must be an object of the type's settings")
            settings = {} if value is None else {**settings, **value}
        elif value is None:
            common.pop(key, None)
        else:
            common[key] = value
    return {**common, "settings": {k: v for k, v in settings.items() if v is not None}}


def _report(before: Sequence[Trigger], after: Sequence[Trigger]) -> dict[str, Any]:
    old = {trigger.name: trigger for trigger in before}
    new = {trigger.name: trigger for trigger in after}
    both = [name for name in new if name in old and old[name] != new[name]]
    return {
        "added": sorted(set(new) - set(old)),
        "removed": sorted(set(old) - set(new)),
        "changed": sorted(both),
        "enabled": sorted(n for n in both if new[n].enabled and not old[n].enabled),
        "disabled": sorted(n for n in both if old[n].enabled and not new[n].enabled),
    }
