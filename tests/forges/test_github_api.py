"""The GitHub client against the loopback fake GitHub: pages, refusals, retries, threads, checks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx2
import pytest
from codejury_fakes.github import OFF_DIFF, FakeGitHub

from codejury.forges.errors import ForgeAuthError, ForgeUnavailable
from codejury.forges.github.api import (
    ACTIONS_BOT_LOGIN,
    Annotation,
    CommentableLines,
    DraftComment,
    GitHubAPI,
    GitHubRefused,
    ThreadUpdate,
)

REPO = "octo/app"
ACTIONS = "ghs_workflow_token"
FORK = "ghs_fork_token"
ALICE = "ghp_alice_secret"
OLD = "".join(f"line {i}\n" for i in range(1, 31))
NEW = OLD.replace("line 5\n", "line five\n").replace("line 25\n", "line twenty-five\n")


class Sleeps(list[float]):
    """An injected sleep: records the waits instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO) as fake:
        fake.add_user("alice")
        fake.add_token(ACTIONS, kind="actions")
        fake.add_token(FORK, kind="fork")
        fake.add_token(ALICE, user="alice")
        fake.add_pr(number=7, author="alice", files={"app.py": (OLD, NEW)})
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def api(gh: FakeGitHub, sleeps: Sleeps) -> AsyncIterator[GitHubAPI]:
    async with GitHubAPI(ACTIONS, api_url=gh.api_url, sleep=sleeps) as client:
        yield client


def client(
    gh: FakeGitHub, token: str, sleeps: Sleeps | None = None, *, page_size: int = 100, max_retries: int = 3
) -> GitHubAPI:
    sleep = Sleeps() if sleeps is None else sleeps
    return GitHubAPI(token, api_url=gh.api_url, sleep=sleep, page_size=page_size, max_retries=max_retries)


# -- reading the pull request, every page ----------------------------------------------------------
async def test_pull_request_and_its_files_across_pages(gh: FakeGitHub, api: GitHubAPI) -> None:
    files = {f"src/m{i:03}.py": (None, f"x = {i}\n") for i in range(105)}
    number = gh.add_pr(author="alice", title="Many files", files=files, head_ref="wide")

    pull = await api.pull_request(REPO, number)
    listed = await api.pull_files(REPO, number)

    assert (pull.number, pull.title, pull.author, pull.head_ref) == (number, "Many files", "alice", "wide")
    assert pull.head_sha == gh.pull(number).head_sha
    assert sorted(f.path for f in listed) == sorted(files)
    assert listed[0].status == "added" and listed[0].patch == "@@ -0,0 +1 @@\n+x = 0"
    assert len(gh.calls("GET", f"/pulls/{number}/files")) == 2  # 100 + 5


async def test_comments_are_read_beyond_the_first_page(gh: FakeGitHub) -> None:
    for i in range(5):
        gh.add_issue_comment(7, f"note {i}", user="alice")
        gh.add_review_comment(7, "app.py", 5, f"inline {i}", user="alice")
    async with client(gh, ACTIONS, page_size=2) as api:
        notes = await api.issue_comments(REPO, 7)
        inline = await api.review_comments(REPO, 7)
        threads = await api.review_threads(REPO, 7)

    assert [c.body for c in notes] == [f"note {i}" for i in range(5)]
    assert [c.body for c in inline] == [f"inline {i}" for i in range(5)]
    assert [t.comments[0].body for t in threads] == [f"inline {i}" for i in range(5)]
    # GraphQL's fullDatabaseId (a string) is the REST id.
    assert [t.comments[0].database_id for t in threads] == [c.id for c in inline]
    assert len(gh.calls("GET", "/issues/7/comments")) == 3
    assert len(gh.calls("GET", "/pulls/7/comments")) == 3
    assert len(gh.calls("POST", "/graphql")) == 3


async def test_summary_comment_is_created_then_edited_in_place(gh: FakeGitHub, api: GitHubAPI) -> None:
    created = await api.create_issue_comment(REPO, 7, "review: pending")
    edited = await api.edit_issue_comment(REPO, created.id, "review: approved")

    assert (edited.id, edited.author) == (created.id, ACTIONS_BOT_LOGIN)
    assert [c.body for c in gh.issue_comments(7)] == ["review: approved"]


