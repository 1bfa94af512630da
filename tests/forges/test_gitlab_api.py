"""GitLabAPI against the fake GitLab: what a review bot does, and what GitLab refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest
from codejury_fakes.gitlab import FakeGitLab, gitlab_line_code

from codejury.forges.errors import ForgeAuthError, ForgeRefused, ForgeUnavailable
from codejury.forges.gitlab.api import GitLabAPI
from codejury.forges.gitlab.types import DiffRefs, MRDiff, line_code, position_for

OLD = "".join(f"line {n}\n" for n in range(1, 41))
# line 10 changed, one line added after line 20 (new 21), line 30 removed
NEW = OLD.replace("line 10\n", "line ten\n").replace("line 20\n", "line 20\nadded\n").replace("line 30\n", "")
FILES: dict[str, tuple[str | None, str | None]] = {"app.py": (OLD, NEW), "new.py": (None, "a = 1\nb = 2\n")}


class Sleeps:
    """An injected sleep: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def gl() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        server.add_mr(1, 7, files=FILES, title="Add search", description="d" * 3000)
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def api(gl: FakeGitLab, sleeps: Sleeps) -> AsyncIterator[GitLabAPI]:
    async with GitLabAPI(gl.api_url, FakeGitLab.BOT_TOKEN, sleep=sleeps) as client:
        yield client


async def app_change(api: GitLabAPI) -> tuple[DiffRefs, dict[str, MRDiff]]:
    refs = await api.latest_version(1, 7)
    return refs, {d.new_path: d for d in await api.diffs(1, 7)}


# -- reads ---------------------------------------------------------------------------------------
async def test_reads_the_merge_request_by_id_and_by_path(gl: FakeGitLab, api: GitLabAPI) -> None:
    mr = await api.merge_request("acme/widgets", 7)
    assert (mr.iid, mr.title, mr.author.username, mr.target_branch) == (7, "Add search", "alice", "main")
    assert len(mr.description) == 3000  # the full text, not CI's 2,700-character cut
    refs = await api.latest_version(1, 7)
    assert refs == mr.diff_refs == DiffRefs(**gl.diff_refs(1, 7))
    assert (await api.current_user()).username == FakeGitLab.BOT


async def test_diffs_become_file_changes(api: GitLabAPI) -> None:
    _, diffs = await app_change(api)
    app, new = diffs["app.py"].file_change(), diffs["new.py"].file_change()
    assert (app.status, new.status) == ("modified", "added")
    assert app.added_lines == {10, 21} and new.added_lines == {1, 2}


def test_a_diff_gitlab_left_out_is_a_file_shown_without_text() -> None:
    """GitLab sends ``diff: ""`` with ``collapsed`` or ``too_large`` for a diff it will not show: the file
    is then shown without text (judged by its head bytes), never an empty change such as a pure rename."""
    listed = {"old_path": "reports.py", "new_path": "search.py", "a_mode": "100644", "b_mode": "100644",
              "new_file": False, "renamed_file": True, "deleted_file": False, "generated_file": False}  # fmt: skip
    collapsed = MRDiff.from_json({**listed, "diff": "", "collapsed": True, "too_large": False}).file_change()
    assert (collapsed.path, collapsed.old_path, collapsed.status) == ("search.py", "reports.py", "renamed")
    assert collapsed.is_binary and not collapsed.hunks
    big = {**listed, "old_path": "app.py", "new_path": "app.py", "renamed_file": False}
    too_large = MRDiff.from_json({**big, "diff": "", "collapsed": False, "too_large": True}).file_change()
    assert (too_large.status, too_large.is_binary) == ("modified", True)
    pure = MRDiff.from_json({**listed, "diff": "", "collapsed": False, "too_large": False}).file_change()
    assert (pure.status, pure.is_binary, pure.hunks) == ("renamed", False, ())  # a pure rename stays one
    older = MRDiff.from_json({**listed, "diff": ""})  # an older GitLab without the fields
    assert not (older.collapsed or older.too_large or older.file_change().is_binary)
    shown = MRDiff.from_json({**listed, "diff": "@@ -1 +1 @@\n-a\n+b\n", "collapsed": True}).file_change()
    assert not shown.is_binary and shown.added_lines == {1}  # the text is there: it is read


