"""Delivers queued webhooks and schedules retries for the failed ones."""

from __future__ import annotations

import logging

from webhooks.backoff import MAX_ATTEMPTS, backoff_delay
from webhooks.queue import Delivery, DeliveryQueue

log = logging.getLogger(__name__)


def on_failure(queue: DeliveryQueue, delivery: Delivery, status: int | None) -> None:
    """Schedule the next attempt of a failed delivery, or give up after MAX_ATTEMPTS."""
    attempt = delivery.attempt + 1
    if attempt > MAX_ATTEMPTS:
        log.warning("giving up on delivery %s after %d attempts (last status %s)", delivery.id, MAX_ATTEMPTS, status)
        queue.dead_letter(delivery)
        return
    delay = backoff_delay(attempt)
    queue.schedule(delivery.with_attempt(attempt), delay_seconds=delay)
