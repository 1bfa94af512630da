"""Observing reviews: Prometheus metrics (``metrics``) and OpenTelemetry traces (``tracing``).

Both are off unless configured, and neither can fail or hold up a review: an export that goes
wrong costs one warning line and at most ``metrics.EXPORT_TIMEOUT_S`` / ``tracing.FLUSH_TIMEOUT_S``.
"""
