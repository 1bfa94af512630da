"""The eval's cache key: a case is reviewed again when a file it names changes, not only its fields."""

from __future__ import annotations

from pathlib import Path

from codejury.eval.dataset import EvalCase
from codejury.eval.runner import case_key


def test_a_replaced_diff_or_bundle_gets_a_new_key(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    case = EvalCase(id="c1", diff=str(diff))
    first = case_key(case)
    assert case_key(case) == first
    diff.write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 3\n")
    assert case_key(case) != first
    bundle = tmp_path / "shop.bundle"
    bundle.write_bytes(b"# v2 git bundle\n" + b"\0" * 64)
    bundled = EvalCase(id="c2", repo=str(bundle), base="main", head="feature")
    before = case_key(bundled)
    bundle.write_bytes(b"# v2 git bundle\n" + b"\1" * 64)
    assert case_key(bundled) != before


def test_a_changed_file_in_a_tree_case_gets_a_new_key(tmp_path: Path) -> None:
    (tmp_path / "head").mkdir()
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "app.py").write_text("x = 1\n")
    (tmp_path / "head" / "app.py").write_text("x = 2\n")
    case = EvalCase(id="t1", tree=str(tmp_path))
    first = case_key(case)
    (tmp_path / "head" / "app.py").write_text("x = 3\n")
    assert case_key(case) != first
    renamed = case_key(case)
    (tmp_path / "head" / "app.py").rename(tmp_path / "head" / "main.py")
    assert case_key(case) != renamed


def test_a_repository_url_counts_by_its_fields_only(tmp_path: Path) -> None:
    case = EvalCase(id="u1", repo="https://example.invalid/acme/shop.git", base="main", head="feature")
    assert case_key(case) == case_key(case.model_copy())
    assert case_key(case) != case_key(case.model_copy(update={"head": "other"}))


def test_a_replaced_test_report_gets_a_new_key(tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    report = tmp_path / "junit.xml"
    report.write_text('<testsuite><testcase classname="t" name="test_a"/></testsuite>')
    case = EvalCase(id="c1", diff=str(diff), tests=(str(report),))
    first = case_key(case)
    report.write_text('<testsuite><testcase classname="t" name="test_a"><failure/></testcase></testsuite>')
    assert case_key(case) != first
