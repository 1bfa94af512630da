"""Resilience: error classes, circuit breakers, failback chains, stall watchdog and heartbeats."""

from codejury.resilience.breaker import BOARD, BreakerBoard, BreakerState, CircuitBreaker
from codejury.resilience.chain import (
    DEADLINE,
    DEFAULT_FAILBACK,
    HEARTBEAT,
    MODELS_USED,
    ResilienceSettings,
    ResilientModel,
    build_chain,
)
from codejury.resilience.errors import ChainExhausted, Classified, ErrorKind, ModelStalled, classify

__all__ = [
    "BOARD",
    "DEADLINE",
    "DEFAULT_FAILBACK",
    "HEARTBEAT",
    "MODELS_USED",
    "BreakerBoard",
    "BreakerState",
    "ChainExhausted",
    "CircuitBreaker",
    "Classified",
    "ErrorKind",
    "ModelStalled",
    "ResilienceSettings",
    "ResilientModel",
    "build_chain",
    "classify",
]
