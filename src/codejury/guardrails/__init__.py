"""Guardrails on what a review reads: instruction-shaped text detected and logged (``injection``, ``screen``)."""
