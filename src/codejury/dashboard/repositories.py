"""The dashboard's view by repository: one row per repository (the chargeback table), and links to its changes.

``repository_table(conn, scope)`` sums, per repository, the reviews in ``scope``, their cost, their findings
and the reviews that blocked the merge (verdict ``requested_changes``), in two grouped queries;
``add_outcomes(rows, acted)`` adds the acted-on rate of those findings (of the findings whose change was
reviewed again, the share acted on before that next review), which ``codejury.dashboard.series.acted_outcomes``
sums per repository in the pass that reads every finding's outcome for the charts, the heaviest read of the
page, so that the outcomes are read once.

``ChangeLinks`` turns a recorded repository (``host/path``, as the forge adapters and a clone's ``origin``
name it) and change id (``!7`` on GitLab, ``#42`` on GitHub) into the merge request's page on the configured
forge (``codejury.forges.hosts``): a repository on another host, or a local review's branch name, gets no
link, so the page never points at a host nobody configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from sqlalchemy import ColumnElement, Connection, case, func, select

from codejury.dashboard.series import ActedPoint
from codejury.forges.hosts import ForgeHosts, ForgeInstance
from codejury.record import schema
from codejury.record.memory import suppressed_by_repository

BLOCKING_VERDICT = "requested_changes"
_SEGMENT = re.compile(r"[A-Za-z0-9_.~+-]+")
_NUMBER = re.compile(r"[1-9][0-9]{0,11}")


@dataclass
class RepositoryRow:
    """One repository's reviews in the dashboard's period."""

    repository: str
    reviews: int
    cost_usd: float
    findings: int
    followed_up: int
    acted_on: int
    blocked: int
    suppressed: int = 0
    """Findings memory did not publish again: a writer dismissed them before in this repository."""

    @property
    def acted_on_rate(self) -> float | None:
        """Acted on, of the findings whose change was reviewed again; None when none was."""
        return self.acted_on / self.followed_up if self.followed_up else None

    @property
    def blocked_rate(self) -> float | None:
        return self.blocked / self.reviews if self.reviews else None


def repository_table(conn: Connection, scope: ColumnElement[bool]) -> list[RepositoryRow]:
    """Every repository with a review in ``scope``, the most expensive first (its findings' outcomes not yet
    added: ``add_outcomes``)."""
    r, f = schema.reviews, schema.findings
    rows: dict[str, RepositoryRow] = {}
    blocked = func.sum(case((r.c.verdict == BLOCKING_VERDICT, 1), else_=0))
    for repository, reviews, cost, n_blocked in conn.execute(
        select(r.c.repository, func.count(), func.sum(r.c.cost_usd), blocked).where(scope).group_by(r.c.repository)
    ):
        rows[repository] = RepositoryRow(repository, int(reviews), float(cost or 0), 0, 0, 0, int(n_blocked or 0))
    findings = (
        select(r.c.repository, func.count())
        .select_from(f.join(r, r.c.id == f.c.review_id))
        .where(scope)
        .group_by(r.c.repository)
    )
    for repository, n in conn.execute(findings):
        if repository in rows:
            rows[repository].findings = int(n)
    for row in suppressed_by_repository(conn, scope):
        if row.key in rows:
            rows[row.key].suppressed = row.suppressed
    return sorted(rows.values(), key=lambda row: (-row.cost_usd, -row.reviews, row.repository))


def add_outcomes(rows: list[RepositoryRow], acted: Mapping[str, ActedPoint]) -> list[RepositoryRow]:
    """``rows`` with the outcomes of their findings (``acted``, per repository, from ``acted_outcomes``)."""
    for row in rows:
        outcome = acted.get(row.repository)
        if outcome is not None:
            row.followed_up, row.acted_on = outcome.followed_up, outcome.acted_on
    return rows


def known_repositories(conn: Connection) -> list[str]:
    """Every repository the store has a review of (the filter's choices), in order."""
    r = schema.reviews
    query = select(r.c.repository).where(r.c.repository != "").group_by(r.c.repository).order_by(r.c.repository)
    return [str(name) for (name,) in conn.execute(query)]


@dataclass(frozen=True)
class ChangeLinks:
    """Merge request and pull request pages on the configured forges (``ForgeHosts``)."""

    hosts: ForgeHosts

    def url(self, repository: str, change_id: str) -> str | None:
        """The page of change ``change_id`` (``!7``, ``#42``) of ``repository`` (``host/path``); None when
        the change is no forge's merge request or the repository is not on that forge's configured instance."""
        kind, number = change_id[:1], change_id[1:]
        if kind not in ("!", "#") or not _NUMBER.fullmatch(number):
            return None
        instance = self.hosts.gitlab if kind == "!" else self.hosts.github
        path = _project_path(instance, repository)
        if path is None:
            return None
        page = "/-/merge_requests/" if kind == "!" else "/pull/"
        return f"{instance.web_url}/{path}{page}{number}"


def _project_path(instance: ForgeInstance, repository: str) -> str | None:
    """``repository`` (``host[:port]/prefix/group/project``) below ``instance``'s web URL, as a URL path;
    None when it is on another host or is not a plain path of names."""
    web = urlsplit(instance.web_url)
    prefix = f"{web.netloc.lower()}{web.path.rstrip('/')}/"
    if not repository.lower().startswith(prefix):
        return None
    segments = repository[len(prefix) :].split("/")
    if len(segments) < 2 or any(not _SEGMENT.fullmatch(s) or s in {".", ".."} for s in segments):
        return None
    return "/".join(quote(s, safe="") for s in segments)
