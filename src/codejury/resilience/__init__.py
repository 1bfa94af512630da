"""Resilience: error classes, circuit breakers, failback chains, stall watchdog and heartbeats."""

from codejury.resilience.breaker import BOARDS, BreakerBoard, BreakerBoards, BreakerState, CircuitBreaker
from codejury.resilience.chain import (
    DEFAULT_FAILBACK,
    AgentWatch,
    LiveRouting,
    ResilienceSettings,
    ResilientModel,
    build_chain,
    model_key,
)
from codejury.resilience.errors import ChainExhausted, Classified, ErrorKind, ModelStalled, classify

__all__ = [
    "BOARDS",
    "DEFAULT_FAILBACK",
    "AgentWatch",
    "BreakerBoard",
    "BreakerBoards",
    "BreakerState",
    "ChainExhausted",
    "CircuitBreaker",
    "Classified",
    "ErrorKind",
    "LiveRouting",
    "ModelStalled",
    "ResilienceSettings",
    "ResilientModel",
    "build_chain",
    "classify",
    "model_key",
]
