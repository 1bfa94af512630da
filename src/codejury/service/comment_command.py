"""``codejury comment``: a CI job carries out the command in a merge request comment, as the service would.

The job is started by the comment itself: a GitHub workflow on ``issue_comment`` / ``pull_request_review_comment``
(the event file in ``GITHUB_EVENT_PATH``), or a GitLab pipeline a webhook trigger starts on a ``Note Hook`` (its
payload file in ``TRIGGER_PAYLOAD``). The comment is read as the service reads a delivery
(``chat.github_chat_request`` / ``chat.gitlab_chat_request``) and carried out by the service's own job code
(``chat_jobs.run_chat`` through ``JobRunner``): the same permission check (the author must have write access,
asked of the forge; anyone else, a bot, or a comment with no command gets nothing, and the job ends 0), and the
same ``/codejury review`` (run here, at once, whatever the skip rules), ``ask``, ``describe`` and ``break glass``.
Only click is imported at start-up.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from codejury.cli_io import err_line, exit_on_errors
from codejury.errors import InputError
from codejury.flags import review_flags, review_options, service_flags

COMMENT_OPTIONS = ("model", "model_for", "plugins", "config_file", "remote_config", "max_inline")
"""The review options ``codejury comment`` takes for what the command runs."""
GITLAB_NOTE = "Note Hook"


@click.command("comment")
@review_options(*COMMENT_OPTIONS)
@click.option(
    "--event",
    "event_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The forge's event file (default: GITHUB_EVENT_PATH in GitHub Actions, TRIGGER_PAYLOAD in a GitLab "
    "pipeline a webhook trigger started).",
)
@click.option(
    "--event-name",
    default=None,
    help="The event: issue_comment, pull_request_review_comment or 'Note Hook' (default: GITHUB_EVENT_NAME in "
    "GitHub Actions; 'Note Hook' with TRIGGER_PAYLOAD).",
)
def comment_command(event_file: Path | None, event_name: str | None, **params: Any) -> None:
    """Carry out the /codejury command of the comment that started this CI job (writers only)."""
    import asyncio

    env = dict(os.environ)
    outcome = exit_on_errors(lambda: asyncio.run(_carried_out(env, event_file, event_name, params)))
    err_line(outcome)
    sys.exit(0)


async def _carried_out(env: dict[str, str], event_file: Path | None, event_name: str | None, params: Any) -> str:
    from codejury.service.chat import github_chat_request, gitlab_chat_request
    from codejury.service.jobs import JobRunner, ReviewSetup
    from codejury.service.requests import ReviewRequest, Skipped

    name, path = _event(env, event_file, event_name)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read the event file {path}: {exc}") from exc
    if not isinstance(payload, dict):
        raise InputError(f"the event file {path} holds no JSON object")
    delivery = f"ci-{env.get('GITHUB_RUN_ID') or env.get('CI_PIPELINE_ID') or 'local'}"
    try:
        asked = (
            github_chat_request(name, payload, delivery)
            if name != GITLAB_NOTE
            else gitlab_chat_request(payload, delivery)
        )
    except ValueError as exc:
        raise InputError(f"the {name} event in {path} is malformed: {exc}") from exc
    if isinstance(asked, Skipped):
        return f"nothing to do: {asked.reason}"
    setup = ReviewSetup(**service_flags(review_flags(params)))
    runner = JobRunner(setup, env, say=err_line)

    async def review_now(review: ReviewRequest) -> str:  # /codejury review: in this job, not a queue
        return await runner.run(review)

    runner.submit = review_now
    try:
        return await runner.run(asked)
    finally:
        await runner.close()


def _event(env: dict[str, str], event_file: Path | None, event_name: str | None) -> tuple[str, Path]:
    """Which event started the job, and its file: the flags, else what GitHub Actions or a GitLab trigger sets."""
    if event_file is not None:
        name = event_name or env.get("GITHUB_EVENT_NAME") or GITLAB_NOTE
        return _known(name), event_file
    if env.get("GITHUB_EVENT_PATH"):
        return _known(event_name or env.get("GITHUB_EVENT_NAME", "")), Path(env["GITHUB_EVENT_PATH"])
    if env.get("TRIGGER_PAYLOAD"):
        return _known(event_name or GITLAB_NOTE), Path(env["TRIGGER_PAYLOAD"])
    raise InputError("no event to read: give --event FILE, or run in a GitHub workflow or a triggered GitLab pipeline")


def _known(name: str) -> str:
    from codejury.service.chat import GITHUB_CHAT_EVENTS

    if name not in (*GITHUB_CHAT_EVENTS, GITLAB_NOTE):
        shown = name or "(none)"
        raise InputError(
            f"codejury comment reads issue_comment, pull_request_review_comment or 'Note Hook', not {shown}"
        )
    return name
