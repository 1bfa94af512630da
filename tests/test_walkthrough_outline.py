"""On a weak coordinator's model the walkthrough is listed from the diff: the definitions the change adds, changes
and removes, by their own names, and the author's title; no model is asked, and every output says so."""

from __future__ import annotations

import json
from pathlib import Path

from codejury.change.diffparse import parse_diff
from codejury.change.types import ChangeMeta, ChangeSet
from codejury.findings import Plan, Review
from codejury.forges.safety import checked
from codejury.forges.summary import walkthrough_section
from codejury.render.jsonout import REVIEW_JSON_SCHEMA, review_to_json, schema_errors
from codejury.render.markdown import FROM_THE_DIFF, render_review_markdown
from codejury.repocontext.definitions import outline_file
from codejury.stages.outline import outlined
from codejury.testing.changes import make_change
from codejury.testing.scripted import Raw
from tests.engine_helpers import run_review, scripted_settings, unified_diff

OLD = """\
import os


def total(items):
    return sum(items)


def legacy_total(items):
    return sum(items)


def unchanged(x):
    return x
"""
NEW = """\
import os


def total(items):
    return sum(i.price for i in items)


class Cart:
    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)


def unchanged(x):
    return x
"""
GO_OLD = """\
package queue

func (c *Client) Subscribe() error {
\tif !c.conn.isOpen() {
\t\treturn errClosed
\t}
\treturn nil
}
"""
GO_NEW = """\
package queue

func (c *Client) Subscribe() error {
\tif err := ensureOpen(c); err != nil {
\t\treturn err
\t}
\treturn nil
}

func ensureOpen(c *Client) error {
\treturn nil
}
"""


def test_a_file_outline_names_what_the_change_adds_changes_and_removes(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"shop/cart.py": (OLD, NEW)})
    [file] = change.files
    got = outline_file(file, (tmp_path / "repo/shop/cart.py").read_bytes())
    # a class added whole is named once, not with its methods; an untouched function is not named
    assert (got.added, got.changed, got.removed) == (["Cart"], ["total"], ["legacy_total"])


def test_without_the_head_side_the_patch_alone_is_read(tmp_path: Path) -> None:
    [file] = parse_diff(unified_diff("shop/cart.py", OLD, NEW))
    got = outline_file(file, None)
    assert "Cart" in got.added and "legacy_total" in got.removed
    assert "unchanged" not in [*got.added, *got.changed, *got.removed]


def test_a_call_in_a_condition_the_change_removes_is_not_a_removed_definition(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"queue/client.go": (GO_OLD, GO_NEW)})
    [file] = change.files
    got = outline_file(file, (tmp_path / "repo/queue/client.go").read_bytes())
    assert (got.added, got.changed, got.removed) == (["ensureOpen"], ["Subscribe"], [])


def test_a_new_function_whose_closing_brace_the_diff_aligns_with_an_old_one_is_added() -> None:
    patch = "--- a/m.go\n+++ b/m.go\n@@ -1,3 +1,7 @@\n func A() {\n+\tx()\n+}\n+\n+func B() {\n \ty()\n }\n"
    [file] = parse_diff(patch)
    got = outline_file(file, b"func A() {\n\tx()\n}\n\nfunc B() {\n\ty()\n}\n")
    assert (got.added, got.changed, got.removed) == (["B"], ["A"], [])


def test_a_function_rewritten_whole_is_changed_not_added(tmp_path: Path) -> None:
    old = "def total(items):\n    return sum(items)\n"
    new = "def total(prices, tax):\n    subtotal = sum(prices)\n    return subtotal * (1 + tax)\n"
    change = make_change(tmp_path, {"shop.py": (old, new)})
    got = outline_file(change.files[0], (tmp_path / "repo/shop.py").read_bytes())
    assert (got.added, got.changed, got.removed) == ([], ["total"], [])


def test_the_outline_sums_up_the_code_and_quotes_the_title_as_the_authors(tmp_path: Path) -> None:
    change = make_change(
        tmp_path,
        {
            "shop/cart.py": (OLD, NEW),
            "tests/test_cart.py": ("", "def test_add():\n    pass\n"),
            "README.md": ("a\n", "b\n"),
        },
        title="Carts keep their items",
    )
    walk = outlined(change, change.files)
    assert walk.summary == (
        "Changes 3 files (1 code, 1 test, 1 doc): 10 lines added, 4 removed. "
        "In the code it adds `Cart`; changes `total`; removes `legacy_total`. "
        "Its title: “Carts keep their items”."
    )
    lines = {f.path: (g.purpose, f.line) for g in walk.groups for f in g.files}
    assert lines == {
        "shop/cart.py": ("Code", "adds `Cart`; changes `total`; removes `legacy_total` (modified: +7 -3)"),
        "tests/test_cart.py": ("Tests", "adds `test_add` (modified: +2 -0)"),
        "README.md": ("Docs", "modified: +1 -1"),
    }
    assert (walk.source, walk.model, walk.diagram) == ("diff", "", None)


