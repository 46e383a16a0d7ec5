"""The miners of one daemon, served to REST, the CLI and MCP: list and show them (reads), create,
change, enable, disable, remove and reload them (not gated by the memory mode: they say what the
daemon is configured to do), and run one (a write: it submits a mine job).

The set is the one the configuration file holds (`sources.section_file`), read again whenever the
file's signature changed; a file that no longer reads keeps the last good set and refuses writes.
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel.context import RequestContext, without_channel
from kernel.errors import InputInvalid, MemCastleError
from kernel.validation import body_object
from sources.credentials import CredentialRequired
from sources.miners import (
    DIRECTORY,
    MINERS,
    PATCH_KEYS,
    RUN_KEYS,
    ConfigFileRefused,
    Miner,
    MinerDisabled,
    MinerInvalid,
    MinerNotFound,
    NotRunnable,
    ScopeBroadened,
    Value,
    broadening,
    flatten,
    parse_miner,
    parse_options,
)
from sources.section_file import DefinitionError, Planned, configured

if TYPE_CHECKING:
    from jobs.services import JobService
    from sources.packages import SourcePackages

logger = logging.getLogger(__name__)


class MinerService:
    """The miners of one daemon, as its configuration file holds them.

    Every request first looks at the file's signature, so a hand edit is picked up on the next
    one. Listing and showing are reads of memory (what a palace mines says what it holds),
    running is a write; the rest manage configuration and are not gated by the memory mode."""

    def __init__(
        self,
        path: Path,
        packages: SourcePackages,
        jobs: JobService,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._packages = packages
        self._jobs = jobs
        self._environ = os.environ if environ is None else environ
        self._set = configured(path, MINERS)
        self._lock = self._set.lock
        # The set as of start-up or the last reload or write, which `reload` reports against.
        self._reported = builtins.list(self._set.entries)

    # Reading.

    def list(self, ctx: RequestContext) -> dict[str, Any]:
        ctx.require_read("miner_list")
        with self._lock:
            self._refresh()
            miners = sorted(self._miners, key=lambda miner: miner.name)
        return {"miners": [self._shown(miner) for miner in miners]}

    def get(self, ctx: RequestContext, name: object) -> dict[str, Any]:
        ctx.require_read("miner_get")
        with self._lock:
            self._refresh()
            return self._shown(self._find(name))

    # Changing the file.

    def create(self, data: object) -> dict[str, Any]:
        definition = without_channel(body_object(data))
        miner = _definition(definition)
        with self._lock:
            self._writable()
            if any(other.name == miner.name for other in self._miners):
                raise MinerInvalid(
                    f"`name` {miner.name!r} is taken by another miner",
                    help="choose another name, or change that miner with PUT "
                    f"/api/miners/{miner.name} (`memcastle miner set`)",
                )
            if miner.enabled:
                self._check_usable(miner)
            plan = [*self._kept(), Planned(miner)]
            self._write(plan)
        return self._shown(miner)

    def change(self, name: str, data: object) -> dict[str, Any]:
        """Apply a JSON merge patch to a miner: a key replaces its value, null removes it, and
        `scope` and `config` merge key by key. A change that may broaden what the miner reads
        needs `allow_broaden`."""
        patch = without_channel(body_object(data))
        for key in patch:
            if key not in PATCH_KEYS:
                raise InputInvalid(
                    key, f"is not a field of a miner change (known: {', '.join(PATCH_KEYS)})"
                )
        allow = _flag(patch, "allow_broaden")
        with self._lock:
            self._writable()
            index, old = self._indexed(name)
            new = _definition(_merged(old.definition(), patch))
            if new.name != old.name and any(other.name == new.name for other in self._miners):
                raise MinerInvalid(f"`name` {new.name!r} is taken by another miner")
            if new.enabled:
                self._check_usable(new)
            reasons = broadening(old, new, self._breadths(new.source))
            if reasons and not allow:
                raise ScopeBroadened(
                    f"the change to miner {old.name} may broaden what it reads "
                    f"({', '.join(reasons)}); nothing was written"
                )
            self._write(self._replacing(index, new))
        return self._shown(new)

    def enable(self, name: str) -> dict[str, Any]:
        return self._switch(name, enabled=True)

    def disable(self, name: str) -> dict[str, Any]:
        return self._switch(name, enabled=False)

    def _switch(self, name: str, *, enabled: bool) -> dict[str, Any]:
        with self._lock:
            self._writable()
            index, miner = self._indexed(name)
            if miner.enabled != enabled:
                miner = replace(miner, enabled=enabled)
                if enabled:
                    self._check_usable(miner)
                self._write(self._replacing(index, miner))
        return self._shown(miner)

    def remove(self, name: str) -> dict[str, Any]:
        with self._lock:
            self._writable()
            index, miner = self._indexed(name)
            self._write([planned for planned in self._kept() if planned.origin != index])
        return {"removed": miner.name}

    def reload(self) -> dict[str, Any]:
        """Read the file now and report what changed since start-up or the last reload or
        write: added, removed, changed, enabled, disabled and broadened miners."""
        with self._lock:
            self._refresh(force=True)
            if self._set.error is not None:
                raise ConfigFileRefused(f"{self._set.error}; the last good miners are kept")
            report = self._report(self._reported, self._miners)
            self._reported = builtins.list(self._miners)
        return report

    # Running.

    def run(self, ctx: RequestContext, name: str, data: object) -> dict[str, Any]:
        """Submit a mine job of the miner: its scope and config (and the run's own `options`
        over them) as the job's options. A write, because the job files drawers."""
        ctx.require_write("miner_run")
        body = without_channel(body_object(data))
        for key in body:
            if key not in RUN_KEYS:
                raise InputInvalid(
                    key, f"is not a field of a miner run (known: {', '.join(RUN_KEYS)})"
                )
        extra = _run_options(body.get("options"))
        job, _ = self._submit(
            ctx, name, extra, full=_flag(body, "full"), allow_broaden=_flag(body, "allow_broaden")
        )
        return job

    def fire(self, ctx: RequestContext, name: str) -> tuple[dict[str, Any], bool]:
        """A trigger's run of the miner, as configured: the job, and whether it joined one
        already queued (jobs.md section 8)."""
        ctx.require_write("trigger_fire")
        return self._submit(ctx, name, {}, full=False, allow_broaden=False)

    def _submit(
        self,
        ctx: RequestContext,
        name: str,
        extra: Mapping[str, Value],
        *,
        full: bool,
        allow_broaden: bool,
    ) -> tuple[dict[str, Any], bool]:
        with self._lock:
            self._refresh()
            miner = self._find(name)
        if not miner.enabled:
            raise MinerDisabled(f"miner {miner.name} is disabled")
        declared = self._adapter_options(miner.source)
        if declared is None:
            raise NotRunnable(
                f"miner {miner.name} names the {miner.source} source, which is not installed"
            )
        options = flatten(miner, extra)
        _check_declared(miner, options, declared)
        reasons = broadening(
            miner, replace(miner, scope={**miner.scope, **extra}), _breadths(declared)
        )
        if reasons and not allow_broaden:
            raise ScopeBroadened(
                f"the run's options may broaden what miner {miner.name} reads "
                f"({', '.join(reasons)})"
            )
        self._check_credential(miner)
        job: dict[str, Any] = {"type": "mine", "source": miner.source, "locator": miner.locator}
        job.update(options=options or None, wing=miner.wing, full=full)
        return self._jobs.submit_or_join(ctx, {k: v for k, v in job.items() if v is not None})

    def find(self, name: str) -> Miner | None:
        """The miner of that name as the file holds it now, for the triggers that name it."""
        with self._lock:
            self._refresh()
            found = self._set.indexed(name)
        return None if found is None else found[1]

    def problems(self, miner: Miner) -> builtins.list[str]:
        """What keeps a miner from running now: nothing when it can."""
        if not miner.enabled:
            return [f"miner {miner.name} is disabled"]
        try:
            self._check_usable(miner)
        except MemCastleError as exc:
            return [f"miner {miner.name}: {exc.message}"]
        return []

    def source_triggers(self, source: str) -> frozenset[str]:
        """The triggers a source declares it can be started by (`[triggers.*]`)."""
        described = self._packages.described(source)
        return frozenset(described.get("triggers", ())) if described is not None else frozenset()

    # The file's state.

    @property
    def _miners(self) -> builtins.list[Miner]:
        return self._set.entries

    def _refresh(self, *, force: bool = False) -> None:
        """Pick up a hand edit (see `Configured.refresh`), logging what it changed."""
        before = self._set.refresh(force=force)
        if before is None:
            return
        report = self._report(before, self._miners)
        if any(report.values()):
            logger.info("picked up an edit of the miners configuration: %s", report)
        if report["broadened"]:
            logger.warning("a hand edit broadened miners: %s", ", ".join(report["broadened"]))

    def _writable(self) -> None:
        self._set.writable()

    def _write(self, plan: Sequence[Planned[Miner]]) -> None:
        self._set.write(plan)
        self._reported = builtins.list(self._miners)

    def _kept(self) -> builtins.list[Planned[Miner]]:
        return self._set.kept()

    def _replacing(self, index: int, miner: Miner) -> builtins.list[Planned[Miner]]:
        return self._set.replacing(index, miner)

    def _find(self, name: object) -> Miner:
        return self._indexed(name)[1]

    def _indexed(self, name: object) -> tuple[int, Miner]:
        found = self._set.indexed(name)
        if found is None:
            raise MinerNotFound(f"no miner is named {name!r}")
        return found

    def _report(self, before: Sequence[Miner], after: Sequence[Miner]) -> dict[str, Any]:
        old = {miner.name: miner for miner in before}
        new = {miner.name: miner for miner in after}
        both = [name for name in new if name in old and old[name] != new[name]]
        return {
            "added": sorted(set(new) - set(old)),
            "removed": sorted(set(old) - set(new)),
            "changed": sorted(both),
            "enabled": sorted(n for n in both if new[n].enabled and not old[n].enabled),
            "disabled": sorted(n for n in both if old[n].enabled and not new[n].enabled),
            "broadened": sorted(
                n for n in both if broadening(old[n], new[n], self._breadths(new[n].source))
            ),
        }

    # What an enabled miner needs.

    def _adapter_options(self, source: str) -> builtins.list[dict[str, Any]] | None:
        """The options a source declares, or None when there is no such source."""
        described = self._packages.described(source)
        return None if described is None else builtins.list(described.get("options", []))

    def _breadths(self, source: str) -> dict[str, str | None]:
        return _breadths(self._adapter_options(source) or [])

    def _check_usable(self, miner: Miner) -> None:
        """An enabled miner's source can run, its credential resolves, its options are ones
        the source declares, and a directory's locator is absolute."""
        if miner.source not in self._packages.builtin_names():
            installed = self._packages.find(miner.source)
            if installed is None:
                raise MinerInvalid(f"`source` names no installed source {miner.source!r}")
            if not installed.usable:
                raise MinerInvalid(
                    f"`source` {miner.source} is {installed.shown_state()}, not enabled",
                    help="enable the source first, or save the miner disabled (enabled = false)",
                )
        credential = miner.credential
        if credential is not None and credential.kind == "oauth":
            if not self._signs_in(miner.source):
                raise MinerInvalid(f"`credential` is oauth, but {miner.source} declares no sign-in")
        elif credential is not None and not credential.available(self._environ):
            where = "variable is not set" if credential.kind == "env" else "file cannot be read"
            raise MinerInvalid(
                f"`credential` does not resolve: its {where} in the daemon's environment",
                help="set it up where the daemon runs, or save the miner disabled",
            )
        try:
            declared = self._adapter_options(miner.source) or []
            _check_declared(miner, {**miner.scope, **miner.config}, declared)
        except NotRunnable as exc:
            raise MinerInvalid(exc.message) from None
        if miner.source == DIRECTORY and not (miner.locator and os.path.isabs(miner.locator)):
            raise MinerInvalid("`locator` of a directory miner must be an absolute path")

    def _signs_in(self, source: str) -> bool:
        installed = self._packages.find(source)
        manifest = installed.manifest if installed is not None else None
        return manifest is not None and manifest.permissions.oauth is not None

    def _shown(self, miner: Miner) -> dict[str, Any]:
        return miner.shown(self._environ, signed_in=self._signed_in(miner))

    def _signed_in(self, miner: Miner) -> bool:
        credential = miner.credential
        return (
            credential is not None
            and credential.kind == "oauth"
            and self._packages.signed_in(miner.source)
        )

    def _check_credential(self, miner: Miner) -> None:
        credential = miner.credential
        if credential is None or credential.available(
            self._environ, signed_in=self._signed_in(miner)
        ):
            return
        if credential.kind == "oauth":
            raise CredentialRequired(f"the {miner.source} source is not signed in")
        raise NotRunnable(
            f"the {credential.kind} credential of miner {miner.name} does not resolve"
        )


