"""The review command's telemetry flags: ``--metrics-push URL`` and ``--metrics-textfile PATH``.

Checked before anything runs (a malformed URL or an unwritable folder is bad input: one line, exit
2); once the review runs, an export that fails is only a warning. Importing this module loads
neither prometheus_client nor OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.cli_io import check_writable
from codejury.errors import InputError
from codejury.flags import is_http_url

if TYPE_CHECKING:
    from codejury.telemetry.last_run import LastRunRecorder


def check_metrics_flags(push_url: str | None, textfile: Path | None) -> None:
    """Raise ``InputError`` (or ``OutputError``) for a push URL or a textfile path that cannot work."""
    if push_url is not None and not is_http_url(push_url):
        raise InputError("--metrics-push expects the http:// or https:// URL of a Prometheus Pushgateway")
    if textfile is not None:
        check_writable("--metrics-textfile", textfile)


def metrics_recorders(
    push_url: str | None, textfile: Path | None, warn: Callable[[str], None]
) -> list[LastRunRecorder]:
    """A recorder that exports the review's last-run gauges (``codejury.telemetry.last_run``); none when no
    flag asks."""
    if push_url is None and textfile is None:
        return []
    from codejury.telemetry.last_run import LastRunRecorder

    return [LastRunRecorder(push_url=push_url.strip() if push_url else None, textfile=textfile, warn=warn)]
