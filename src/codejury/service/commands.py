"""``codejury serve`` and ``codejury worker``: the review service and its workers.

``serve`` with no ``--database`` is the embedded default: one process, the store and the job
queue in one SQLite file, reviews run by ``--concurrency`` tasks of that process. With
``--database postgresql://…`` the jobs go to Procrastinate in that database, the store is that
database too (unless ``CODEJURY_RECORD__URL``, or its short name ``CODEJURY_RECORD_URL``, names
another), and ``codejury worker`` processes, on any machine that reaches the database, run the reviews.

``build_service`` assembles the app for both the command and the tests. Both commands log through
``codejury.service.logs.ServiceLog`` (``--log-format text|json``); ``serve`` serves its metrics on
``/metrics``, a worker on ``--metrics-port`` (``codejury.telemetry.service_metrics``).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from codejury.errors import ConfigError
from codejury.flags import SERVICE_OPTIONS, ServiceReviewFlags, review_flags, review_options, service_flags
from codejury.service.dashboard_env import DASHBOARD_PUBLIC_ENV as DASHBOARD_PUBLIC_ENV
from codejury.service.dashboard_env import DASHBOARD_TOKEN_ENV as DASHBOARD_TOKEN_ENV
from codejury.service.dashboard_env import DASHBOARD_USER_HEADER_ENV as DASHBOARD_USER_HEADER_ENV

DATABASE_ENV = "CODEJURY_DATABASE_URL"
METRICS_PORT_ENV = "CODEJURY_METRICS_PORT"
METRICS_HOST_ENV = "CODEJURY_METRICS_HOST"
INGEST_TOKEN_ENV = "CODEJURY_INGEST_TOKEN"
if TYPE_CHECKING:
    from codejury.service.logs import LogFormat

_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_BROWSER_HEADERS = frozenset(
    ("accept", "accept-encoding", "accept-language", "authorization", "cache-control", "connection", "cookie",
     "host", "origin", "pragma", "referer", "user-agent")
)  # fmt: skip


def _say(line: str) -> None:
    from codejury.secrets import redact_env

    click.echo(f"codejury: {redact_env(line)}", err=True)


@dataclass(frozen=True)
class ServiceOptions(ServiceReviewFlags):
    """``codejury serve``'s settings (flags and environment), and the review flags its jobs run with."""

    database: str | None = None
    concurrency: int = 2
    retry_backoff_s: float = 30.0
    dashboard_user_header: str = ""
    """``--dashboard-user-header``: the header an authentication proxy sets for a signed-in user."""
    dashboard_public: bool = False
    """``--dashboard-public``: the dashboard opens to anyone who reaches the service."""
    env: Mapping[str, str] = field(default_factory=dict, repr=False)


def _store_and_queue_targets(opts: ServiceOptions) -> tuple[Any, Any]:
    """The store's target and the target of the service's own tables (deliveries, local jobs)."""
    from codejury.config import ENV_ALIASES
    from codejury.config_schema import env_name
    from codejury.record.target import parse_record_url

    # record.url's variable, or its kept short name (the long one wins, as for a review's settings)
    names = [env_name("record.url"), *(name for name, key in ENV_ALIASES.items() if key == "record.url")]
    variable = next((name for name in names if opts.env.get(name, "").strip()), names[-1])
    configured = opts.env.get(variable, "").strip()
    try:
        target = parse_record_url(configured or (opts.database if opts.database else None))
    except ValueError as exc:
        raise ConfigError(f"{variable}: expected {exc}") from exc
    if target.kind == "service":
        raise ConfigError(f"{variable} names a review service: the service itself needs a database store")
    if opts.database:
        db = parse_record_url(opts.database)
        if db.kind != "postgresql":
            raise ConfigError("--database expects postgresql://USER@HOST:PORT/DATABASE")
        return target, db
    if target.kind == "sqlite":
        return target, target
    return target, parse_record_url(None)  # a PostgreSQL store or none: the queue stays in the default file


