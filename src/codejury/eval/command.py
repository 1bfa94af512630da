"""``codejury eval``: the command. Imports stay inside the function so ``codejury --help`` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from codejury.flags import EVAL_OPTIONS, review_options

METRICS_HELP = "precision, recall, f1, judged_precision, judged_recall, judged_f1, on_changed_lines"


@click.command("eval")
@click.argument("dataset", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--builtin", is_flag=True, help="Use the bundled golden set (26 small changes in 8 languages).")
@click.option("--baseline", type=click.Choice(["naive"]), help="Also run one naive prompt on the same model.")
@click.option("--judge", metavar="PROVIDER:MODEL", help="Also score by meaning with this model.")
@review_options(*EVAL_OPTIONS, config_file={"type": click.Path(dir_okay=False, path_type=Path)})
@click.option(
    "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Cases at a time (cloud models)."
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N cases.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the markdown table here.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, path_type=Path), help="Write every score here.")
@click.option(
    "--fail-below",
    multiple=True,
    metavar="METRIC=VALUE",
    help=f"Exit 1 when an overall metric is below VALUE; repeatable. Metrics: {METRICS_HELP}.",
)
@click.option("--no-cache", is_flag=True, help="Review every case again instead of resuming from the cache.")
def eval_command(**flags: Any) -> None:
    """Review every case of a dataset (JSONL of pull requests with expected comments) and score the findings.

    Each case is reviewed exactly as `codejury review` reviews it, in a temporary checkout, in this
    process (every model is loaded once for all cases). Progress goes to stderr. The markdown table
    goes to stdout (or --output); exit 1 when a --fail-below threshold is missed.
    """
    import os

    from codejury.eval.session import run_eval

    raise SystemExit(run_eval(dict(os.environ), **flags))
