"""Recording to a review service: ``POST {url}/api/ingest`` with the ``ReviewRecord`` as JSON.

For CI jobs whose disk does not survive the job: the service stores the record in its own store.
The request carries ``Authorization: Bearer $CODEJURY_INGEST_TOKEN``; the token is never part of
a message. A 2xx answer means stored (the service skips a ``uid`` it already has, so a retry is
safe); anything else is one ``StoreError`` line.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from codejury.record.model import ReviewRecord
from codejury.record.schema import StoreError
from codejury.record.target import RecordTarget
from codejury.tls import tls_context

TOKEN_ENV = "CODEJURY_INGEST_TOKEN"
INGEST_PATH = "/api/ingest"


class IngestClient:
    """Posts records to one review service (sync: the recorder's worker thread calls it)."""

    def __init__(self, target: RecordTarget, env: Mapping[str, str], *, timeout_s: float = 2.0) -> None:
        self.target = target
        self.token = env.get(TOKEN_ENV, "").strip()
        self.timeout_s = timeout_s
        self._client: httpx2.Client | None = None

    @property
    def shown(self) -> str:
        return self.target.shown

    def write(self, record: ReviewRecord) -> bool:
        if not self.token:
            raise StoreError(f"review service {self.shown}: {TOKEN_ENV} is not set, so it would refuse the record")
        if self._client is None:
            self._client = httpx2.Client(timeout=self.timeout_s, follow_redirects=False, verify=tls_context())
        try:
            answer = self._client.post(
                self.target.url + INGEST_PATH,
                content=record.model_dump_json(),
                headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            )
        except httpx2.TimeoutException as exc:
            raise StoreError(f"review service {self.shown}: no answer within {self.timeout_s:g} s") from exc
        except httpx2.HTTPError as exc:
            raise StoreError(f"review service {self.shown}: {type(exc).__name__}") from exc
        if answer.status_code in (401, 403):
            raise StoreError(
                f"review service {self.shown} refused the token in {TOKEN_ENV} (HTTP {answer.status_code})"
            )
        if not 200 <= answer.status_code < 300:
            raise StoreError(f"review service {self.shown} answered HTTP {answer.status_code} to the record")
        return True

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