async def test_identity_and_permissions(gh: FakeGitHub, api: GitHubAPI) -> None:
    async with client(gh, ALICE) as as_alice:
        assert await as_alice.current_login() == "alice"
    assert await api.current_login() == ACTIONS_BOT_LOGIN  # /user is 403 for a workflow token
    assert await api.permission(REPO, "alice") == "write"
    assert await api.permission(REPO, "octo") == "admin"
    assert await api.permission(REPO, ACTIONS_BOT_LOGIN) == "none"  # brackets survive the URL
    async with GitHubAPI(ACTIONS, api_url=gh.api_url, bot_login="codejury[bot]") as named:
        assert await named.current_login() == "codejury[bot]"
    assert len(gh.calls("GET", "/user")) == 2  # the login is asked once per client, and not when named


# -- reviews: what GitHub refuses ------------------------------------------------------------------
async def test_one_comment_off_the_diff_fails_the_whole_review(gh: FakeGitHub, api: GitHubAPI) -> None:
    head = gh.pull(7).head_sha
    good = DraftComment("app.py", 5, "five is spelled out")
    off = DraftComment("app.py", 15, "line 15 is not in any hunk")

    with pytest.raises(GitHubRefused) as refused:
        await api.create_review(REPO, 7, commit_id=head, body="summary", event="COMMENT", comments=[good, off])

    assert refused.value.status == 422
    assert refused.value.errors == (OFF_DIFF,)
    assert gh.reviews(7) == [] and gh.review_comments(7) == [] and gh.threads(7) == []

    review = await api.create_review(REPO, 7, commit_id=head, body="summary", event="COMMENT", comments=[good])
    assert (review.state, review.author, review.commit_id) == ("COMMENTED", ACTIONS_BOT_LOGIN, head)
    assert [(c.path, c.line, c.body) for c in gh.review_comments(7)] == [("app.py", 5, "five is spelled out")]


async def test_commentable_lines_agree_with_what_github_accepts(gh: FakeGitHub, api: GitHubAPI) -> None:
    (file,) = await api.pull_files(REPO, 7)
    lines = file.commentable_lines()
    fake_hunks = gh.pull(7).files["app.py"].hunks

    assert lines.hunks == tuple((frozenset(left), frozenset(right)) for left, right in fake_hunks)
    assert lines.allows(5) and lines.allows(8) and lines.allows(22) and not lines.allows(15)
    assert lines.allows(5, "LEFT") and not lines.allows(30, "LEFT")
    assert lines.allows(6, start_line=3) and not lines.allows(22, start_line=8)  # one hunk only
    assert not lines.allows(3, start_line=6)
    assert CommentableLines.from_patch(None).hunks == ()


async def test_multi_line_comment_in_one_hunk_is_posted(gh: FakeGitHub, api: GitHubAPI) -> None:
    head = gh.pull(7).head_sha
    comment = DraftComment("app.py", 6, "```suggestion\nline 5\n```", start_line=4)
    await api.create_review(REPO, 7, commit_id=head, body="", event="COMMENT", comments=[comment])

    (stored,) = gh.review_comments(7)
    assert (stored.start_line, stored.start_side, stored.line, stored.side) == (4, "RIGHT", 6, "RIGHT")


async def test_nobody_approves_their_own_pull_request(gh: FakeGitHub) -> None:
    head = gh.pull(7).head_sha
    async with client(gh, ALICE) as api:
        for event, reason in (("APPROVE", "approve"), ("REQUEST_CHANGES", "request changes on")):
            with pytest.raises(GitHubRefused) as refused:
                await api.create_review(REPO, 7, commit_id=head, body="ok", event=event)  # type: ignore[arg-type]
            assert refused.value.errors == (f"Can not {reason} your own pull request",)
    assert gh.reviews(7) == []


async def test_actions_may_approve_only_when_the_repository_allows_it(gh: FakeGitHub, api: GitHubAPI) -> None:
    head = gh.pull(7).head_sha
    with pytest.raises(GitHubRefused, match="GitHub Actions is not permitted to approve pull requests"):
        await api.create_review(REPO, 7, commit_id=head, body="LGTM", event="APPROVE")
    assert gh.reviews(7) == []

    gh.repo().actions_can_approve = True
    approval = await api.create_review(REPO, 7, commit_id=head, body="LGTM", event="APPROVE")
    assert approval.state == "APPROVED"

    dismissed = await api.dismiss_review(REPO, 7, approval.id, "new concerns after the last push")
    assert dismissed.state == "DISMISSED"
    assert [r.state for r in await api.reviews(REPO, 7)] == ["DISMISSED"]