def _tables_engine(tables: Any) -> Any:
    """The engine of the service's own tables, created when missing; ConfigError when it cannot be opened."""
    from sqlalchemy.exc import SQLAlchemyError

    from codejury.record.store import describe
    from codejury.service.tables import make_engine

    try:
        if tables.path is not None:
            tables.path.parent.mkdir(parents=True, exist_ok=True)
        return make_engine(tables.url)
    except OSError as exc:
        raise ConfigError(f"cannot create the service's database {tables.shown}: {exc.strerror or exc}") from exc
    except SQLAlchemyError as exc:
        raise ConfigError(f"cannot open the service's database {tables.shown}: {describe(exc)}") from exc


def _job_runner(
    opts: ServiceOptions, record_url: str | None, metrics: Any, job_metrics: Any, say: Callable[[str], None]
) -> Any:
    from codejury.service.github_app import tokens_from_env
    from codejury.service.jobs import JobRunner, ReviewSetup

    setup = ReviewSetup(**service_flags(opts), record_url=record_url)
    return JobRunner(
        setup, opts.env, app_tokens=tokens_from_env(opts.env), metrics=metrics, job_metrics=job_metrics, say=say
    )


def _user_header(name: str) -> str:
    """``--dashboard-user-header`` checked: a header name that browsers do not send of their own."""
    name = name.strip()
    if name and (not _HEADER_NAME.match(name) or name.lower() in _BROWSER_HEADERS):
        raise ConfigError(
            f"--dashboard-user-header {name!r}: expected the name of the header your authentication proxy "
            "sets for a signed-in user (X-Auth-Request-User, X-Forwarded-User…), not one every browser sends"
        )
    return name


def build_service(opts: ServiceOptions, say: Callable[[str], None] = _say) -> Any:
    """The Starlette app of ``codejury serve``; its lifespan opens the queue and starts the local runners."""
    from codejury.memory.schedule import start_learner
    from codejury.record.store import Store
    from codejury.service.app import ServiceState, create_app
    from codejury.service.deliveries import Deliveries
    from codejury.service.local_queue import LocalQueue
    from codejury.service.webhooks import GITHUB_SECRET_ENV, GITLAB_TOKEN_ENV
    from codejury.telemetry.metrics import ReviewMetrics
    from codejury.telemetry.service_metrics import JobMetrics, add_build_info

    user_header = _user_header(opts.dashboard_user_header)
    target, tables = _store_and_queue_targets(opts)
    metrics = ReviewMetrics()
    add_build_info(metrics.registry)
    job_metrics = None if opts.database else JobMetrics(metrics.registry)  # with a database, workers run the jobs
    runner = _job_runner(opts, None if target.kind == "none" else target.url, metrics, job_metrics, say)
    engine = _tables_engine(tables)
    store = None if target.kind == "none" else Store(target)
    queue: Any
    pg_app: Any = None
    if opts.database:
        from codejury.service.pg_queue import PostgresQueue, make_app

        pg_app = make_app(opts.database)
        queue = PostgresQueue(pg_app)
    else:
        queue = LocalQueue(engine, runner.run, concurrency=opts.concurrency, backoff_s=opts.retry_backoff_s, say=say)
    runner.submit = queue.submit  # chat commands queue reviews
    state = ServiceState(
        queue=queue,
        deliveries=Deliveries(engine, queue if pg_app is not None else None),
        store=store,
        github_secret=opts.env.get(GITHUB_SECRET_ENV, "").strip(),
        gitlab_token=opts.env.get(GITLAB_TOKEN_ENV, "").strip(),
        ingest_token=opts.env.get(INGEST_TOKEN_ENV, "").strip(),
        dashboard_token=opts.env.get(DASHBOARD_TOKEN_ENV, "").strip(),
        dashboard_user_header=user_header,
        dashboard_public=opts.dashboard_public,
        metrics=metrics,
        say=say,
        hosts=runner.hosts,
    )

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        for note in (state.webhook_routes_note(), state.dashboard_note()):
            if note:
                say(note)
        if pg_app is not None:
            from codejury.service.pg_queue import apply_schema

            await apply_schema(opts.database or "")
            await pg_app.open_async()
        else:
            await queue.start()
        learner = start_learner(opts.config_file, opts.env, store, say)  # [memory] learn_every_hours
        try:
            yield
        finally:
            if learner is not None:
                learner.cancel()
            if pg_app is not None:
                await pg_app.close_async()
            else:
                await queue.close()
            await runner.close()  # the review loop, and the SDK clients of its models
            engine.dispose()
            if store is not None:
                store.close()

    app = create_app(state, lifespan)
    app.state.service = state
    return app


