"""The command line's own files: where the review goes (``-o``, ``--events``), and what waits on stdin.

A review is paid for before it is written, so every path it will be written to is checked first
(``check_writable``: a missing folder, a directory, a read-only file or file system, a name too
long), and a write that still fails afterwards (a full disk) is reported as an ``OutputError``
instead of a traceback. A usage error (an unknown option or command, a value a flag does not take) is one
line and exit 2 like codejury's own errors (``OneLineUsage``), not click's four. Standard library and click
only: the CLI imports this at start-up.
"""

from __future__ import annotations

import os
import re
import select
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from codejury.errors import OutputError

T = TypeVar("T")

SHOWN_PATH_CHARS = 120
STDIN_WAIT_S = 0.05


_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
    "\U000e0000-\U000e007f]"
)


def visible_text(text: str) -> str:
    """``text`` for a terminal: every control, bidirectional and zero-width character (a file name may hold any)
    written as ``<U+202E>``, as published text shows them, so none can reorder or hide what a line says."""
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m[0]):04X}>", text)


def shown_path(path: Path | str) -> str:
    """``path`` for a one-line message: invisible characters and line breaks written out (``visible_text``),
    and a name thousands of characters long cut in the middle."""
    text = visible_text(str(path)).replace("\n", "<U+000A>").replace("\t", "<U+0009>")
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    half = SHOWN_PATH_CHARS // 2
    return f"{text[:half]}…{text[-half:]} ({len(text)} characters)"


def err_line(message: str) -> None:
    """One line on standard error, ``codejury:`` first, known secrets redacted (it may quote a provider's or
    forge's reply), control characters made visible."""
    from codejury.secrets import redact_env

    click.echo(f"codejury: {visible_text(redact_env(message))}", err=True)


def exit_on_errors(run: Callable[[], T]) -> T:
    """``run()``; a ``CodejuryError`` ends the command with one line and its ``exit_code`` (``InternalError``
    goes on to the command group, which reports a bug), an interrupt with ``interrupted`` and 130."""
    from codejury.errors import CodejuryError, InternalError

    try:
        return run()
    except InternalError:
        raise
    except CodejuryError as exc:
        err_line(f"{exc.lead}: {exc}" if exc.lead else str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_line("interrupted")
        sys.exit(130)


def check_writable(flag: str, path: Path) -> None:
    """Raise ``OutputError`` unless ``path`` can be written, leaving the file system as it was.

    An existing file is opened for appending (nothing is written); a new one is created in its
    folder and removed again. Trying beats ``os.access``: root passes every permission check but
    not a read-only file system, and only an open says whether a name is too long.
    """
    where = f"{flag} {shown_path(path)}"
    try:
        if path.is_dir():
            raise OutputError(f"cannot write {where}: it is a directory")
        if path.exists():
            with path.open("ab"):
                return
        parent = path.parent
        if not parent.is_dir():
            reason = "is not a directory" if parent.exists() else "does not exist"
            raise OutputError(f"cannot write {where}: the folder {shown_path(parent)} {reason}")
        with path.open("xb"):
            pass
        path.unlink()
    except OSError as exc:
        raise OutputError(f"cannot write {where}: {exc.strerror or exc}") from exc


def write_output(path: Path, text: str) -> None:
    """Write the rendered review to ``path`` (a full disk, a vanished folder: ``OutputError``)."""
    try:
        with path.open("w", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise OutputError(f"cannot write the review to {shown_path(path)}: {exc.strerror or exc}") from exc


def piped_stdin_has_data() -> bool:
    """True when stdin is a pipe or a file, not a terminal, and holds data (a diff piped without ``--diff -``).

    Reads one byte, so call it only when the run is about to stop: an empty or closed stdin (a CI
    job's ``/dev/null``) and a pipe that stays silent for ``STDIN_WAIT_S`` answer False.
    """
    stream = sys.stdin
    try:
        if stream is None or stream.isatty():
            return False
        fd = stream.fileno()
        ready, _, _ = select.select([fd], [], [], STDIN_WAIT_S)
        return bool(ready) and bool(os.read(fd, 1))
    except (OSError, ValueError):  # no real descriptor (an embedding process, a test runner)
        return False


class OneLineUsage(click.Group):
    """A command group whose usage errors, its own and its commands', are one line on standard error and exit 2:
    ``codejury: review: No such option '--bogus'. Did you mean '--base'? (codejury review --help)``."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            usage_error(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            # a command's flags that do not parse name no context of theirs: the command is the one being invoked
            named = exc.ctx is not None and exc.ctx is not ctx
            sub = ctx.invoked_subcommand if not named and ctx.invoked_subcommand not in (None, "*") else None
            usage_error(exc, f"{ctx.command_path} {sub}" if sub else None)


def usage_error(exc: click.UsageError, path: str | None = None) -> NoReturn:
    """``exc`` as one line (the command, click's message, where the help is; known secrets scrubbed), exit 2."""
    from codejury.secrets import redact_env  # only on this path: the CLI's start-up stays light

    path = path or (exc.ctx.command_path if exc.ctx is not None else "")
    command = path.partition(" ")[2]  # the program's own name as run (``python -m``, a wrapper) is not shown
    message = " ".join(exc.format_message().split())
    line = f"{command + ': ' if command else ''}{message} ({' '.join(('codejury', command)).strip()} --help)"
    click.echo(f"codejury: {visible_text(redact_env(line))}", err=True)
    sys.exit(exc.exit_code)