async def test_a_fork_token_reads_but_every_write_is_refused(gh: FakeGitHub) -> None:
    head = gh.pull(7).head_sha
    async with client(gh, FORK) as api:
        assert (await api.pull_request(REPO, 7)).number == 7
        assert await api.issue_comments(REPO, 7) == []
        writes: list[Callable[[], Awaitable[object]]] = [
            lambda: api.create_issue_comment(REPO, 7, "hello"),
            lambda: api.create_review(REPO, 7, commit_id=head, body="x", event="COMMENT"),
            lambda: api.create_check_run(REPO, name="codejury", head_sha=head, title="t", summary="s"),
        ]
        for write in writes:
            with pytest.raises(ForgeAuthError) as denied:
                await write()
            assert denied.value.status == 403
            assert "Resource not accessible by integration" in str(denied.value)
            assert "fork" in str(denied.value)
    assert gh.issue_comments(7) == [] and gh.reviews(7) == [] and gh.check_runs() == []


async def test_a_bad_token_names_the_variable_but_never_the_token(gh: FakeGitHub) -> None:
    secret = "ghp_this_is_not_valid_0123456789"
    async with client(gh, secret) as api:
        with pytest.raises(ForgeAuthError) as rejected:
            await api.pull_request(REPO, 7)

    message = str(rejected.value)
    assert rejected.value.status == 401
    assert "GITHUB_TOKEN" in message and "CODEJURY_GITHUB_TOKEN" in message and "Bad credentials" in message
    assert secret not in message and "Bearer" not in message
    assert all(secret not in repr(r) for r in gh.requests)


