"""Celery, the executor of jobs: the app, its one task, and the worker that consumes it.

With an embedded palace the daemon hosts the worker in a thread, on an in-process queue, so no
broker server is needed. The worker waits on that queue (`InProcessTransport`) rather than
polling it as Celery's `memory://` transport does: its default 1 s polling took 48 s for a burst
of 200 jobs; polling every 5 ms gave 5.1 ms median submit-to-start but woke the process 200
times a second, each wake-up taking the interpreter lock from the requests; waiting gives
0.85 ms and costs nothing while idle (measured in process, 20 jobs one at a time). With a
remote palace and `jobs.broker_url`, messages go through Redis, and `memcastle worker` processes
consume them beside the daemons. Messages carry only a job id; the job row stays the truth, so
a lost message costs nothing: queued jobs are dispatched again at every start.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from celery import Celery
from kombu.transport import memory

from jobs.executor import Executor
from kernel.logs import fields

logger = logging.getLogger(__name__)

TASK = "memcastle.run_job"
QUEUE = "memcastle.jobs"
STOP_TIMEOUT_SECS = 5


# How long an idle worker waits on the in-process queue before it looks at its other duties.
WAIT_SECS = 0.5


class WaitingChannel(memory.Channel):
    """The in-process queue, read by waiting on it: a message wakes the worker at once."""

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        return self._queue_for(queue).get(block=True, timeout=WAIT_SECS)


class InProcessTransport(memory.Transport):
    """Celery's `memory://` transport, with a channel that waits instead of polling."""

    Channel = WaitingChannel
    polling_interval = 0


def make_app(broker_url: str | None, executor: Executor) -> Celery:
    """A Celery app whose one task hands a message to `executor`."""
    # No Django fixup: MemCastle has no Django database, and the fixup would run its checks.
    app = Celery(
        "memcastle", broker=broker_url or "memory://localhost/", set_as_current=False, fixups=[]
    )
    app.conf.update(
        task_default_queue=QUEUE,
        task_ignore_result=True,
        # A busy worker holds no message beyond the ones it runs (a message is acknowledged when
        # its job ends), so an idle worker elsewhere gets the next one. The claim, not the
        # message, picks the job; a message redelivered after a crash claims nothing twice.
        worker_prefetch_multiplier=1,
        task_acks_late=True,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        # Jobs are controlled through their rows, never by Celery's remote control; without
        # it the worker consumes one queue, on which the in-process channel can wait.
        worker_enable_remote_control=False,
    )
    if broker_url is None:
        app.conf.broker_transport = InProcessTransport

    def run_job(job_id: str) -> None:
        executor.execute(job_id)

    app.task(name=TASK, ignore_result=True)(run_job)
    return app


class JobWorker:
    """A Celery worker for this process's executor, run on a thread of its own."""

    def __init__(self, executor: Executor, broker_url: str | None, concurrency: int) -> None:
        self.executor = executor
        self.app = make_app(broker_url, executor)
        self.concurrency = concurrency
        self._controller: Any = None
        self._thread: threading.Thread | None = None
        self._stopper: threading.Thread | None = None
        executor.dispatch = self.dispatch

    def dispatch(self, job_id: str) -> None:
        """Send the message that runs a job; a broker failure leaves the job queued."""
        try:
            self.app.send_task(TASK, args=[job_id], queue=QUEUE)
        except Exception as exc:
            logger.warning(
                "could not send a job to the broker; it stays queued and is sent again at the "
                "next start",
                extra=fields(job_id=job_id, error=type(exc).__name__),
            )

    def start(self) -> None:
        self._controller = self.app.WorkController(
            pool="threads",
            concurrency=self.concurrency,
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            hostname=f"{self.executor.worker_id}@{socket.gethostname()}",
            queues=[QUEUE],
            loglevel="WARNING",
        )
        self._thread = threading.Thread(
            target=self._controller.start, name="memcastle-celery", daemon=True
        )
        self._thread.start()

    def begin_stop(self) -> None:
        """Stop consuming at once; the pool stops once its running jobs have returned.

        Called as the drain begins, so that the jobs the drain puts back in the queue go to
        other workers, not to this one.
        """
        if self._controller is None or self._stopper is not None:
            return
        self._stopper = threading.Thread(
            target=self._controller.stop,
            kwargs={"in_sighandler": False},
            name="memcastle-celery-stop",
            daemon=True,
        )
        self._stopper.start()

    def wait_stopped(self) -> None:
        """Wait a little for the worker to stop; a job stuck in its handler does not hold the
        process (its row stays running and is recovered at the next start)."""
        self.begin_stop()
        if self._stopper is not None:
            self._stopper.join(STOP_TIMEOUT_SECS)
