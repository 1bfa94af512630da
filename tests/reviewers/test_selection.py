"""Which reviewers run for each risk tier."""

from __future__ import annotations

from collections.abc import Sequence

from codejury.change.types import DiffLine, FileChange, Hunk
from codejury.reviewers import load_builtin_reviewers, parse_reviewer_file, select_reviewers
from codejury.reviewers.roster import ReviewerSpec, lite_extra_reviewer


def change(path: str, added: Sequence[str]) -> FileChange:
    """A modified file whose one hunk adds ``added``."""
    lines = tuple(DiffLine("+", text, None, i) for i, text in enumerate(added, start=1))
    return FileChange(path, path, "modified", (Hunk(1, 0, 1, len(lines), "", lines),))


PLAIN = [change("src/app/view.py", ["def title(page):", "    return page.name.title()"])]
ROSTER = load_builtin_reviewers()


def select(
    tier: str,
    files: Sequence[FileChange] = PLAIN,
    available: dict[str, ReviewerSpec] | None = None,
    *,
    release: bool = False,
    rules: bool = False,
    agents: bool = False,
) -> list[str]:
    return select_reviewers(
        tier,  # type: ignore[arg-type]
        files,
        ROSTER if available is None else available,
        release_changed=release,
        has_custom_rules=rules,
        has_agent_instructions=agents,
    )


def test_trivial_runs_only_the_generalist() -> None:
    assert select("trivial") == ["generalist"]
    assert select("trivial", release=True, rules=True, agents=True) == ["generalist"]


def test_full_runs_the_four_core_specialists() -> None:
    assert select("full") == ["security", "performance", "code_quality", "documentation"]


def test_full_adds_release_agents_md_and_compliance_only_when_relevant() -> None:
    assert select("full", release=True, rules=True, agents=True) == [
        "security",
        "performance",
        "code_quality",
        "documentation",
        "release",
        "agents_md",
        "compliance",
    ]
    assert "release" not in select("full", rules=True, agents=True)


def test_full_adds_agents_md_when_the_change_touches_an_instruction_file() -> None:
    files = [*PLAIN, change("docs/CLAUDE.md", ["Run make lint."])]
    assert "agents_md" in select("full", files)


def test_lite_third_reviewer_is_security_for_security_looking_lines() -> None:
    for line in (
        'cur.execute(f"SELECT * FROM users WHERE id = {uid}")',
        "subprocess.run(cmd, shell=True)",
        'API_KEY = "sk-live-123"',
        "data = pickle.loads(blob)",
        "cfg = yaml.load(stream)",
        "digest = hashlib.md5(pw).hexdigest()",
        "if not user.is_authenticated:",
        "result = eval(expression)",
    ):
        files = [change("src/app/x.py", [line])]
        assert select("lite", files) == ["security", "code_quality", "documentation"], line


def test_lite_third_reviewer_is_performance_for_queries_in_loops() -> None:
    n_plus_one = ["for order in orders:", "    items = db.query(Item).filter_by(order=order.id)"]
    nested = ["for a in rows:", "    for b in rows:", "        pair(a, b)"]
    for added in (n_plus_one, nested, ["time.sleep(5)"], ["users = User.objects.all()"]):
        files = [change("src/app/x.py", added)]
        assert select("lite", files) == ["performance", "code_quality", "documentation"], added


def test_ordinary_lines_do_not_look_security_relevant() -> None:
    added = ['__author__ = "Ada"', "total = sum(item.price for item in cart)"]
    assert lite_extra_reviewer([change("x.py", added)], release_changed=False) == "performance"


def test_a_query_after_the_loop_body_is_not_a_query_in_a_loop() -> None:
    added = ["for name in names:", "    print(name)", "rows = db.query(Item)"]
    assert lite_extra_reviewer([change("x.py", added)], release_changed=False) == "performance"
    assert lite_extra_reviewer([change("x.py", added)], release_changed=True) == "release"


def test_lite_picks_release_only_when_release_files_changed() -> None:
    assert select("lite", release=True) == ["code_quality", "documentation", "release"]
    assert select("lite") == ["performance", "code_quality", "documentation"]


def test_release_is_never_selected_without_release_changes() -> None:
    for tier in ("trivial", "lite", "full"):
        assert "release" not in select(tier, rules=True, agents=True)


def test_repo_extra_reviewers_run_in_lite_and_full_but_not_trivial() -> None:
    available = {
        **ROSTER,
        "zz-api": parse_reviewer_file("zz-api", "API rules.", "repo"),
        "db": parse_reviewer_file("db", "DB rules.", "repo"),
        "security": parse_reviewer_file("security", "Own security.", "repo"),
    }
    assert select("trivial", available=available) == ["generalist"]
    assert select("lite", available=available)[-2:] == ["db", "zz-api"]
    full = select("full", available=available)
    assert full == ["security", "performance", "code_quality", "documentation", "db", "zz-api"]


def test_unavailable_reviewers_are_left_out() -> None:
    available = {n: s for n, s in ROSTER.items() if n != "documentation"}
    assert select("full", available=available) == ["security", "performance", "code_quality"]


def test_selection_is_stable() -> None:
    assert select("full", release=True) == select("full", release=True)