async def run_worker(
    opts: ServiceOptions,
    *,
    heartbeat_s: float,
    stalled_after_s: float,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    say: Callable[[str], None] = _say,
) -> None:
    """``codejury worker``: run review jobs from the database's queue until stopped; with ``metrics_port``,
    serve the reviews it ran on ``http://metrics_host:metrics_port/metrics`` (0: a free port, logged)."""
    from codejury.service import pg_queue
    from codejury.telemetry.metrics import ReviewMetrics
    from codejury.telemetry.service_metrics import JobMetrics, MetricsServer, add_build_info

    if not opts.database:
        raise ConfigError(f"codejury worker needs --database postgresql://… (or {DATABASE_ENV})")
    target, _ = _store_and_queue_targets(opts)
    metrics = ReviewMetrics()
    add_build_info(metrics.registry)
    runner = _job_runner(
        opts, None if target.kind == "none" else target.url, metrics, JobMetrics(metrics.registry), say
    )
    await pg_queue.apply_schema(opts.database)
    app = pg_queue.make_app(opts.database)
    runner.submit = pg_queue.PostgresQueue(app).submit  # chat commands queue reviews
    server = None if metrics_port is None else MetricsServer.start(metrics.registry, metrics_host, metrics_port)
    try:
        if server is not None:
            say(f"metrics on {server.url}")
        async with app.open_async():
            say(f"worker ready: reviewing jobs from {target.shown if target.kind == 'postgresql' else 'the database'}")
            try:
                await pg_queue.run_worker(
                    app,
                    runner.run,
                    concurrency=opts.concurrency,
                    heartbeat_s=heartbeat_s,
                    stalled_after_s=stalled_after_s,
                    say=say,
                )
            finally:
                await runner.close()  # the review loop, and the SDK clients of its models
    finally:
        if server is not None:
            server.close()


def _review_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The database and concurrency, then the ``codejury review`` flags every review of the service takes."""
    options = [
        click.option(
            "--database",
            envvar=DATABASE_ENV,
            metavar="URL",
            help=f"PostgreSQL (postgresql://USER@HOST:PORT/DB; env {DATABASE_ENV}): jobs queued there with "
            "Procrastinate for `codejury worker` processes, reviews stored there.",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1, max=64),
            default=None,
            help="Reviews run at once by this process (serve without --database: 2; worker: 1).",
        ),
    ]
    func = review_options(*SERVICE_OPTIONS)(func)
    for option in reversed(options):
        func = option(func)
    return func


def _log_format(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--log-format text|json``, for serve and worker."""
    from codejury.service.logs import LOG_FORMAT_ENV, LOG_FORMATS

    return click.option(
        "--log-format",
        type=click.Choice(LOG_FORMATS),
        default="text",
        show_default=True,
        envvar=LOG_FORMAT_ENV,
        help="Log lines on stderr: text, or json (one object per line: time, level, message, the job's key "
        f"where known; secrets scrubbed either way; env {LOG_FORMAT_ENV}).",
    )(func)