async def test_the_fake_collapses_a_diff_as_gitlab_does(gl: FakeGitLab, api: GitLabAPI) -> None:
    gl.collapse(1, 7, "app.py")
    gl.collapse(1, 7, "new.py", too_large=True)
    _, diffs = await app_change(api)
    app, new = diffs["app.py"], diffs["new.py"]
    assert (app.diff, app.collapsed, app.too_large) == ("", True, False)
    assert (new.diff, new.collapsed, new.too_large) == ("", False, True)
    assert app.file_change().is_binary and new.file_change().is_binary


async def test_discussions_and_notes_follow_every_page(gl: FakeGitLab, api: GitLabAPI) -> None:
    for n in range(130):
        gl.add_discussion(1, 7, f"thread {n}")
    discussions = await api.discussions(1, 7)
    assert [d.notes[0].body for d in discussions] == [f"thread {n}" for n in range(130)]
    pages = [r.query["page"] for r in gl.requests if r.path.endswith("/discussions")]
    assert pages == ["1", "2"]
    notes = await api.notes(1, 7)
    assert len(notes) == 130 and notes[0].body == "thread 0"  # oldest first


def test_fake_paginates_like_gitlab(gl: FakeGitLab) -> None:
    for n in range(45):
        gl.add_note(1, 7, f"note {n}")
    headers = {"PRIVATE-TOKEN": FakeGitLab.BOT_TOKEN}
    first = httpx2.get(f"{gl.api_url}/projects/1/merge_requests/7/discussions", headers=headers)
    assert len(first.json()) == 20
    assert (first.headers["x-page"], first.headers["x-next-page"], first.headers["x-total"]) == ("1", "2", "45")
    assert 'rel="next"' in first.headers["link"]
    last = httpx2.get(f"{gl.api_url}/projects/1/merge_requests/7/discussions?page=3", headers=headers)
    assert len(last.json()) == 5 and last.headers["x-next-page"] == ""
    big = httpx2.get(f"{gl.api_url}/projects/1/merge_requests/7/notes?per_page=500", headers=headers)
    assert big.headers["x-per-page"] == "100"


async def test_member_access_level(gl: FakeGitLab, api: GitLabAPI) -> None:
    assert await api.member_access_level(1, gl.user("bob").id) == 40
    assert await api.member_access_level("acme/widgets", gl.user(FakeGitLab.BOT).id) == 30
    assert await api.member_access_level(1, gl.add_user("outsider").id) is None


# -- inline comments -------------------------------------------------------------------------------
async def test_line_outside_the_diff_is_refused_and_nothing_stored(gl: FakeGitLab, api: GitLabAPI) -> None:
    refs, diffs = await app_change(api)
    position = position_for(refs, diffs["app.py"].file_change(), 10)
    assert position is not None
    assert position_for(refs, diffs["app.py"].file_change(), 1) is None  # line 1 is not shown
    outside = {**position, "new_line": 1, "old_line": 1}
    with pytest.raises(ForgeRefused, match="must be a valid line code") as caught:
        await api.create_discussion(1, 7, "on line 1", outside)
    assert caught.value.status == 400
    assert gl.discussions(1, 7) == []


async def test_positions_need_the_current_shas(gl: FakeGitLab, api: GitLabAPI) -> None:
    refs, diffs = await app_change(api)
    stale = position_for(refs, diffs["app.py"].file_change(), 21)
    gl.push(1, 7, files={"app.py": (OLD, NEW + "tail\n")})
    with pytest.raises(ForgeRefused) as caught:
        await api.create_discussion(1, 7, "stale", stale)
    assert caught.value.status == 400
    refs, diffs = await app_change(api)
    assert refs.head_sha == gl.diff_refs(1, 7)["head_sha"]
    await api.create_discussion(1, 7, "fresh", position_for(refs, diffs["app.py"].file_change(), 21))


