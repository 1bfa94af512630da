"""The stages of one review: each a function of the run (``ReviewRun``) that ``codejury.pipeline`` calls in order.

A stage adapts the run to the domain packages below it (``change``, ``analyzers``, ``agents``,
``judge``, ``render``, ``record``, ...), which do not know about the run: ``plan`` (``--dry-run``),
``workspace``, ``panel`` (the reviewers), ``evidence``, ``judge``, ``naive`` (``--baseline naive``),
``verdict``, ``publish`` and ``record``. docs/architecture.md has the table.
"""
