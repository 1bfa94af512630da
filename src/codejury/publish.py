"""The review on stdout or in a file: ``OutputPublisher``, one of the publishers the publish stage
(``codejury.stages.publish``) calls.

The CLI passes an ``OutputPublisher`` (the review rendered on stdout or into ``--output``) and,
with ``--publish``, a forge publisher (the merge request's comments and approval); a review
service passes its forge publisher only.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from codejury.errors import OutputError
from codejury.findings import Plan, Review

Renderer = Callable[..., Any]


class OutputPublisher:
    """The review rendered in ``fmt`` on stdout, or written to ``output``.

    A write that fails (a full disk) prints the review on stdout instead and keeps the error in
    ``unwritten``: the models were paid for, so the review reaches the user all the same.
    """

    def __init__(self, renderers: Mapping[str, Renderer], fmt: str, output: Path | None) -> None:
        self.renderers = renderers
        self.fmt = fmt
        self.output = output
        self.unwritten: OutputError | None = None

    async def publish(self, result: Review | Plan) -> None:
        self.unwritten = emit(result, self.fmt, self.output, self.renderers)

    async def publish_failure(self, reason: str) -> None:
        """Nothing to render: the CLI says why on stderr and exits 3."""


def emit(result: Review | Plan, fmt: str, output: Path | None, renderers: Mapping[str, Renderer]) -> OutputError | None:
    """Print ``result`` or write it to ``output``; a failed write prints it instead and returns the error."""
    from rich.console import Console

    from codejury.cli_io import write_output

    key = fmt if isinstance(result, Review) else f"{fmt}-plan"
    render = renderers[key]
    if fmt == "terminal":
        if output is None:
            render(result, Console())
            return None
        buf = io.StringIO()
        render(result, Console(file=buf, width=100, force_terminal=False, color_system=None))
        text = buf.getvalue()
    else:
        text = render(result)
    if output is None:
        click.echo(text)
        return None
    try:
        write_output(output, text)
    except OutputError as exc:
        click.echo(text)
        return OutputError(f"{exc}; the review was printed on stdout instead")
    return None


def default_format(fmt: str | None, output: Path | None) -> str:
    """``--format``, or terminal on a TTY (unless writing a file) and markdown otherwise."""
    return fmt or ("terminal" if sys.stdout.isatty() and output is None else "markdown")