async def test_context_line_needs_both_sides(gl: FakeGitLab, api: GitLabAPI) -> None:
    refs, diffs = await app_change(api)
    position = position_for(refs, diffs["app.py"].file_change(), 12)  # context line: old 12, new 12
    assert position is not None and (position["old_line"], position["new_line"]) == (12, 12)
    with pytest.raises(ForgeRefused):
        await api.create_discussion(1, 7, "new side only", {**position, "old_line": None})
    await api.create_discussion(1, 7, "both sides", position)
    assert gl.discussions(1, 7)[0]["notes"][0]["position"]["old_line"] == 12


async def test_client_sends_json_and_the_note_is_anchored(gl: FakeGitLab, api: GitLabAPI) -> None:
    refs, diffs = await app_change(api)
    discussion = await api.create_discussion(1, 7, "inline", position_for(refs, diffs["app.py"].file_change(), 21))
    note = discussion.notes[0]
    assert note.type == "DiffNote" and note.position is not None and note.position["new_line"] == 21
    assert isinstance(gl.requests[-1].body, dict) and "position" in gl.requests[-1].body


def test_fake_drops_a_form_encoded_position_like_gitlab(gl: FakeGitLab) -> None:
    refs = gl.diff_refs(1, 7)
    fields = {"position_type": "text", "new_path": "app.py", "old_path": "app.py", "new_line": "21", **refs}
    form = {"body": "inline?", **{f"position[{k}]": v for k, v in fields.items()}}
    response = httpx2.post(
        f"{gl.api_url}/projects/1/merge_requests/7/discussions",
        data=form,
        headers={"PRIVATE-TOKEN": FakeGitLab.BOT_TOKEN},
    )
    assert response.status_code == 201
    note = gl.discussions(1, 7)[0]["notes"][0]
    assert note["type"] == "DiscussionNote" and "position" not in note


async def test_multi_line_positions(gl: FakeGitLab, api: GitLabAPI) -> None:
    refs, diffs = await app_change(api)
    change = diffs["app.py"].file_change()
    position = position_for(refs, change, 18, 21)  # context 18..20 (old 18..20), added 21
    assert position is not None
    line_range = position["line_range"]
    # the fake numbers lines on its own, GitLab's way: an added line keeps the running old counter
    assert line_range["start"]["line_code"] == gitlab_line_code("app.py", 18, 18) == line_code("app.py", 18, 18)
    assert line_range["end"] == {"line_code": gitlab_line_code("app.py", 21, 21), "type": "new",
                                 "old_line": None, "new_line": 21}  # fmt: skip
    await api.create_discussion(1, 7, "range", position)
    stored = gl.discussions(1, 7)[0]["notes"][0]["position"]
    assert stored["line_range"] == line_range and stored["new_line"] == 21
    # a range reaching outside the shown lines shrinks to them, inside the last line's hunk
    shrunk = position_for(refs, change, 1, 9)
    assert shrunk is not None and shrunk["line_range"]["start"]["new_line"] == 7 and shrunk["new_line"] == 9
    new_file = position_for(refs, diffs["new.py"].file_change(), 1, 2)
    assert new_file is not None and new_file["line_range"]["start"]["line_code"] == line_code("new.py", 0, 1)
    await api.create_discussion(1, 7, "new file", new_file)
    bad = {**position, "line_range": {**line_range, "start": {"line_code": line_code("app.py", 1, 1), "type": "old"}}}
    with pytest.raises(ForgeRefused, match="line_range"):
        await api.create_discussion(1, 7, "bad range", bad)
    assert len(gl.discussions(1, 7)) == 2


