"""Learned rules proposed on a schedule by a review service (``[memory] learn_every_hours``).

``start_learner`` starts, on the service's loop, a task that wakes every ``learn_every_hours`` and runs what
``codejury learn --propose`` does for each repository on the configured GitLab or GitHub that the store recorded
a review of since the last wake: one merge request per new set of rules, none when the same rules were proposed before
or the default branch holds them already. Each outcome, or why a repository could not be done, is one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from codejury.errors import CodejuryError
from codejury.forges.hosts import github_instance, gitlab_instance
from codejury.memory.learn import learn_from
from codejury.memory.propose import propose_at
from codejury.record.memory import recent_repositories
from codejury.record.store import Store


async def learn_once(
    store: Store, env: Mapping[str, str], *, max_age_days: int, recent: datetime, say: Callable[[str], None]
) -> int:
    """Rules proposed for each repository on the configured GitLab or GitHub reviewed since ``recent``; returns how
    many merge or pull requests it opened."""
    forges = [urlsplit(instance.web_url) for instance in (gitlab_instance(env), github_instance(env))]
    hosts = [(f"{p.netloc}{p.path.rstrip('/')}/", p.scheme) for p in forges]
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=max_age_days)

    def read() -> list[tuple[str, str, int]]:
        with store.connect() as conn:
            out = []
            for repository in recent_repositories(conn, recent):
                scheme = next((scheme for host, scheme in hosts if repository.startswith(host)), None)
                if scheme is not None:
                    url = f"{scheme}://{repository}"
                    out.append((url, *learn_from(conn, repository, since, web_base=url)))
            return out

    opened = 0
    for url, text, rules in await asyncio.to_thread(read):
        if rules == 0:
            continue
        repository = url.split("://", 1)[1]
        try:
            proposal = await propose_at(url, text, rules, env)
        except CodejuryError as exc:
            say(f"learn {repository}: {' '.join(str(exc).split())}")
            continue
        opened += bool(proposal.url)
        say(f"learn {repository}: {proposal.line}")
    return opened


def start_learner(
    config_file: Path | None, env: Mapping[str, str], store: Store | None, say: Callable[[str], None]
) -> asyncio.Task[None] | None:
    """The service's learning task when ``[memory] learn_every_hours`` is set (in its config file or environment)
    and it has a store; the caller cancels it when the service stops."""
    from codejury.settings_loader import local_settings

    memory = local_settings(Path.cwd(), env, config_file).memory  # the service's own config, as its reviews read it
    if store is None or memory.learn_every_hours is None or not memory.enabled:
        return None
    every = timedelta(hours=memory.learn_every_hours)
    say(f"learned rules are proposed every {memory.learn_every_hours} h for the repositories reviewed here")

    async def learn_forever() -> None:
        while True:
            await asyncio.sleep(every.total_seconds())
            recent = datetime.now(UTC).replace(tzinfo=None) - every
            try:
                await learn_once(store, env, max_age_days=memory.max_age_days, recent=recent, say=say)
            except CodejuryError as exc:  # the store did not answer: the next wake tries again
                say(f"learn: {exc}")

    return asyncio.get_running_loop().create_task(learn_forever(), name="codejury-learn")
