"""The eval's progress on stderr: a live bar on a terminal, else one plain line per finished case.

The bar (rich's ``Progress``) shows the case under review, cases done of all, elapsed time, the
time left and the running cost; the plain lines (a CI log, a pipe) carry the same figures, once
per finished case. The time left is the mean wall time of the finished cases times the cases left.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from codejury.eval.dataset import EvalCase
from codejury.eval.results import CaseRun, score
from codejury.render import counted


def eta_s(elapsed_s: float, done: int, total: int) -> float | None:
    """Seconds left at the mean pace so far; None before the first case is done."""
    if done <= 0:
        return None
    return elapsed_s / done * max(0, total - done)


def clock(seconds: float | None) -> str:
    """``H:MM:SS``, or ``-:--:--`` when not known yet."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


class _EtaColumn(ProgressColumn):
    """``ETA H:MM:SS`` from the task's mean pace (rich's own estimate needs several updates a minute)."""

    def render(self, task: Task) -> Text:
        total = int(task.total or 0)
        left = eta_s(task.elapsed or 0.0, int(task.completed), total)
        return Text(f"ETA {clock(left)}", style="progress.remaining")


def outcome(case: EvalCase, run: CaseRun) -> str:
    """What one finished case gave, in a few words."""
    if run.error:
        return f"failed: {run.error}"
    s = score(case, run)
    return f"{run.verdict}, {counted(s.findings, 'finding')}, {s.matched} matched"


class CaseProgress:
    """Progress of one pass over the cases (``label``: ``codejury`` or ``naive baseline``).

    ``live``: draw the bar (default: when stderr is a terminal); ``console``: where the bar goes
    (default: stderr). Use as a context manager; call ``started`` and ``finished`` per case.
    """

    def __init__(
        self,
        label: str,
        total: int,
        *,
        live: bool | None = None,
        console: Console | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.cost_usd = 0.0
        self.running: list[str] = []
        self._started = time.monotonic()
        self._live = (stream or sys.stderr).isatty() if live is None else live
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if self._live:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                _EtaColumn(),
                TextColumn("${task.fields[cost]:.4f}"),
                TextColumn("{task.fields[case]}"),
                console=console or Console(stderr=True),
                transient=False,
            )
            self._task = self._bar.add_task(label, total=total, cost=0.0, case="")

    def __enter__(self) -> CaseProgress:
        self._started = time.monotonic()
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def started(self, case: EvalCase) -> None:
        """``case`` is being reviewed now."""
        self.running.append(case.id)
        self._show()

    def finished(self, case: EvalCase, run: CaseRun) -> None:
        """``case`` is done (reviewed, taken from the cache, or failed)."""
        if case.id in self.running:
            self.running.remove(case.id)
        self.done += 1
        self.cost_usd += run.cost_usd
        elapsed = time.monotonic() - self._started
        line = (
            f"codejury eval: {self.label} [{self.done}/{self.total}] {case.id}: {outcome(case, run)} "
            f"({run.wall_s:.0f} s; {elapsed:.0f} s elapsed, ETA {clock(eta_s(elapsed, self.done, self.total))}, "
            f"${self.cost_usd:.4f} so far)"
        )
        if self._bar is None:
            click.echo(line, err=True)
            return
        self._bar.console.print(Text(line), soft_wrap=True)  # above the bar: each case stays on screen
        self._show(advance=1)

    def _show(self, advance: int = 0) -> None:
        if self._bar is None or self._task is None:
            return
        current = ", ".join(self.running) if self.running else ""
        self._bar.update(self._task, advance=advance, cost=self.cost_usd, case=current, refresh=True)
