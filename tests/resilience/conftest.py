"""Fixtures of the resilience tests that talk to the fake provider server through the real SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from codejury_fakes.provider_server import FakeProviderServer

from codejury.models import registry


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as srv:
        yield srv


@pytest.fixture
async def closed_models(server: FakeProviderServer) -> AsyncIterator[None]:
    """No cached SDK client leaks into or out of the test; the ones it opened are closed."""
    registry.clear_model_cache()
    yield
    await registry.close_cached_models()
