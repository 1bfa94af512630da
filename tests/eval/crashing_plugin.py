"""A plugin with a bug: its configure hook raises on any change to ``svc/retry.go``.

Loaded with ``--plugin tests.eval.crashing_plugin`` by tests/eval/test_eval_e2e.py; the message
quotes the provider key of the test's environment over two lines, as a careless plugin might.
"""

from __future__ import annotations

import os

from codejury.contexts import ConfigureContext
from codejury.hookspecs import hookimpl


@hookimpl
def codejury_configure(ctx: ConfigureContext) -> None:
    if any(f.path == "svc/retry.go" for f in ctx.change.files):
        raise RuntimeError(f"no route for key {os.environ.get('GW_KEY', '')}\nin svc/retry.go")