def _breadths(declared: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """How each declared option may widen what a source reads (its `breadth`)."""
    return {option["name"]: option.get("breadth") for option in declared}


def _check_declared(
    miner: Miner, options: Mapping[str, object], declared: Sequence[Mapping[str, Any]]
) -> None:
    names = [option["name"] for option in declared]
    for key in sorted(options):
        if key not in names:
            raise NotRunnable(
                f"`{key}` is not an option of the {miner.source} source (it accepts: "
                f"{', '.join(names) or 'none'})"
            )


def _definition(raw: Mapping[str, Any]) -> Miner:
    try:
        return parse_miner(raw)
    except DefinitionError as exc:
        raise MinerInvalid(str(exc)) from None


def _merged(definition: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(definition)
    for key, value in patch.items():
        if key == "allow_broaden":
            continue
        if key in ("scope", "config") and isinstance(value, Mapping):
            options = {**merged.get(key, {}), **value}
            merged[key] = {name: item for name, item in options.items() if item is not None}
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _flag(body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise InputInvalid(key, "must be true or false")
    return value


def _run_options(raw: object) -> dict[str, Value]:
    try:
        return parse_options(raw, "options", nested=False)
    except DefinitionError as exc:
        raise InputInvalid(exc.key, str(exc).removeprefix(f"`{exc.key}` ")) from None
