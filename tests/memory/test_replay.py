"""The measure of memory: twenty merge requests of one repository replayed on the fake GitLab.

The same false positive ("Magic number" on ``retries = 3``) is in the ten odd-numbered merge requests; a writer
dismisses it the first two times it is posted (merge requests 1 and 3, reviewed before either dismissal). Beside
it, every merge request has true findings that a careless memory would swallow: one of the same rule on other code
(``limit = K * 60``, the even ones), one of another rule on the very same code (the odd ones), and one of another
rule on other code (all). Authors fix one of those after the finding in three merge requests. Then
``codejury learn --propose`` opens one merge request with the rules, each with its counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from codejury_fakes.gitlab import FakeGitLab
from codejury_fakes.gitlab.repository import branch_files, opened_merge_requests

from codejury.cli import cli
from codejury.testing.scripted import finding
from tests.memory.replay import Replay, fake_gitlab

MRS = range(1, 21)
FALSE_POSITIVE = "Magic number"
SAME_CODE = "Retries not bounded by a deadline"
OTHER_RULE = "Unchecked input"
LEARNED = ".codejury/rules/learned.md"


def source(k: int, *, fixed: bool = False) -> str:
    read = f'validate(request.args["q{k}"])' if fixed else f'request.args["q{k}"]'
    fifth = "    retries = 3\n" if k % 2 else f"    limit = {k} * 60\n"
    return f"import os\n\n\ndef handler_{k}(request):\n    value = {read}\n{fifth}    return value\n"


def findings(k: int, *, fixed: bool = False) -> list[dict[str, object]]:
    path = f"pkg/mod{k}.py"
    out = [finding(path, 6, FALSE_POSITIVE, severity="suggestion", category="style")]
    if k % 2:
        out.append(finding(path, 6, SAME_CODE, severity="suggestion", category="resilience"))
    if not fixed:
        out.append(finding(path, 5, OTHER_RULE, severity="warning", category="validation"))
    return out


def true_threads(k: int) -> list[tuple[str, int]]:
    return [(OTHER_RULE, 5), (SAME_CODE, 6) if k % 2 else (FALSE_POSITIVE, 6)]


def test_a_dismissed_false_positive_stays_dismissed_and_learn_proposes_its_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with fake_gitlab(monkeypatch) as gl:
        replay = Replay(gl, monkeypatch, tmp_path, f"sqlite:///{tmp_path / 'reviews.sqlite3'}")
        for k in MRS:
            gl.add_mr(1, k, files={f"pkg/mod{k}.py": (None, source(k))}, source_branch=f"feature-{k}")
        for k in (1, 3):  # both reviewed before anyone dismissed anything
            assert replay.review(k, findings(k))[0] == 0
        for k in (1, 3):  # a writer answers won't fix; the re-review the reply starts records the dismissal
            thread = replay.threads(k)[(FALSE_POSITIVE, 6)]
            gl.add_reply(1, k, thread["id"], "won't fix: three retries is the documented default", author="bob")
            assert replay.review(k, findings(k))[0] == 0
        for k in (k for k in MRS if k not in (1, 3)):
            code, _, err = replay.review(k, findings(k))
            assert code == 0, err
            if k in (2, 4, 6):  # the author fixes the unchecked input, and the push is reviewed again
                gl.push(1, k, files={f"pkg/mod{k}.py": (None, source(k, fixed=True))})
                assert replay.review(k, findings(k, fixed=True))[0] == 0

        odd_after = [k for k in MRS if k % 2 and k > 3]
        posted_again = [k for k in odd_after if (FALSE_POSITIVE, 6) in replay.threads(k)]
        swallowed = [(k, t) for k in MRS for t in true_threads(k) if t not in replay.threads(k)]
        said = [k for k in odd_after if "1 finding dismissed before in this repository" in replay.summary(k)]
        print(
            f"memory replay: false positive posted {len(posted_again)} times in the {len(odd_after)} merge requests "
            f"after its two dismissals; {len(swallowed)} of {sum(len(true_threads(k)) for k in MRS)} true findings "
            "suppressed"
        )
        assert posted_again == [] and swallowed == []
        assert said == odd_after  # each summary says it, with where it was dismissed
        assert "dismissed in !3 by bob: won't fix" in replay.summary(19)

        project = f"{gl.url}/acme/widgets"
        first = CliRunner().invoke(cli, ["learn", "--propose", project], catch_exceptions=False)
        again = CliRunner().invoke(cli, ["learn", "--propose", project], catch_exceptions=False)
        proposed = [m for m in opened_merge_requests(gl, 1) if m["source_branch"].startswith("codejury/learned-")]
        assert first.exit_code == 0 and first.stdout.startswith("opened !21 with 2 learned rule(s)"), first.output
        assert again.exit_code == 0 and again.stdout.startswith("already proposed"), again.output
        assert len(proposed) == 1 and proposed[0]["author"]["username"] == FakeGitLab.BOT
        rules = (branch_files(gl, 1, proposed[0]["source_branch"]) or {})[LEARNED]
        assert 'Do not report "Magic number" (generalist) in pkg/: dismissed 2 times in 2 merge requests' in rules
        assert "dismissed 2 times in 2 merge requests of 12 findings published" in rules  # 10 true ones beside
        assert f"[!3]({project}/-/merge_requests/3) by bob: won't fix" in rules
        acted = 'Always check for "Unchecked input" (generalist) in pkg/: fixed by the author after a finding 3 times'
        assert f"{acted} in 3 merge requests" in rules and "`" not in rules
        assert branch_files(gl, 1, "main") == {}  # nothing learned applies before a person merges it
