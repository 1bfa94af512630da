"""Suite-wide guards: no real model requests, no real network beyond loopback."""

from __future__ import annotations

import fcntl
import importlib
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from codejury_fakes.provider_server import FakeProviderServer
from pydantic_ai import models

from codejury.models import registry
from codejury.models.weights import SMALL_WEIGHTS, ensure_model_file
from codejury.resilience import BOARDS
from codejury.testing.postgres import PostgresServer, PostgresStartFailed, PostgresUnavailable
from codejury.testing.postgres import postgres_server as start_postgres

models.ALLOW_MODEL_REQUESTS = False

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise RuntimeError(f"tests may not reach the network: {host}")
    return _real_connect(self, address)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (make test), the tests on the embedded model start first, dealt in turn to as many workers
    as there are CPUs (each holds a CPU of its own for them, below), so that the longest do not queue behind each
    other on one worker while the other CPU runs out of work at the end. The tests marked ``waits`` (they spend
    most of their time on a clock: a deadline, a retry, a stalled peer) start first on the other workers, beside
    the embedded model: there the CPUs are busy whatever those tests do, where later, when every test left needs
    a CPU, a worker waiting on a clock leaves one idle (measured on 2 cores: 36 of the run's 40 idle
    core-seconds came after the embedded tests, most of them in these tests, and the run ended on two of them).

    The N-th share of embedded tests goes at the start of the N-th block of tests the scheduler first hands out:
    ``worksteal`` (make test) splits the tests into one block per worker, and an idle worker later takes the
    second half of another's queue, never its first tests; ``load`` hands each worker a first chunk of
    ``len(items) // workers // 4``. Every worker computes the same order."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    embedded: list[pytest.Item] = []
    waiting: list[pytest.Item] = []
    rest: list[pytest.Item] = []
    for item in items:
        if item.get_closest_marker("embedded") is not None:
            embedded.append(item)
        else:
            (rest if item.get_closest_marker("waits") is None else waiting).append(item)
    if workers < 2 or not embedded:
        return
    slots = min(workers, len(os.sched_getaffinity(0)))
    dealt = [embedded[slot::slots] for slot in range(slots)] + [[] for _ in range(workers - slots)]
    beside = [n for n, mine in enumerate(dealt) if not mine] or [len(dealt) - 1]
    for n, item in enumerate(waiting):
        dealt[beside[n % len(beside)]].append(item)
    others = iter(rest)
    per_worker = len(items) // workers
    chunk = per_worker if _scheduling(config) == "worksteal" else max(2, per_worker // 4)
    ordered: list[pytest.Item] = []
    for mine in dealt:
        ordered += mine + [item for _, item in zip(range(chunk - len(mine)), others, strict=False)]
    items[:] = ordered + list(others)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Under pytest-xdist (make test) every worker collects the whole suite, and after a fresh install each one
    compiles what it imports and rewrites the asserts of every test module: the same work (12 s of CPU for one
    process, 4 s of it the rewriting) three times over, all at once. So before collecting, each worker imports the
    test modules starting from its own share of the list: a module is compiled and rewritten by the first worker
    to reach it, and the others read what it wrote (pytest's cache of rewritten modules, Python's bytecode).
    Collection then finds each module already imported, as pytest would have imported it (same name, same file).
    A module that fails to import is left to collection, which reports the failure as it always does.
    Only when the whole suite runs: a run of a few files imports no more than those."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    root = Path(__file__).parent
    invoked = session.config.invocation_params.dir
    if not worker.startswith("gw") or workers < 2 or [(invoked / a).resolve() for a in session.config.args] != [root]:
        return
    names = sorted(name for name in (_package_module(path, root) for path in root.rglob("test_*.py")) if name)
    for name in _import_order(names, int(worker.removeprefix("gw")), workers):
        with suppress(Exception, pytest.skip.Exception):
            importlib.import_module(name)


def _import_order(names: list[str], worker: int, workers: int) -> list[str]:
    """Every name, starting from the ``worker``-th of ``workers`` equal shares."""
    first = worker * len(names) // workers
    return names[first:] + names[:first]


def _package_module(path: Path, root: Path) -> str:
    """The dotted name pytest imports ``path`` under (``tests.hostile.test_x``): "" where a folder between the
    suite's root and the file is no package (pytest names such a module otherwise)."""
    folders = path.relative_to(root.parent).parent.parts
    for depth in range(1, len(folders) + 1):
        if not (root.parent.joinpath(*folders[:depth]) / "__init__.py").is_file():
            return ""
    return ".".join((*folders, path.stem))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller tells each worker its ``--dist`` mode (xdist resets the option to ``no`` there)."""
    node.workerinput["codejury_dist"] = node.config.getoption("dist")


def _scheduling(config: pytest.Config) -> str:
    """The ``--dist`` mode of the run this worker belongs to."""
    return str(getattr(config, "workerinput", {}).get("codejury_dist", "load"))


EMBEDDED_PRIORITY = 3
"""How much nicer than the other workers' tests a test on the embedded model runs, where the system allows it
(as root: a lower nice value needs the privilege): the longest tests of the suite, on one CPU each, are
then not what the run waits for at its end."""


def _hold_a_cpu(shared: Path, cpus: list[int], held: ExitStack) -> int:
    """A CPU whose lock file in ``shared`` this process now holds (until ``held`` closes): a free one, else the
    first once it is free."""
    locks = [held.enter_context((shared / f"embedded-cpu{cpu}.lock").open("w")) for cpu in cpus]
    for cpu, lock in zip(cpus, locks, strict=True):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return cpu
        except BlockingIOError:
            continue
    fcntl.flock(locks[0], fcntl.LOCK_EX)
    return cpus[0]


@pytest.fixture(autouse=True)
def _one_core_for_the_embedded_model(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """In a pytest-xdist worker (make test), a test on the embedded model (and the processes it starts) runs on one CPU
    that no other embedded test holds: llama.cpp starts one thread per CPU it may use, and its threads wait for each
    other by spinning, so beside the other workers two threads take twice the CPU of one and finish later; and two
    models on one CPU both run at half speed while the other CPU may run out of work. A CPU is held with a lock file
    in the directory the workers share; when every CPU is held, the test waits for the first.
    Alone (no xdist) the test keeps every CPU."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if request.node.get_closest_marker("embedded") is None or not worker.startswith("gw"):
        yield
        return
    allowed = os.sched_getaffinity(0)
    shared = tmp_path_factory.getbasetemp().parent  # pytest-N/, above each worker's popen-gwN/
    with ExitStack() as held:
        cpu = _hold_a_cpu(shared, sorted(allowed), held)
        os.sched_setaffinity(0, {cpu})
        nice = os.getpriority(os.PRIO_PROCESS, 0)
        with suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, nice - EMBEDDED_PRIORITY)
        try:
            yield
        finally:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
            os.sched_setaffinity(0, allowed)


