"""The fake GitHub's GraphQL: the queries and mutations codejury sends, with GitHub's checks.

A query is recognised by the field it names; a mutation document is parsed
(``_parse_mutation``): several top-level fields, aliased or not, run in order, each failure an
``errors`` entry whose ``path`` is its alias and whose value in ``data`` is null. As GitHub
does, the whole document is refused for an unknown field, a variable used but not declared, or
a declared non-null variable not sent; so are values written into the document.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from codejury_fakes.github.records import NOT_ACCESSIBLE, Call, GraphQLError, Pull, Reply, Thread, Token
from codejury_fakes.github.state import GitHubState


class GraphQLRoutes(GitHubState):
    """The GraphQL endpoint over ``GitHubState``: review threads, resolving them, replying in them."""

    def _graphql(self, call: Call) -> Reply:
        query = call.field("query") or ""
        variables = call.field("variables") or {}
        if re.match(r"\s*mutation\b", query):
            assert call.token is not None
            return self._gql_mutations(call.token, query, variables)
        for field_name, name, operation in _GRAPHQL_FIELDS:
            if re.search(rf"\b{field_name}\b", query):
                assert call.token is not None
                try:
                    return Reply(200, {"data": {name: operation(self, call.token, variables, query)}})
                except GraphQLError as exc:
                    error = {"type": exc.kind, "path": [name], "message": str(exc)}
                    return Reply(200, {"data": {name: None}, "errors": [error]})
        return Reply(200, {"errors": [{"message": "the fake GitHub does not know this operation"}]})

    def _gql_mutations(self, token: Token, query: str, variables: dict[str, Any]) -> Reply:
        """Run a mutation document's fields in order, each with its own arguments (from ``variables``)."""
        try:
            fields = _parse_mutation(query, variables)
        except GraphQLError as exc:
            return Reply(200, {"errors": [{"message": str(exc), "extensions": {"code": exc.kind}}]})
        data: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        for key, name, arguments in fields:
            operation = _MUTATIONS[name]
            try:
                data[key] = operation(self, token, {"input": arguments}, query)
            except GraphQLError as exc:
                data[key] = None
                errors.append({"type": exc.kind, "path": [key], "message": str(exc)})
        return Reply(200, {"data": data, "errors": errors} if errors else {"data": data})

    def _gql_threads(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        owner, name, number = (_variable(variables, key) for key in ("owner", "name", "number"))
        pull = self._pulls.get((f"{owner}/{name}", int(number)))
        if pull is None:
            raise GraphQLError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        literal = re.search(r"reviewThreads\(\s*first:\s*(\d+)", query)
        first = int(literal[1]) if literal else int(_variable(variables, "first"))
        if first > 100:
            raise GraphQLError("EXCESSIVE_PAGINATION", f"Requesting {first} records on the connection exceeds "
                                "the `first` limit of 100 records.")  # fmt: skip
        after = variables.get("after")
        start = int(base64.b64decode(after).decode().rsplit(":", 1)[1]) + 1 if after else 0
        threads = self._threads_of(pull)
        nodes = [self._thread_json(t, token, pull) for t in threads[start : start + first]]
        end = start + len(nodes) - 1
        cursor = base64.b64encode(f"cursor:v2:{end}".encode()).decode() if nodes else None
        info = {"hasNextPage": start + first < len(threads), "endCursor": cursor}
        return {"pullRequest": {"reviewThreads": {"pageInfo": info, "nodes": nodes}}}

    def _thread_json(self, t: Thread, token: Token, pull: Pull) -> dict[str, Any]:
        comments = [{"id": f"PRRC_{c.id}", "fullDatabaseId": str(c.id), "databaseId": c.id, "body": c.body,
                     "author": {"login": c.user}, "createdAt": c.created_at} for c in t.comments[:100]]  # fmt: skip
        can_resolve = self._can_resolve(token, pull)
        return {
            "id": t.id, "isResolved": t.is_resolved, "isOutdated": t.is_outdated, "path": t.path, "line": t.line,
            "originalLine": t.comments[0].original_line, "diffSide": t.side, "viewerCanResolve": can_resolve,
            "viewerCanUnresolve": can_resolve, "resolvedBy": {"login": t.resolved_by} if t.resolved_by else None,
            "comments": {"nodes": comments},
        }  # fmt: skip

    def _gql_thread(self, token: Token, variables: dict[str, Any]) -> tuple[Thread, Pull]:
        thread_id = _variable(variables, "threadId", "pullRequestReviewThreadId")
        thread = self._threads.get(thread_id)
        if thread is None:
            raise GraphQLError("NOT_FOUND", f"Could not resolve to a node with the global id of '{thread_id}'")
        pull = next(p for p in self._pulls.values() if p.id == thread.pull_id)
        return thread, pull

    def _gql_resolve(self, token: Token, variables: dict[str, Any], query: str, resolved: bool = True) -> Any:
        thread, pull = self._gql_thread(token, variables)
        if not self._can_resolve(token, pull):
            raise GraphQLError("FORBIDDEN", NOT_ACCESSIBLE)
        thread.is_resolved, thread.resolved_by = resolved, token.user if resolved else None
        return {"thread": {"id": thread.id, "isResolved": thread.is_resolved}}

    def _gql_unresolve(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        return self._gql_resolve(token, variables, query, resolved=False)

    def _gql_reply(self, token: Token, variables: dict[str, Any], query: str) -> Any:
        thread, pull = self._gql_thread(token, variables)
        body = _variable(variables, "body")
        if token.kind != "pat" and not token.may_write("pull-requests"):
            raise GraphQLError("FORBIDDEN", NOT_ACCESSIBLE)
        reply = self._reply(pull, thread.comments[0].id, str(body), token.user)
        return {"comment": {"id": f"PRRC_{reply.id}", "fullDatabaseId": str(reply.id), "databaseId": reply.id,
                            "body": reply.body, "author": {"login": reply.user}}}  # fmt: skip


# (a field the document names, the top-level field of the answer, the operation)
_GRAPHQL_FIELDS: list[tuple[str, str, Callable[[GraphQLRoutes, Token, dict[str, Any], str], Any]]] = [
    ("unresolveReviewThread", "unresolveReviewThread", GraphQLRoutes._gql_unresolve),
    ("resolveReviewThread", "resolveReviewThread", GraphQLRoutes._gql_resolve),
    ("addPullRequestReviewThreadReply", "addPullRequestReviewThreadReply", GraphQLRoutes._gql_reply),
    ("reviewThreads", "repository", GraphQLRoutes._gql_threads),
]
_MUTATIONS: dict[str, Callable[[GraphQLRoutes, Token, dict[str, Any], str], Any]] = {
    "unresolveReviewThread": GraphQLRoutes._gql_unresolve,
    "resolveReviewThread": GraphQLRoutes._gql_resolve,
    "addPullRequestReviewThreadReply": GraphQLRoutes._gql_reply,
}
_OPERATION = re.compile(r"\s*mutation\b\s*(?:\w+)?\s*(?:\((?P<declared>[^)]*)\))?\s*\{")
_FIELD = re.compile(r"[\s,]*(?:(?P<alias>\w+)\s*:\s*)?(?P<name>\w+)\s*")
_ARGUMENT = re.compile(r"(?P<key>\w+)\s*:\s*(?P<value>\$\w+|\{|[^\s,}{)]+|\"(?:[^\"\\]|\\.)*\")")


def _closing(text: str, start: int, opening: str, closing: str) -> int:
    """The index just past the bracket that closes ``text[start]`` (strings skipped)."""
    depth, index, in_string = 0, start, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise GraphQLError("PARSE_ERROR", f"Parse error: expected {closing!r} before the end of the document")


def _parse_mutation(query: str, variables: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(response key, field, arguments)`` per top-level field, the arguments' values taken from ``variables``."""
    head = _OPERATION.match(query)
    if head is None:
        raise GraphQLError("PARSE_ERROR", "Parse error: a mutation document must open its selection with '{'")
    declared = dict(re.findall(r"\$(\w+)\s*:\s*([\w!\[\]]+)", head["declared"] or ""))
    for name, kind in declared.items():
        if kind.endswith("!") and variables.get(name) is None:
            raise GraphQLError("INVALID_VARIABLES", f"Variable ${name} of type {kind} was provided invalid value")
    end = _closing(query, head.end() - 1, "{", "}") - 1
    fields: list[tuple[str, str, dict[str, Any]]] = []
    index = head.end()
    while True:
        match = _FIELD.match(query, index)
        if match is None or match.end() > end:
            if query[index:end].strip(" \t\r\n,"):
                raise GraphQLError("PARSE_ERROR", f"Parse error on {query[index:end].strip()[:30]!r}")
            return fields
        key, name = match["alias"] or match["name"], match["name"]
        if name not in _MUTATIONS:
            raise GraphQLError("undefinedField", f"Field '{name}' doesn't exist on type 'Mutation'")
        if any(key == k for k, _, _ in fields):
            raise GraphQLError("fieldConflict", f"Field '{key}' is selected twice in one document")
        index = match.end()
        arguments: dict[str, Any] = {}
        if query.startswith("(", index):
            close = _closing(query, index, "(", ")")
            for argument in _ARGUMENT.finditer(query, index + 1, close - 1):
                value = argument["value"]
                if value == "{":
                    continue
                if not value.startswith("$"):
                    raise GraphQLError(
                        "INVALID_VARIABLES", f"{argument['key']}: {value[:20]} is written into the document "
                        "(send variables, not literals)"
                    )  # fmt: skip
                if value[1:] not in declared:
                    raise GraphQLError("variableNotDefined", f"Variable {value} is used but not declared")
                arguments[argument["key"]] = variables.get(value[1:])
            index = close
        rest = query[index:end].lstrip()
        if rest.startswith("{"):  # the selection set
            index = _closing(query, end - len(rest), "{", "}")
        fields.append((key, name, arguments))


def _variable(variables: dict[str, Any], *names: str) -> Any:
    """A GraphQL variable (any of ``names``, also inside an ``input`` object); missing: the client inlined it."""
    nested = variables.get("input")
    source: dict[str, Any] = nested if isinstance(nested, dict) else variables
    for name in names:
        if name in source:
            return source[name]
    raise GraphQLError("INVALID_VARIABLES", f"Variable ${names[0]} was not provided (send variables, not literals)")