# -- retries -----------------------------------------------------------------------------------
async def test_429_waits_as_long_as_retry_after_says(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    gh.fail_next(2, 429, retry_after=7, method="POST")

    await api.create_issue_comment(REPO, 7, "summary")

    assert sleeps == [7.0, 7.0]
    assert [r.status for r in gh.calls("POST")] == [429, 429, 201]
    assert len(gh.issue_comments(7)) == 1


async def test_secondary_and_primary_rate_limits_are_retried(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    gh.fail_next(1, 403, path="/pulls/7")  # secondary limit, no hint: a minute
    gh.fail_next(1, 403, reset_after=10, path="/pulls/7")  # primary: until x-ratelimit-reset

    assert (await api.pull_request(REPO, 7)).number == 7
    assert sleeps[0] == 60.0 and 9.0 <= sleeps[1] <= 12.0


async def test_a_rate_limit_longer_than_the_cap_fails_at_once(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    gh.fail_next(1, 429, retry_after=3600)

    with pytest.raises(ForgeUnavailable, match="longer than 60 s"):
        await api.pull_request(REPO, 7)
    assert sleeps == [] and gh.api_calls == 1


async def test_server_errors_on_a_read_are_retried_then_reported_unavailable(gh: FakeGitHub, sleeps: Sleeps) -> None:
    gh.fail_next(10, 502)
    async with client(gh, ACTIONS, sleeps, max_retries=3) as api:
        with pytest.raises(ForgeUnavailable, match="502") as unavailable:
            await api.pull_files(REPO, 7)

    assert unavailable.value.status == 502
    assert sleeps == [1.0, 2.0, 4.0] and gh.api_calls == 4


async def test_a_502_on_a_comment_is_not_sent_again(gh: FakeGitHub, sleeps: Sleeps) -> None:
    """A POST that creates something may have been applied before the 502: one request, then unavailable."""
    gh.fail_next(10, 502)
    async with client(gh, ACTIONS, sleeps, max_retries=3) as api:
        with pytest.raises(ForgeUnavailable, match="not retried") as unavailable:
            await api.create_issue_comment(REPO, 7, "summary")

    assert unavailable.value.status == 502
    assert sleeps == [] and gh.api_calls == 1
    assert gh.issue_comments(7) == []


async def test_a_dropped_connection_and_a_503_are_retried(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    gh.drop_next(1)
    gh.fail_next(1, 503)

    assert len(await api.pull_files(REPO, 7)) == 1
    assert sleeps == [1.0, 2.0]
    assert [r.status for r in gh.requests] == [0, 503, 200]


async def test_a_write_answered_with_502_after_it_took_effect_is_posted_once(
    gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps
) -> None:
    """GitHub can fail after writing: the client does not send the comment again, so there is no duplicate."""
    gh.fail_next(1, 502, method="POST", processed=True)

    with pytest.raises(ForgeUnavailable, match="may have been applied"):
        await api.create_issue_comment(REPO, 7, "summary")

    assert [c.body for c in gh.issue_comments(7)] == ["summary"] and sleeps == []


async def test_a_503_on_a_comment_is_retried(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    """503 says the request was not handled: even a POST that creates a comment is sent again."""
    gh.fail_next(2, 503, method="POST")

    await api.create_issue_comment(REPO, 7, "summary")

    assert [c.body for c in gh.issue_comments(7)] == ["summary"] and sleeps == [1.0, 2.0]


async def test_a_graphql_query_is_retried_but_a_mutation_is_not(gh: FakeGitHub, api: GitHubAPI, sleeps: Sleeps) -> None:
    await _bot_review(gh, api)
    gh.fail_next(1, 502, method="POST", path="/graphql")
    threads = await api.review_threads(REPO, 7)
    assert len(threads) == 2 and sleeps == [1.0]

    gh.fail_next(1, 502, method="POST", path="/graphql")
    with pytest.raises(ForgeUnavailable, match="not retried"):
        await api.reply_to_thread(threads[0].id, "a reply")
    assert sleeps == [1.0]


# -- threads over GraphQL ----------------------------------------------------------------------
async def _bot_review(gh: FakeGitHub, api: GitHubAPI) -> None:
    comments = [DraftComment("app.py", 5, "first"), DraftComment("app.py", 25, "second")]
    await api.create_review(REPO, 7, commit_id=gh.pull(7).head_sha, body="", event="COMMENT", comments=comments)


async def test_threads_are_listed_resolved_and_answered(gh: FakeGitHub, sleeps: Sleeps) -> None:
    gh.add_token("ghs_can_resolve", kind="actions", permissions={"contents": "write"})
    async with client(gh, "ghs_can_resolve", sleeps) as api:
        await _bot_review(gh, api)
        first, second = await api.review_threads(REPO, 7)
        assert (first.path, first.line, first.is_resolved, first.viewer_can_resolve) == ("app.py", 5, False, True)
        assert first.comments[0].author == ACTIONS_BOT_LOGIN

        await api.resolve_thread(first.id)
        reply = await api.reply_to_thread(second.id, "still open: see line 25")
        resolved = {t.id: t for t in gh.threads(7)}
        assert resolved[first.id].is_resolved and resolved[first.id].resolved_by == ACTIONS_BOT_LOGIN
        assert [c.body for c in resolved[second.id].comments] == ["second", "still open: see line 25"]

        await api.unresolve_thread(first.id)
        assert not next(t for t in gh.threads(7) if t.id == first.id).is_resolved

    root = next(c for c in gh.review_comments(7) if c.body == "second")
    answer = next(c for c in gh.review_comments(7) if c.id == reply.database_id)
    assert answer.in_reply_to_id == root.id


async def test_resolving_needs_contents_write_for_a_workflow_token(gh: FakeGitHub, api: GitHubAPI) -> None:
    await _bot_review(gh, api)
    thread = (await api.review_threads(REPO, 7))[0]
    assert not thread.viewer_can_resolve

    with pytest.raises(ForgeAuthError, match="contents: write") as denied:
        await api.resolve_thread(thread.id)
    assert "Resource not accessible by integration" in str(denied.value)
    assert not gh.threads(7)[0].is_resolved


async def test_thread_updates_go_ten_threads_a_request_each_reply_before_its_resolution(gh: FakeGitHub) -> None:
    gh.add_token("ghs_can_resolve", kind="actions", permissions={"contents": "write"})
    ids = [gh.add_review_comment(7, "app.py", 5, f"thread {i}", user="alice") for i in range(12)]
    threads = {t.comments[0].id: t.id for t in gh.threads(7)}
    updates = [ThreadUpdate(threads[c], f"fixed {i}", resolve=i != 11) for i, c in enumerate(ids)]
    updates.append(ThreadUpdate(threads[ids[0]], None, resolve=False))  # nothing to do: no request for it
    async with client(gh, "ghs_can_resolve") as api:
        outcomes = await api.settle_threads(updates)

    assert len(gh.calls("POST", "/graphql")) == 2  # 10 threads, then 2
    assert [(o.replied, o.resolved) for o in outcomes] == [(True, True)] * 11 + [(True, False), (False, False)]
    after = {t.id: t for t in gh.threads(7)}
    assert [after[threads[c]].comments[-1].body for c in ids] == [f"fixed {i}" for i in range(12)]
    assert [after[threads[c]].is_resolved for c in ids] == [True] * 11 + [False]
    sent = gh.calls("POST", "/graphql")[0].body or {}
    assert "fixed 0" not in sent["query"] and sent["variables"]["b0"] == "fixed 0"  # values as variables


async def test_a_refused_step_is_reported_in_its_outcome_and_the_others_still_run(gh: FakeGitHub) -> None:
    first = gh.add_review_comment(7, "app.py", 5, "first", user="alice")
    thread = next(t.id for t in gh.threads(7) if t.comments[0].id == first)
    updates = [ThreadUpdate("PRRT_missing", "gone", resolve=True), ThreadUpdate(thread, "fixed", resolve=True)]
    async with client(gh, ACTIONS) as api:  # no contents: write: may reply, may not resolve
        missing, found = await api.settle_threads(updates)

    assert isinstance(missing.reply_error, GitHubRefused) and isinstance(missing.resolve_error, GitHubRefused)
    assert found.replied and not found.resolved
    assert isinstance(found.resolve_error, ForgeAuthError) and "contents: write" in str(found.resolve_error)
    assert [c.body for c in gh.threads(7)[0].comments] == ["first", "fixed"] and not gh.threads(7)[0].is_resolved


_RESOLVE_AS = "mutation M($t: ID!) {{ a: {field}(input: {{threadId: {value}}}) {{ thread {{ id }} }} }}"


@pytest.mark.parametrize(
    ("query", "variables", "refusal"),
    [
        (_RESOLVE_AS.format(field="resolveReviewThread", value="$t"), {}, "invalid value"),
        (_RESOLVE_AS.format(field="resolveThread", value="$t"), {"t": "x"}, "doesn't exist"),
        (_RESOLVE_AS.format(field="resolveReviewThread", value="$u"), {"t": "x"}, "not declared"),
        (_RESOLVE_AS.format(field="resolveReviewThread", value='"x"'), {"t": "x"}, "not literals"),
    ],
)
async def test_the_fake_refuses_a_mutation_document_github_refuses(
    gh: FakeGitHub, api: GitHubAPI, query: str, variables: dict[str, str], refusal: str
) -> None:
    data, errors = await api._graphql_answer("test", query, variables)

    assert data is None and refusal in errors[0]["message"]
    assert not any(t.is_resolved for t in gh.threads(7))


async def test_a_reply_by_rest_lands_in_the_thread(gh: FakeGitHub, api: GitHubAPI) -> None:
    root = gh.add_review_comment(7, "app.py", 25, "why twenty-five?", user="alice")

    reply = await api.reply_to_comment(REPO, 7, root, "It matches the docs.")

    assert (reply.in_reply_to_id, reply.path, reply.author) == (root, "app.py", ACTIONS_BOT_LOGIN)
    assert [c.body for c in gh.threads(7)[0].comments] == ["why twenty-five?", "It matches the docs."]


async def test_a_push_outdates_threads_whose_line_changed(gh: FakeGitHub, api: GitHubAPI) -> None:
    old_head = gh.pull(7).head_sha
    await _bot_review(gh, api)
    gh.push(7, {"app.py": (OLD, NEW.replace("line five\n", "line 5\n"))})

    threads = {t.line: t for t in await api.review_threads(REPO, 7)}
    assert set(threads) == {None, 25}
    assert threads[None].is_outdated and not threads[25].is_outdated
    assert {c.line for c in await api.review_comments(REPO, 7)} == {None, 25}
    # A review on the previous head is still accepted, as GitHub does.
    late = DraftComment("app.py", 5, "late")
    await api.create_review(REPO, 7, commit_id=old_head, body="", event="COMMENT", comments=[late])


# -- comparing two commits (what changed since the last reviewed head) ------------------------------
async def test_compare_lists_the_files_changed_between_two_heads(gh: FakeGitHub, api: GitHubAPI) -> None:
    number = gh.add_pr(
        author="alice",
        files={"app.py": (OLD, NEW), "util.py": (None, "x = 1\n"), "keep.py": (None, "k = 1\n")},
        base_files={"README.md": "readme\n", "old_name.py": "moved = True\n"},
    )
    first = gh.pull(number).head_sha
    second = gh.push(number, {"app.py": (OLD, NEW.replace("line 9\n", "line nine\n")), "util.py": None})
    third = gh.push(number, {"old_name.py": ("moved = True\n", None), "new_name.py": (None, "moved = True\n")})

    assert await api.compare(REPO, first, second) == ["app.py", "util.py"]  # util.py went away
    assert await api.compare(REPO, second, third) == ["new_name.py", "old_name.py"]  # a rename: both paths
    assert await api.compare(REPO, first, third) == ["app.py", "new_name.py", "old_name.py", "util.py"]
    assert await api.compare(REPO, third, third) == []
    [request] = gh.calls("GET", f"/compare/{first}...{second}")
    assert request.query == {"per_page": "1"}  # the files come on the first page: one page, one commit


async def test_compare_is_unknown_after_a_force_push_or_for_a_commit_github_lacks(
    gh: FakeGitHub, api: GitHubAPI
) -> None:
    first = gh.pull(7).head_sha
    second = gh.push(7, {"app.py": (OLD, NEW.replace("line 9\n", "line nine\n"))})
    rebased = gh.push(7, {"app.py": (OLD, NEW.replace("line 9\n", "line 9!\n"))}, force=True)

    assert await api.compare(REPO, second, rebased) is None  # diverged: the merge base is not `second`
    assert await api.compare(REPO, second, first) is None  # behind: the head went back
    assert await api.compare(REPO, first, second) == ["app.py"]
    gh.drop_commit(second)
    assert await api.compare(REPO, second, rebased) is None  # 404
    assert await api.compare(REPO, "0" * 40, rebased) is None
    assert [r.status for r in gh.calls("GET", "/compare/")] == [200, 200, 200, 404, 404]


async def test_compare_at_githubs_300_file_cap_is_unknown(gh: FakeGitHub, api: GitHubAPI) -> None:
    first = gh.pull(7).head_sha
    wide = gh.push(7, {f"gen/m{i:03}.py": (None, f"x = {i}\n") for i in range(299)})
    wider = gh.push(7, {f"gen/n{i:03}.py": (None, f"y = {i}\n") for i in range(301)})

    assert len(await api.compare(REPO, first, wide) or []) == 299
    assert await api.compare(REPO, wide, wider) is None  # 300 listed, more changed: the list may be cut
    assert len(gh.calls("GET", f"/compare/{wide}...{wider}")) == 1  # files are never on a second page


# -- check runs --------------------------------------------------------------------------------
async def test_120_annotations_take_three_requests(gh: FakeGitHub, api: GitHubAPI) -> None:
    head = gh.pull(7).head_sha
    notes = [Annotation("app.py", i, i, "warning", f"finding {i}") for i in range(1, 121)]

    run = await api.create_check_run(
        REPO, name="codejury", head_sha=head, title="2 warnings", summary="review", conclusion="neutral",
        annotations=notes,
    )  # fmt: skip

    (stored,) = gh.check_runs()
    assert (run.id, run.status, run.conclusion) == (stored.id, "completed", "neutral")
    assert [a["message"] for a in stored.annotations] == [f"finding {i}" for i in range(1, 121)]
    assert [r.method for r in gh.calls(path="/check-runs")] == ["POST", "PATCH", "PATCH"]
    assert [r.body.get("status") for r in gh.calls(path="/check-runs")] == ["in_progress", None, "completed"]


async def test_the_fake_refuses_51_annotations_and_personal_tokens(gh: FakeGitHub) -> None:
    head = gh.pull(7).head_sha
    annotation = {"path": "app.py", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m"}
    body = {"name": "c", "head_sha": head, "output": {"title": "t", "summary": "s", "annotations": [annotation] * 51}}
    async with httpx2.AsyncClient(base_url=gh.api_url) as raw:
        too_many = await raw.post(
            "/repos/octo/app/check-runs", json=body, headers={"authorization": f"Bearer {ACTIONS}"}
        )
        personal = await raw.post("/repos/octo/app/check-runs", json=body, headers={"authorization": f"token {ALICE}"})
    assert too_many.status_code == 422 and "50" in too_many.json()["message"]
    assert personal.status_code == 403 and "GitHub App" in personal.json()["message"]
    assert gh.check_runs() == []