def _options(flags: dict[str, Any], default_concurrency: int) -> ServiceOptions:
    database = (flags.get("database") or "").strip() or None
    if database is not None:
        try:
            from codejury.service.pg_queue import conninfo
        except ImportError as exc:
            raise ConfigError(
                f"--database needs the PostgreSQL job queue: pip install 'codejury[postgres]' ({exc.name} is missing)"
            ) from exc
        conninfo(database)  # one clear line for a URL that is not PostgreSQL's
    return ServiceOptions(
        **service_flags(review_flags(flags)),
        database=database,
        concurrency=flags.get("concurrency") or default_concurrency,
        dashboard_user_header=flags.get("dashboard_user_header") or "",
        dashboard_public=bool(flags.get("dashboard_public")),
        env=dict(os.environ),
    )


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every one).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port to listen on.")
@click.option(
    "--dashboard-user-header",
    envvar=DASHBOARD_USER_HEADER_ENV,
    metavar="NAME",
    help="Open /dashboard to requests carrying this header, set by the authentication proxy in front "
    f"(X-Auth-Request-User; env {DASHBOARD_USER_HEADER_ENV}). Only where every request comes through that proxy.",
)
@click.option(
    "--dashboard-public",
    is_flag=True,
    envvar=DASHBOARD_PUBLIC_ENV,
    help=f"Open /dashboard to anyone who reaches the service (env {DASHBOARD_PUBLIC_ENV}=1).",
)
@_review_options
@_log_format
def serve_command(host: str, port: int, log_format: LogFormat, **flags: Any) -> None:
    """Run the review service: GitHub/GitLab webhooks, the CI ingest endpoint, /metrics, /healthz, /readyz, /dashboard.

    Webhook secrets: CODEJURY_GITHUB_WEBHOOK_SECRET, CODEJURY_GITLAB_WEBHOOK_TOKEN (a forge without one
    gets no route); ingest token: CODEJURY_INGEST_TOKEN; dashboard token: CODEJURY_DASHBOARD_TOKEN (or
    --dashboard-user-header, --dashboard-public: otherwise /dashboard answers 401); forge tokens:
    CODEJURY_GITLAB_TOKEN, a GitHub App (CODEJURY_GITHUB_APP_ID and CODEJURY_GITHUB_APP_PRIVATE_KEY[_FILE])
    or CODEJURY_GITHUB_TOKEN. /metrics: the reviews and job failures of this process, webhook deliveries,
    the queue's depth and oldest waiting job, build info. See docs/service.md.
    """
    import uvicorn

    from codejury.service.logs import ServiceLog

    log = ServiceLog(log_format)
    try:
        app = build_service(_options(flags, default_concurrency=2), say=log)
    except ConfigError as exc:
        log(str(exc))
        raise SystemExit(2) from None
    from codejury.service.review_loop import prepare_serving_process

    prepare_serving_process()  # no 200 ms collector pauses under the webhook loop, and a 1 ms interpreter lock turn
    if log_format == "json":
        log.install()  # uvicorn's lines too, as JSON
    from uvicorn.config import LOGGING_CONFIG

    # JSON: no handlers of uvicorn's own, so its records reach the JSON log
    log_config = None if log_format == "json" else LOGGING_CONFIG
    config = uvicorn.Config(
        app, host=host, port=port, lifespan="on", log_level="info", access_log=False, log_config=log_config
    )
    server = uvicorn.Server(config)
    server.run()
    if not server.started:
        raise SystemExit(2)  # the lifespan failed (the database, the queue): uvicorn said why


@click.command("worker")
@_review_options
@click.option(
    "--heartbeat",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="How often this worker tells the database it is alive.",
)
@click.option(
    "--stalled-after",
    type=click.FloatRange(min=0.5),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A job whose worker was silent this long (killed, machine lost) is queued again.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    envvar=METRICS_PORT_ENV,
    metavar="PORT",
    help="Serve this worker's Prometheus metrics (the reviews and job failures it ran, build info) on "
    f"http://HOST:PORT/metrics; 0 picks a free port, logged (env {METRICS_PORT_ENV}). One port per worker process.",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    envvar=METRICS_HOST_ENV,
    metavar="HOST",
    help=f"Address the metrics port listens on (0.0.0.0: every one; env {METRICS_HOST_ENV}).",
)
@_log_format
def worker_command(
    heartbeat: float,
    stalled_after: float,
    metrics_port: int | None,
    metrics_host: str,
    log_format: LogFormat,
    **flags: Any,
) -> None:
    """Run queued reviews from the PostgreSQL job queue of `codejury serve --database` (start any number)."""
    import asyncio

    from codejury.service.logs import ServiceLog

    log = ServiceLog(log_format)
    if log_format == "json":
        log.install()  # Procrastinate's warnings too, as JSON
    try:
        opts = _options(flags, default_concurrency=1)
        asyncio.run(
            run_worker(
                opts,
                heartbeat_s=heartbeat,
                stalled_after_s=stalled_after,
                metrics_port=metrics_port,
                metrics_host=metrics_host,
                say=log,
            )
        )
    except ConfigError as exc:
        log(str(exc))
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
