"""The issues a change says it resolves: found in its own words as a forge finds closing references."""

from __future__ import annotations

import pytest

from codejury.change.intent import IssueRef, intent_text, linked_refs
from codejury.change.types import ChangeMeta, LinkedIssue

HOST = "github.example.com"


@pytest.mark.parametrize(
    ("description", "refs"),
    [
        ("Fixes #12", [IssueRef(None, 12)]),
        ("closes: #3 and resolves octo/tools#4", [IssueRef(None, 3), IssueRef("octo/tools", 4)]),
        ("Implements group/sub/project#7", [IssueRef("group/sub/project", 7)]),
        (f"Fixed https://{HOST}/octo/app/issues/9.", [IssueRef("octo/app", 9)]),
        (f"Closes https://{HOST}/group/project/-/issues/5", [IssueRef("group/project", 5)]),
        ("Fixes #12, fixes #12 again", [IssueRef(None, 12)]),
    ],
)
def test_closing_references_are_found(description: str, refs: list[IssueRef]) -> None:
    assert linked_refs(ChangeMeta(description=description), HOST) == refs


@pytest.mark.parametrize(
    "description",
    [
        "See #12 for the background",  # a mention, not a closing reference
        "Fixes https://evil.example/octo/app/issues/9",  # another host: its URL is never followed
        f"Fixes https://{HOST}/octo/app/pull/9",  # a pull request's page, not an issue
        "prefixes #12",  # a word that ends like a keyword
    ],
)
def test_what_is_not_a_closing_reference_is_not_read(description: str) -> None:
    assert linked_refs(ChangeMeta(description=description), HOST) == []


def test_the_title_and_the_commit_messages_count_too() -> None:
    meta = ChangeMeta(title="Resolve #1: export", commits=("wip", "Fixes #2"))
    assert linked_refs(meta, HOST) == [IssueRef(None, 1), IssueRef(None, 2)]


def test_the_issues_text_is_cut_to_its_budget_and_says_so() -> None:
    issues = [LinkedIssue("#1", "Export", "a" * 500), LinkedIssue("#2", "Import", "b" * 500)]
    text = intent_text(issues, 300)
    assert text.startswith("#1: Export\n") and "[... cut to fit the budget]" in text
    assert "#2" not in text and len(text) < 400