def test_a_definition_moved_between_files_is_said_moved(tmp_path: Path) -> None:
    helper = "def helper(x):\n    return x * 2\n"
    change = make_change(tmp_path, {"a.py": (helper, ""), "b.py": ("", helper)}, title="")
    walk = outlined(change, change.files)
    assert "In the code it moves `helper`." in walk.summary and "Its title" not in walk.summary


async def test_a_weak_coordinator_asks_no_model_for_the_walkthrough_and_every_output_says_so(tmp_path: Path) -> None:
    title = "Carts keep [their](https://x.example) items"
    change = make_change(tmp_path, {"app/auth/cart.py": (OLD, NEW)}, title=title)
    draft = Raw({"summary": "Adds `Cart`.", "groups": [], "diagram": ""})
    settings = scripted_settings(weak_models=("scripted:coordinator",))
    review, resolver, events = await run_review(
        change, {"coordinator": [Raw({"decisions": []})]}, settings=settings, walkthroughs={"coordinator": [draft]}
    )
    assert isinstance(review, Review) and review.walkthrough is not None
    walk = review.walkthrough
    assert resolver.models["coordinator"].walkthrough_prompts == []  # type: ignore[attr-defined]
    assert walk.source == "diff" and walk.usage.input_tokens == 0
    assert "adds `Cart`; changes `total`; removes `legacy_total`" in walk.summary
    [event] = [e for e in events.events if e["type"] == "walkthrough"]
    assert (event["status"], event["source"]) == ("ok", "diff")

    markdown = render_review_markdown(review)
    assert f"_{FROM_THE_DIFF}_" in markdown and "| walkthrough | none: listed from the diff | ok |" in markdown
    forge = "\n".join(walkthrough_section(walk))
    assert FROM_THE_DIFF in forge and checked(forge) == forge  # the author's title cannot put a link in ours
    data = json.loads(review_to_json(review))
    assert schema_errors(data, REVIEW_JSON_SCHEMA) == [] and data["walkthrough"]["source"] == "diff"


async def test_a_dry_run_on_a_weak_coordinator_counts_no_walkthrough_tokens(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app/auth/cart.py": (OLD, NEW)})  # auth: not a trivial change
    settings = scripted_settings(weak_models=("scripted:coordinator",))
    plan, _, _ = await run_review(change, {}, settings=settings, dry_run=True)
    assert isinstance(plan, Plan)
    assert any("listed from the diff, no model tokens" in note for note in plan.estimate_notes)


def test_a_change_without_code_definitions_is_counted(tmp_path: Path) -> None:
    change = ChangeSet(files=parse_diff(unified_diff("notes.txt", "a\n", "b\nc\n")), meta=ChangeMeta())
    walk = outlined(change, change.files)
    assert walk.summary == "Changes 1 file (1 doc): 2 lines added, 1 removed."


def test_the_diagram_draws_the_calls_added_lines_make_to_added_definitions(tmp_path: Path) -> None:
    service_old = "def checkout(cart):\n    return cart.total()\n"
    service_new = (
        "def checkout(cart, log):\n"
        "    price = price_of(cart)\n"  # a plain call: the function the change adds
        "    audit_log.record(price)\n"  # a receiver named as the class: its method
        "    log.record(price)\n"  # another object's record: which one, a name cannot say
        "    return price\n"
    )
    prices = "def price_of(cart):\n    return sum(cart)\n"
    audit = (
        "class AuditLog:\n    def record(self, value):\n        self.flush()\n\n    def flush(self):\n        pass\n"
    )
    change = make_change(
        tmp_path,
        {
            "shop/service.py": (service_old, service_new),
            "shop/prices.py": ("", prices),
            "shop/audit.py": ("", audit),
        },
    )
    walk = outlined(change, change.files)
    assert walk.diagram == (
        "flowchart LR\n"
        '    n1["checkout"] --> n2["price_of"]\n'
        '    n1["checkout"] --> n3["AuditLog.record"]\n'
        '    n3["AuditLog.record"] --> n4["AuditLog.flush"]'
    )
    markdown = render_review_markdown(Review(verdict="approved", tier="lite", summary="", walkthrough=walk))
    assert "```mermaid\nflowchart LR\n" in markdown


def test_lines_removed_between_two_functions_change_neither() -> None:
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,4 @@\n def a():\n     return 1\n-X = 2\n def b():\n     return 2\n"
    [file] = parse_diff(patch)
    got = outline_file(file, b"def a():\n    return 1\ndef b():\n    return 2\n")
    assert (got.added, got.changed, got.removed) == ([], [], [])
