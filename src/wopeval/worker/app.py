"""`wopeval worker`: a Procrastinate worker that executes queued runs, with a health endpoint.

One process: the store, the project catalog and the engine, whose log writer
announces every commit by NOTIFY (`hosting/worker_host.py` assembles them), a
Procrastinate `Worker` on the queue of this catalog's digest, the run watch,
the queue maintenance, and an HTTP server: `/host/wopeval/health`, and the MCP
endpoint and model proxy of each invocation this worker runs (an agent in its
own process reaches its tools and its model there, as it would on an API process).
SIGTERM or SIGINT drains it: no new trial starts, the running ones finish
within `shutdown_grace_seconds`, and each unfinished chunk goes back to the
queue (`HandBack`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator
from typing import Any

from procrastinate import App, BaseRetryStrategy, JobContext, PsycopgConnector, RetryDecision
from procrastinate.exceptions import ConnectorException
from procrastinate.job_context import AbortReason
from procrastinate.jobs import Job
from procrastinate.worker import Worker
from pydantic import JsonValue

from wopeval.engine.health import HealthReport, all_ok, database_check
from wopeval.engine.live.wakeups import libpq_dsn
from wopeval.hosting.worker_host import WorkerHost
from wopeval.settings import Settings
from wopeval.worker import sql
from wopeval.worker.jobs import HandBack, JobIdentity, Runtime
from wopeval.worker.maintenance import Maintenance
from wopeval.worker.plans import Plans
from wopeval.worker.queues import EVAL_CHUNK, WORKFLOW_RUN, JobArgs, queue_name
from wopeval.worker.watch import RunWatch

log = logging.getLogger("wopeval.worker")
RESTART_SECONDS = 1.0
"""The pause before Procrastinate's worker loop starts again after its database failed."""
POLL_SECONDS = 5.0
"""Procrastinate's fallback poll for new jobs and aborts (NOTIFY tells it sooner)."""


class _HandBackOnly(BaseRetryStrategy):
    """Procrastinate retries a job only when it hands its work back; a failure or an abort
    is final (the run says how it ended)."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        return RetryDecision(retry_in={"seconds": 0}) if isinstance(exception, HandBack) else None


async def run_worker(settings: Settings, announce: Any) -> None:
    """Run until SIGTERM/SIGINT; `announce(url)` is told where the health endpoint listens."""
    async with WorkerHost.opened(settings) as host:
        await _serve(host, announce)


async def _serve(host: WorkerHost, announce: Any) -> None:
    settings, store, engine, digest = host.settings, host.store, host.engine, host.catalog_digest
    queue = queue_name(digest)
    options = settings.queue
    runtime = Runtime(
        engine,
        RunWatch(store, options.watch_seconds),
        Plans(host.catalog),
        asyncio.Semaphore(options.concurrency),
    )
    connector = PsycopgConnector(
        conninfo=libpq_dsn(settings.resolved_database_url()),
        min_size=1,
        max_size=4,
        kwargs={"application_name": "wopeval worker"},
    )
    app = App(connector=connector)
    _register(app, runtime)
    worker = Worker(
        app,
        queues=[queue],
        name="wopeval",
        concurrency=options.concurrency,
        install_signal_handlers=False,
        update_heartbeat_interval=options.heartbeat_seconds,
        stalled_worker_timeout=options.stall_seconds,
        shutdown_graceful_timeout=options.shutdown_grace_seconds,
        delete_jobs="successful",
        fetch_job_polling_interval=POLL_SECONDS,
        abort_job_polling_interval=POLL_SECONDS,
    )

    async def report() -> HealthReport:
        database = await database_check(store)
        try:
            async with store.reading() as uow:
                counts = await sql.queue_counts(uow, queue)
            queue_state: dict[str, JsonValue] = {"ok": worker.worker_id is not None, **counts}
        except Exception as exc:  # an unreachable queue is what readiness reports
            queue_state = {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}
        draining = runtime.draining.is_set()
        document: dict[str, JsonValue] = {
            "role": "worker",
            "executor": "queue",
            "catalogDigest": digest,
            "database": database,
            "queue": queue_state,
            "worker": {
                "id": worker.worker_id,
                "concurrency": options.concurrency,
                "draining": draining,
            },
        }
        ready = all_ok(database, queue_state) and not draining
        document["ready"] = ready
        return HealthReport(document, ready)

    server, sessions = await host.http_server(report)
    announce(host.url)
    log.info("worker on queue %s (catalog %s), concurrency %d", queue, digest, options.concurrency)

    def drain() -> None:
        if not runtime.draining.is_set():
            log.info("stopping: running trials finish, unfinished chunks go back to the queue")
            runtime.draining.set()
            worker.stop()  # type: ignore[no-untyped-call]  # Procrastinate leaves it untyped

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, drain)
    side = [
        asyncio.create_task(runtime.watch.run(), name="watch"),
        asyncio.create_task(
            Maintenance(engine, queue, options, lambda: worker.worker_id, runtime.executing).run(),
            name="maintenance",
        ),
        asyncio.create_task(server.serve(sockets=[host.sock]), name="health"),
    ]
    try:
        async with app.open_async(), sessions.run():
            await _take_jobs(worker, runtime.draining)
    finally:
        server.should_exit = True
        for task in side[:2]:
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)


async def _take_jobs(worker: Worker, draining: asyncio.Event) -> None:
    """Procrastinate's worker loop until the worker drains, started again when a statement
    of its own on the queue's database failed under way (a failover, a restart, an ended
    backend): Procrastinate's loop then ends, having let its running jobs finish (or handed
    them back after the grace), and the process went with it, a fleet losing its workers to
    one failover. A lost connection the pool has not handed out yet fails nothing: the pool
    waits for a new one while the database is out of reach."""
    while True:
        try:
            await worker.run()  # type: ignore[no-untyped-call]
        except ConnectorException as exc:
            if draining.is_set():
                raise
            log.warning(
                "the queue's database failed under way (%s): taking jobs again", exc.__cause__
            )
        if draining.is_set():
            return
        await asyncio.sleep(RESTART_SECONDS)


def _register(app: App, runtime: Runtime) -> None:
    @app.task(name=EVAL_CHUNK, pass_context=True, retry=_HandBackOnly())
    async def eval_chunk(context: JobContext, /, **kwargs: Any) -> None:
        job = _identity(context)
        with runtime.running(job), _handing_back(context):
            await runtime.eval_chunk(job, JobArgs.from_json(kwargs))

    @app.task(name=WORKFLOW_RUN, pass_context=True, retry=_HandBackOnly())
    async def workflow_run(context: JobContext, /, **kwargs: Any) -> None:
        job = _identity(context)
        with runtime.running(job), _handing_back(context):
            await runtime.workflow_run(job, JobArgs.from_json(kwargs))


@contextlib.contextmanager
def _handing_back(context: JobContext) -> Iterator[None]:
    """A job cut short by the worker's own shutdown hands its work back instead of ending."""
    try:
        yield
    except asyncio.CancelledError:
        if context.abort_reason() is not AbortReason.SHUTDOWN:
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        raise HandBack() from None


def _identity(context: JobContext) -> JobIdentity:
    job = context.job
    if job.id is None or job.worker_id is None:
        raise RuntimeError("a fetched job has an id and a worker")
    return JobIdentity(job.id, job.worker_id)
