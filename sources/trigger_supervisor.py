"""The daemon's runner of triggers: a thread that fires the enabled ones when they are due.

Every few seconds (and at once when a watched directory changed) it reads the triggers again,
so a hand edit of the file applies within seconds, and then:

- fires a timetabled trigger whose next due time passed (one fire, however many slots were
  missed while the daemon was down) and sets the next one an interval on; a trigger just
  enabled is first due one interval after;
- keeps a watch on each enabled `watch` trigger's directory (watchdog: inotify, FSEvents...),
  firing once the changes have been quiet for the debounce, and retries a watch it could not
  set up with a growing wait of at most a minute;
- learns how the last job of each trigger ended: a failure is counted (the `failing` status)
  and backs a `poll` trigger off, doubling its interval up to `max_backoff`;
- binds the webhook listener while `[webhook] enable` is set and a webhook trigger is enabled,
  and closes it otherwise.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from watchdog.events import (
    EVENT_TYPE_ATTRIB,
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_OPENED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from kernel.clock import utc_now
from kernel.errors import MemCastleError
from kernel.logs import fields
from sources.trigger_service import TriggerService
from sources.triggers import Trigger, timetable_key

if TYPE_CHECKING:
    from jobs.services import JobService
    from sources.webhooks import WebhookListener

logger = logging.getLogger(__name__)

TICK_SECS = 2.0
MAX_RETRY_SECS = 60.0
# Reading a file is not a change: the mine a watch starts reads the files it watches.
IGNORED_EVENTS = frozenset({EVENT_TYPE_OPENED, EVENT_TYPE_CLOSED_NO_WRITE, EVENT_TYPE_ATTRIB})
ENDED = {"completed": True, "failed": False, "cancelled": False}


class _Changes(FileSystemEventHandler):
    """Tells the supervisor that something changed under a watched directory."""

    def __init__(self, name: str, changed: Callable[[str], None]) -> None:
        self.name = name
        self.changed = changed

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in IGNORED_EVENTS:
            self.changed(self.name)


class TriggerSupervisor:
    def __init__(
        self,
        triggers: TriggerService,
        jobs: JobService,
        listener: WebhookListener,
        *,
        clock: Callable[[], dt.datetime] = utc_now,
        tick_secs: float = TICK_SECS,
    ) -> None:
        self.triggers = triggers
        self.jobs = jobs
        self.listener = listener
        self.clock = clock
        self.tick_secs = tick_secs
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: BaseObserver | None = None
        # Each watched trigger's (path, recursive, debounce) and its watch.
        self._watches: dict[str, tuple[tuple[str, bool, float], ObservedWatch]] = {}
        # When the soonest timetabled trigger is due, as of the last round.
        self._soonest_due: dt.datetime | None = None
        self._retry: dict[str, tuple[float, float]] = {}
        # Watch triggers with changes not yet fired: when they will be (monotonic clock).
        self._pending: dict[str, float] = {}
        self._pending_lock = threading.Lock()

    def start(self) -> None:
        if self._thread is not None:
            return
        self.listener.recover()
        self._thread = threading.Thread(target=self._run, name="memcastle-triggers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        self.listener.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wait = self.tick()
            except Exception:
                logger.exception("the trigger supervisor's round failed; it tries again")
                wait = self.tick_secs
            self._wake.wait(wait)
            self._wake.clear()

    # One round.

    def tick(self) -> float:
        """Do what is due; how long until the next look."""
        now = self.clock()
        triggers = self.triggers.current()
        runnable = {t.name: t for t in triggers if t.enabled and not self.triggers.problems(t)}
        self._soonest_due = None
        for trigger in triggers:
            state = self.triggers.state(trigger.name)
            self._learn_outcome(trigger, state)
            if trigger.timetabled:
                self._keep_timetable(trigger, state, now, runnable=trigger.name in runnable)
            due = state.get("next_due") if trigger.name in runnable else None
            if due is not None and (self._soonest_due is None or due < self._soonest_due):
                self._soonest_due = due
        self._keep_watches({t.name: t for t in runnable.values() if t.type == "watch"})
        self._fire_settled(runnable)
        webhooks = any(t.type == "webhook" for t in runnable.values())
        self.listener.keep(open_=webhooks)
        return self._next_look()

    def _keep_timetable(
        self, trigger: Trigger, state: dict[str, Any], now: dt.datetime, *, runnable: bool
    ) -> None:
        if not trigger.enabled:
            if "next_due" in state:
                state.pop("next_due")
                state.pop("interval", None)
                self.triggers.save_state(trigger.name, state)
            return
        if state.get("timetable") != timetable_key(trigger) or state.get("next_due") is None:
            self.triggers.schedule(trigger, state, now)
            return
        if not runnable or state["next_due"] > now:
            return
        self._fire(trigger)
        state = self.triggers.state(trigger.name)
        self.triggers.schedule(trigger, state, state.get("last_fired") or now)

    def _learn_outcome(self, trigger: Trigger, state: dict[str, Any]) -> None:
        """Count how the trigger's last job ended, once."""
        job_id = state.get("last_job")
        if job_id is None or state.get("outcome_of") == job_id:
            return
        job = self.jobs.record(job_id)
        if job is None or job.get("status") not in ENDED:
            return
        state["outcome_of"] = job_id
        if ENDED[job["status"]]:
            state.pop("interval", None)
            self.triggers.succeeded(trigger.name, state)
            return
        error = job.get("error") or {}
        reason = f"{error.get('code', 'memcastle::job::' + job['status'])}: " + str(
            error.get("message", f"the job was {job['status']}")
        )
        if trigger.type == "poll" and trigger.enabled:
            interval = min(2 * state.get("interval", trigger.every), trigger.max_backoff)
            state["interval"] = interval
            self.triggers.schedule(trigger, state, self.clock())
        self.triggers.failed(trigger.name, state, reason)

    def _fire(self, trigger: Trigger) -> None:
        try:
            self.triggers.run(trigger)
        except MemCastleError as exc:
            logger.warning(
                "a trigger could not fire", extra=fields(trigger=trigger.name, error=exc.code)
            )

    # Watching.

    def _keep_watches(self, wanted: Mapping[str, Trigger]) -> None:
        for name in list(self._watches):
            setting, watch = self._watches[name]
            trigger = wanted.get(name)
            if trigger is None or _watch_setting(trigger) != setting:
                self._unwatch(name, watch)
        for name, trigger in wanted.items():
            if name not in self._watches:
                self._watch(trigger)
        for name in list(self._retry):
            if name not in wanted:
                del self._retry[name]

    def _watch(self, trigger: Trigger) -> None:
        retry_at, wait = self._retry.get(trigger.name, (0.0, 1.0))
        if time.monotonic() < retry_at:
            return
        if self._observer is None:
            self._observer = Observer()
            self._observer.daemon = True
            self._observer.start()
        try:
            watch = self._observer.schedule(
                _Changes(trigger.name, self._changed), trigger.path, recursive=trigger.recursive
            )
        except OSError as exc:
            self._retry[trigger.name] = (time.monotonic() + wait, min(2 * wait, MAX_RETRY_SECS))
            logger.warning(
                "could not watch a trigger's directory; trying again in %.0f s",
                wait,
                extra=fields(trigger=trigger.name, error=exc.strerror or type(exc).__name__),
            )
            return
        self._retry.pop(trigger.name, None)
        self._watches[trigger.name] = (_watch_setting(trigger), watch)
        self._mark_watching(trigger.name, True)

    def _mark_watching(self, name: str, watching: bool) -> None:
        """Say in the trigger's state whether its watch is in place, so that its owner can
        tell a watch that is up from one still being set up."""
        state = self.triggers.state(name)
        if state.get("watching") != watching:
            state["watching"] = watching
            self.triggers.save_state(name, state)

    def _unwatch(self, name: str, watch: ObservedWatch) -> None:
        del self._watches[name]
        self._mark_watching(name, False)
        with self._pending_lock:
            self._pending.pop(name, None)
        if self._observer is not None:
            # Gone already when its directory was removed under it.
            with contextlib.suppress(KeyError):
                self._observer.unschedule(watch)

    def _changed(self, name: str) -> None:
        """A change under a watched directory (on the observer's thread): fire once the
        changes have been quiet for the trigger's debounce."""
        watched = self._watches.get(name)
        if watched is None:
            return
        debounce = watched[0][2]
        with self._pending_lock:
            self._pending[name] = time.monotonic() + debounce
        self._wake.set()

    def _fire_settled(self, runnable: Mapping[str, Trigger]) -> None:
        now = time.monotonic()
        with self._pending_lock:
            settled = [name for name, due in self._pending.items() if due <= now]
            for name in settled:
                del self._pending[name]
        for name in settled:
            trigger = runnable.get(name)
            if trigger is not None:
                self._fire(trigger)

    def _next_look(self) -> float:
        """Seconds to the next round: the next settled watch or due timetable, at most a tick."""
        wait = self.tick_secs
        with self._pending_lock:
            settles = min(self._pending.values(), default=None)
        if settles is not None:
            wait = min(wait, settles - time.monotonic())
        if self._soonest_due is not None:
            wait = min(wait, (self._soonest_due - self.clock()).total_seconds())
        return max(0.0, wait)


def _watch_setting(trigger: Trigger) -> tuple[str, bool, float]:
    return (trigger.path, trigger.recursive, trigger.debounce)