SMALL_LOCAL_MODEL = "qwen2.5-coder-0.5b"
"""The dev extra's local model (``weights.SMALL_WEIGHTS``): what ``local:NAME`` names it."""


@pytest.fixture(scope="session")
def small_local_model() -> str:
    """The name of the small local model, its file assembled and verified once per test session (and reused from
    the cache after that). The tests of llama.cpp's plumbing (a server loaded once, prompts cached and restored,
    structured output, its log kept off the terminal, a review end to end) run on it: the same loader, server and
    capability profile as the embedded model, a third of its size. Skips only without the runtime."""
    pytest.importorskip("xllamacpp", reason="a local model needs the 'local' extra")
    ensure_model_file(spec=SMALL_WEIGHTS, progress=False)
    return SMALL_LOCAL_MODEL


@pytest.fixture(autouse=True, scope="session")
def _no_user_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The review store's default file lands in a temporary data directory, never the user's own
    (subprocesses that drop the CODEJURY_* variables included)."""
    index_cache = tmp_path_factory.mktemp("repoindex")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
        # --url and service reviews are diff-only unless a test serves git and names a cache
        patch.setenv("CODEJURY_REPO_CACHE", "off")
        # The repository index's cache too (not the whole cache directory: the embedded model's file lives there).
        patch.setattr("codejury.repocontext.store.default_cache_dir", lambda: index_cache)
        yield


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server (``codejury.testing.postgres``: ``initdb`` and ``pg_ctl`` into a temporary directory on
    a free loopback port, as the ``postgres`` user when the tests run as root), one per test session: the store's,
    the service's and the dashboard's tests share it (a pytest-xdist worker is a session of its own). It skips,
    saying why, only where no server can be started: no binaries (``make test-deps`` installs them) or no
    unprivileged user to run one."""
    try:
        with start_postgres() as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(f"{exc}: the PostgreSQL tests cannot run")
    except PostgresStartFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture
def new_pg_database(postgres_server: PostgresServer) -> Callable[[], str]:
    """Creates an empty database on the session's server and returns its URL."""
    return postgres_server.new_database


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setenv("CODEJURY_RECORD_URL", "none")  # tests that record name their own store
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "CODEJURY_MODEL",
        "CODEJURY_MODEL_TOP",
        "CODEJURY_MODEL_STANDARD",
        "CODEJURY_MODEL_LIGHT",
        # A test suite run inside a real CI job must not see that job's forge or tokens.
        "CODEJURY_GITLAB_TOKEN",
        "CODEJURY_GITHUB_TOKEN",
        "GITHUB_TOKEN",
        "GITHUB_ACTIONS",
        "GITHUB_EVENT_PATH",
        "GITLAB_CI",
        "CI_JOB_TOKEN",
        "CI_PIPELINE_SOURCE",
        "CI_MERGE_REQUEST_IID",
        "CI_SERVER_URL",
        "CI_API_V4_URL",
        "GITHUB_SERVER_URL",
        "GITHUB_API_URL",
        "GITHUB_GRAPHQL_URL",
        "CODEJURY_GITLAB_URL",
        "CODEJURY_GITHUB_URL",
        "CODEJURY_GITHUB_API_URL",
        # A developer's own collector must not receive the suite's traces.
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ):
        monkeypatch.delenv(var, raising=False)
    BOARDS.reset()  # breakers are process-wide: one test's outage must not leak into the next
    yield


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    """A fake OpenAI/Anthropic-compatible provider on loopback; model requests allowed for this test only."""
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    registry.clear_model_cache()
    with FakeProviderServer() as srv:
        yield srv
    registry.clear_model_cache()