# -- threads ------------------------------------------------------------------------------------------
async def test_reply_resolve_unresolve(gl: FakeGitLab, api: GitLabAPI) -> None:
    thread = gl.add_discussion(1, 7, "is this safe?", path="app.py", new_line=10)
    reply = await api.reply(1, 7, thread, "yes: the input is escaped")
    assert reply.author.username == FakeGitLab.BOT
    resolved = await api.resolve_discussion(1, 7, thread)
    assert resolved.resolved and [n.body for n in resolved.notes] == ["is this safe?", "yes: the input is escaped"]
    assert gl.discussions(1, 7)[0]["notes"][0]["resolved_by"]["username"] == FakeGitLab.BOT
    assert not (await api.resolve_discussion(1, 7, thread, resolved=False)).resolved
    assert not (await api.discussions(1, 7))[0].resolved


async def test_edit_note_in_place(gl: FakeGitLab, api: GitLabAPI) -> None:
    note = await api.create_note(1, 7, "summary v1")
    edited = await api.edit_note(1, 7, note.id, "summary v2")
    assert edited.id == note.id and [n["body"] for n in gl.notes(1, 7)] == ["summary v2"]
    human = gl.add_note(1, 7, "mine")
    with pytest.raises(ForgeAuthError):  # only a note's author may edit it
        await api.edit_note(1, 7, human, "hijacked")


# -- approvals ------------------------------------------------------------------------------------------
async def test_approve_and_its_refusals(gl: FakeGitLab, api: GitLabAPI) -> None:
    head = gl.diff_refs(1, 7)["head_sha"]
    state = await api.approve(1, 7, sha=head)
    assert [u.username for u in state.approved_by] == [FakeGitLab.BOT]
    with pytest.raises(ForgeRefused, match="already") as again:
        await api.approve(1, 7, sha=head)
    assert again.value.status == 401
    gl.push(1, 7, files=FILES, reset_approvals=False)
    await api.unapprove(1, 7)
    with pytest.raises(ForgeRefused) as stale:
        await api.approve(1, 7, sha=head)
    assert stale.value.status == 409 and "SHA does not match" in str(stale.value)
    with pytest.raises(ForgeRefused) as none:
        await api.unapprove(1, 7)
    assert none.value.status == 404
    assert [u.username for u in (await api.approval_state(1, 7)).approved_by] == []


async def test_author_cannot_approve_own_merge_request(gl: FakeGitLab, sleeps: Sleeps) -> None:
    async with GitLabAPI(gl.api_url, FakeGitLab.AUTHOR_TOKEN, sleep=sleeps) as author:
        with pytest.raises(ForgeRefused) as caught:
            await author.approve(1, 7)
    assert caught.value.status == 401 and gl.approvals(1, 7) == []


# -- tokens -------------------------------------------------------------------------------------------
async def test_job_token_reads_but_cannot_write(gl: FakeGitLab, sleeps: Sleeps) -> None:
    async with GitLabAPI(gl.api_url, FakeGitLab.JOB_TOKEN, sleep=sleeps) as job:
        assert (await job.merge_request(1, 7)).iid == 7
        with pytest.raises(ForgeAuthError) as caught:
            await job.create_note(1, 7, "review")
        with pytest.raises(ForgeAuthError):
            await job.approve(1, 7)
    assert caught.value.status == 403 and "CI_JOB_TOKEN" in str(caught.value)
    assert "CODEJURY_GITLAB_TOKEN" in str(caught.value)
    assert gl.notes(1, 7) == [] and sleeps.waits == []


async def test_invalid_token_message_names_the_variable_not_the_token(gl: FakeGitLab, sleeps: Sleeps) -> None:
    secret = "glpat-THIS-MUST-NOT-LEAK"
    async with GitLabAPI(gl.api_url, secret, token_env="GITLAB_REVIEW_TOKEN", sleep=sleeps) as client:
        with pytest.raises(ForgeAuthError) as caught:
            await client.merge_request(1, 7)
    message = str(caught.value)
    assert caught.value.status == 401 and "GITLAB_REVIEW_TOKEN" in message and secret not in message
    assert "PRIVATE-TOKEN" not in message
    assert secret not in repr(gl.requests) and gl.requests[-1].user is None


