"""Observing reviews: Prometheus metrics and OpenTelemetry traces (``tracing``).

Metrics: counters for the processes that live across reviews (``metrics``: ``codejury serve``,
``codejury worker``, with the queue's and the jobs' in ``service_metrics``), and the last run's
gauges for a one-shot ``codejury review`` (``last_run``). Both exports are off unless configured,
and neither can fail or hold up a review: an export that goes wrong costs one warning line and at
most ``last_run.EXPORT_TIMEOUT_S`` / ``tracing.FLUSH_TIMEOUT_S``.
"""
