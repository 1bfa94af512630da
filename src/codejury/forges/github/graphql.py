"""The GraphQL side of the GitHub client: its documents and the batching of thread updates.

Review threads, their replies and their resolution exist only in GitHub's GraphQL API. This
module holds the query and mutations ``GitHubAPI`` sends (values always travel as variables,
never spliced into the text) and ``settle_document``, which batches many ``ThreadUpdate``
steps into one aliased mutation. It is separate from the client because it is text building
with no transport: the client sends it and reads the answer into ``ThreadOutcome``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codejury.forges.errors import ForgeError

THREADS_QUERY = """
query ReviewThreads($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line viewerCanResolve resolvedBy { login }
          comments(first: 100) { nodes { fullDatabaseId databaseId body author { login } } }
        }
      }
    }
  }
}"""
RESOLVE = "mutation Resolve($threadId: ID!) { resolveReviewThread(input: {threadId: $threadId}) { thread { id } } }"
UNRESOLVE = (
    "mutation Unresolve($threadId: ID!) { unresolveReviewThread(input: {threadId: $threadId}) { thread { id } } }"
)
REPLY = """
mutation Reply($threadId: ID!, $body: String!) {
  addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: $threadId, body: $body}) {
    comment { fullDatabaseId databaseId body author { login } }
  }
}"""


THREADS_PER_REQUEST = 10
"""Thread updates batched in one GraphQL request (a reply and a resolution each: 20 mutations)."""


@dataclass(frozen=True)
class ThreadUpdate:
    """Reply ``reply`` in a thread (None: no reply), then resolve it if ``resolve``."""

    thread_id: str
    reply: str | None
    resolve: bool


@dataclass(frozen=True)
class ThreadOutcome:
    """What became of one ``ThreadUpdate``: each step done, or its error (None: not asked or done)."""

    update: ThreadUpdate
    replied: bool = False
    resolved: bool = False
    reply_error: ForgeError | None = None
    resolve_error: ForgeError | None = None


def settle_document(updates: Sequence[ThreadUpdate]) -> tuple[str, dict[str, Any]]:
    """One mutation with aliased fields ``r<i>`` (reply) and ``s<i>`` (resolve), values in variables."""
    declared: list[str] = []
    fields: list[str] = []
    variables: dict[str, Any] = {}
    for i, update in enumerate(updates):
        declared.append(f"$t{i}: ID!")
        variables[f"t{i}"] = update.thread_id
        if update.reply is not None:
            declared.append(f"$b{i}: String!")
            variables[f"b{i}"] = update.reply
            fields.append(
                f"r{i}: addPullRequestReviewThreadReply(input: {{pullRequestReviewThreadId: $t{i}, body: $b{i}}}) "
                "{ comment { databaseId } }"
            )
        if update.resolve:
            fields.append(f"s{i}: resolveReviewThread(input: {{threadId: $t{i}}}) {{ thread {{ id }} }}")
    query = f"mutation Settle({', '.join(declared)}) {{\n  " + "\n  ".join(fields) + "\n}"
    return query, variables