# -- retries ------------------------------------------------------------------------------------------
async def test_rate_limit_waits_for_retry_after(gl: FakeGitLab, api: GitLabAPI, sleeps: Sleeps) -> None:
    gl.fail_next(2, 429, retry_after=3, path="/merge_requests/7$")
    assert (await api.merge_request(1, 7)).iid == 7
    assert sleeps.waits == [3.0, 3.0]
    assert [r.status for r in gl.requests] == [429, 429, 200]


async def test_rate_limit_longer_than_we_wait_gives_up_at_once(gl: FakeGitLab, api: GitLabAPI, sleeps: Sleeps) -> None:
    gl.fail_next(1, 429, retry_after=600)
    with pytest.raises(ForgeUnavailable, match="600") as caught:
        await api.create_note(1, 7, "hello")
    assert caught.value.status == 429 and sleeps.waits == [] and gl.notes(1, 7) == []


async def test_server_errors_exhaust_the_retries(gl: FakeGitLab, api: GitLabAPI, sleeps: Sleeps) -> None:
    gl.fail_next(10, 503)
    with pytest.raises(ForgeUnavailable) as caught:
        await api.discussions(1, 7)
    assert caught.value.status == 503 and sleeps.waits == [0.5, 1.0, 2.0] and gl.api_calls == 4


async def test_a_post_that_may_have_been_applied_is_not_repeated(gl: FakeGitLab, api: GitLabAPI) -> None:
    gl.fail_next(1, 500, method="POST")
    with pytest.raises(ForgeUnavailable, match="not retried"):
        await api.create_note(1, 7, "once")
    gl.fail_next(1, 502, method="POST")  # a proxy's 502: its upstream may have stored the note
    with pytest.raises(ForgeUnavailable, match="not retried"):
        await api.create_note(1, 7, "twice")
    gl.fail_next(1, 503, method="POST")  # 503: GitLab says it did not handle the request
    await api.create_note(1, 7, "thrice")
    assert [n["body"] for n in gl.notes(1, 7)] == ["thrice"]


async def test_no_server_is_unavailable(sleeps: Sleeps) -> None:
    with FakeGitLab() as gone:
        url = gone.api_url
    async with GitLabAPI(url, FakeGitLab.BOT_TOKEN, sleep=sleeps, max_retries=2) as client:
        with pytest.raises(ForgeUnavailable, match="did not answer"):
            await client.current_user()
    assert sleeps.waits == [0.5, 1.0]


# -- quick actions: the fake runs them as GitLab does ---------------------------------------------------
async def test_quick_actions_in_a_note_are_executed(gl: FakeGitLab, api: GitLabAPI) -> None:
    note = await api.create_note(1, 7, "Looks fine.\n/label ~reviewed\n/close")
    assert note.body == "Looks fine."
    assert [(q.command, q.args, q.user) for q in gl.quick_actions_executed] == [
        ("label", "~reviewed", FakeGitLab.BOT),
        ("close", "", FakeGitLab.BOT),
    ]
    assert gl.mr(1, 7)["state"] == "closed" and gl.mr(1, 7)["labels"] == ["reviewed"]
    with pytest.raises(ForgeRefused, match="quick actions") as caught:  # commands only: 202, nothing saved
        await api.create_note(1, 7, "/approve")
    assert caught.value.status == 202 and gl.approvals(1, 7) == [FakeGitLab.BOT]
    await api.edit_note(1, 7, note.id, "Looks fine.\n/reopen")  # also on edit
    assert gl.mr(1, 7)["state"] == "opened"


async def test_quick_actions_in_fences_or_indented_are_text(gl: FakeGitLab, api: GitLabAPI) -> None:
    body = "Run this:\n```\n/approve\n/merge\n```\n~~~sh\n/close\n~~~\n /close\n`/merge`\n/notacommand"
    note = await api.create_note(1, 7, body)
    refs, diffs = await app_change(api)
    await api.create_discussion(1, 7, body, position_for(refs, diffs["app.py"].file_change(), 10))
    assert note.body == body and gl.quick_actions_executed == []
    assert gl.mr(1, 7)["state"] == "opened" and gl.approvals(1, 7) == []


