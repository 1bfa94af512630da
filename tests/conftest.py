"""Suite-wide guards: no real model requests, no real network beyond loopback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import models

from codejury.models import registry
from codejury.resilience import BOARDS
from codejury.testing.provider_server import FakeProviderServer

models.ALLOW_MODEL_REQUESTS = False

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise RuntimeError(f"tests may not reach the network: {host}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _one_core_for_the_embedded_model(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a pytest-xdist worker (make test), a test on the embedded model (and the processes it starts) runs on one CPU,
    worker gwN on the N-th CPU it may use: llama.cpp starts one thread per CPU it may use, and its threads wait for
    each other by spinning, so beside the other workers two threads take twice the CPU of one and finish later.
    Alone (no xdist) the test keeps every CPU."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if request.node.get_closest_marker("embedded") is None or not worker.startswith("gw"):
        yield
        return
    allowed = os.sched_getaffinity(0)
    cpus = sorted(allowed)
    os.sched_setaffinity(0, {cpus[int(worker.removeprefix("gw") or 0) % len(cpus)]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


@pytest.fixture(autouse=True, scope="session")
def _no_user_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The review store's default file lands in a temporary data directory, never the user's own
    (subprocesses that drop the CODEJURY_* variables included)."""
    index_cache = tmp_path_factory.mktemp("repoindex")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
        patch.setenv("CODEJURY_REPO_CACHE", str(tmp_path_factory.mktemp("repo-cache")))  # --url, service reviews
        # The repository index's cache too (not the whole cache directory: the embedded model's file lives there).
        patch.setattr("codejury.repocontext.store.default_cache_dir", lambda: index_cache)
        yield


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