def test_fake_latency_and_call_count() -> None:
    with FakeGitLab(latency_s=0.05) as gl:
        gl.add_mr(1, 1, diff="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")
        response = httpx2.get(f"{gl.api_url}/projects/1/merge_requests/1", headers={"PRIVATE-TOKEN": gl.BOT_TOKEN})
        assert response.elapsed.total_seconds() >= 0.05 and gl.api_calls == 1
        diff = httpx2.get(f"{gl.api_url}/projects/1/merge_requests/1/diffs", headers={"Authorization": "Bearer x"})
        assert diff.status_code == 401 and diff.json() == {"message": "401 Unauthorized"}


# -- the repository at a commit (the base side) and what changed between commits ---------------------
async def test_file_text_reads_a_file_at_a_commit_and_none_when_absent(gl: FakeGitLab, api: GitLabAPI) -> None:
    base = gl.diff_refs(1, 7)["base_sha"]
    gl.set_repo_files(1, base, {".codejury/rules/no-print.md": "Use logging.\n", "AGENTS.md": "Be kind. é\n"})
    assert await api.file_text(1, ".codejury/rules/no-print.md", base) == "Use logging.\n"
    assert await api.file_text("acme/widgets", "AGENTS.md", base) == "Be kind. é\n"
    assert await api.file_text(1, "CLAUDE.md", base) is None
    head = gl.diff_refs(1, 7)["head_sha"]
    assert await api.file_text(1, "new.py", head) == "a = 1\nb = 2\n"  # the head tree has the MR's files
    [call] = [r for r in gl.requests if r.path.endswith("/raw") and r.status == 200][:1]
    assert "%2F" in call.path and call.query["ref"] == base  # the path is one URL-encoded segment


async def test_tree_lists_the_files_directly_inside_a_directory_every_page(gl: FakeGitLab, api: GitLabAPI) -> None:
    base = gl.diff_refs(1, 7)["base_sha"]
    rules = {f".codejury/rules/r{n:03}.md": f"rule {n}\n" for n in range(130)}
    gl.set_repo_files(1, base, {**rules, ".codejury/rules/deeper/x.md": "x\n", "README.md": "r\n"})
    listed = await api.tree(1, ".codejury/rules", base)
    assert listed == sorted(rules)  # blobs only (no "deeper" directory), across two pages of 100
    assert len([r for r in gl.requests if r.path.endswith("/repository/tree")]) == 2
    assert await api.tree(1, ".codejury/reviewers", base) == []  # a missing directory: 404, read as empty
    assert await api.tree(1, "", base) == ["README.md"]


async def test_compare_lists_changed_paths_straight_and_none_for_an_unknown_commit(
    gl: FakeGitLab, api: GitLabAPI
) -> None:
    first = gl.diff_refs(1, 7)["head_sha"]
    second = gl.push(1, 7, files={"app.py": (OLD, NEW.replace("line 5\n", "line 5!\n")), "new.py": (None, "a = 1\n")})
    assert await api.compare(1, first, second["head_sha"]) == ["app.py", "new.py"]
    assert await api.compare(1, first, first) == []
    [call] = [r for r in gl.requests if r.path.endswith("/repository/compare")][:1]
    assert call.query["straight"] == "true"  # old..new itself, not from their merge-base
    gl.drop_commit(1, first)
    assert await api.compare(1, first, second["head_sha"]) is None


async def test_notes_carry_who_resolved_their_thread(gl: FakeGitLab, api: GitLabAPI) -> None:
    opened = gl.add_discussion(1, 7, "a question", author="alice")
    closed = gl.add_discussion(1, 7, "done", author="alice")
    await api.resolve_discussion(1, 7, closed)
    by_id = {d.id: d for d in await api.discussions(1, 7)}
    assert by_id[opened].resolved_by is None and not by_id[opened].resolved
    assert by_id[closed].resolved and by_id[closed].resolved_by is not None
    assert by_id[closed].resolved_by.username == FakeGitLab.BOT
    assert by_id[closed].notes[0].resolved_by == by_id[closed].resolved_by
