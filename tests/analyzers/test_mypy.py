"""mypy on the changed Python files with the repository's head tree: real runs on small changes, only the
run-time error codes on added lines, nothing written into the tree, the repository's config not read, a skip
line when missing, a blocking error or crash that never fails the review."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerFailed, AnalyzerSkipped, builtin_analyzers, chosen, collect_evidence
from codejury.analyzers.base import find_program
from codejury.analyzers.domains import domain_for
from codejury.analyzers.mypy import MypyAnalyzer
from codejury.judge.grounding import is_self_evident
from tests.analyzers.helpers import hits, make_change

needs_mypy = pytest.mark.skipif(find_program("mypy") is None, reason="mypy is not installed")

MODELS = """\
class Order:
    def __init__(self, total: int) -> None:
        self.total = total

    def price(self, rate: float) -> float:
        return self.total * rate


def find(orders: list[Order], total: int) -> Order | None:
    for order in orders:
        if order.total == total:
            return order
    return None
"""
SERVICE = """\
from shop.models import Order, find


def old(orders: list[Order]) -> int:
    return orders[0].totl
"""
NEW_SERVICE = (
    SERVICE
    + """

def bill(orders: list[Order]) -> str:
    first = find(orders, 3)
    label: str = "total"  # an annotation mismatch below is not a run-time error: left out
    label = 3
    print(first.total, orders[0].cost, undefined_helper(label))
    orders[0].price(1.0, 2.0)
    return orders[0].price(1.0)
"""
)


@needs_mypy
async def test_mypy_reports_run_time_type_errors_on_added_lines_reading_the_repository(tmp_path: Path) -> None:
    change = make_change(
        tmp_path,
        {
            "shop/__init__.py": ("", ""),
            "shop/models.py": (MODELS, MODELS),  # unchanged: read to type the call, never reported on
            "shop/service.py": (SERVICE, NEW_SERVICE),
        },
    )
    evidence = await MypyAnalyzer().analyze(change)
    assert hits(evidence) == {
        ("union-attr", "shop/service.py", 12),  # first may be None
        ("attr-defined", "shop/service.py", 12),  # Order has no cost, read from shop/models.py
        ("name-defined", "shop/service.py", 12),
        ("call-arg", "shop/service.py", 13),
        ("return-value", "shop/service.py", 14),
    }  # the old line 5 (`totl`) is not on an added line; `label = 3` is an [assignment]: left out
    by_rule = {e.rule: e for e in evidence}
    assert by_rule["attr-defined"].message == '"Order" has no attribute "cost"'
    assert all(e.severity == "warning" and e.analyzer == "mypy" for e in evidence)
    assert {domain_for(e) for e in evidence} == {"code_quality"}
    assert sorted(p.name for p in change.root.rglob("*") if p.is_file()) == [  # type: ignore[union-attr]
        "__init__.py",
        "models.py",
        "service.py",
    ]  # no .mypy_cache left in the tree


@needs_mypy
async def test_packages_without_init_files_and_a_src_layout_are_read_by_their_import_names(tmp_path: Path) -> None:
    pricing = "def cents(total: int) -> int:\n    return total * 100\n"
    change = make_change(
        tmp_path,
        {
            "shop/pricing.py": (pricing, pricing + "\n\ndef euros(total: int) -> float:\n    return total / 1\n"),
            "tests/test_pricing.py": ("", 'from shop.pricing import cents\n\nassert cents("3") == 300\n'),
            "src/billing/__init__.py": ("", ""),
            "src/billing/tax.py": ("", "def rate(country: str) -> float:\n    return 0.2\n"),
            "src/billing/invoice.py": ("", "from billing.tax import rate\n\nRATE = rate(33)\n"),
        },
    )
    # shop/pricing.py is both a file of the change and imported as shop.pricing: one module, not a blocking error
    evidence = await MypyAnalyzer().analyze(change)
    assert hits(evidence) == {("arg-type", "tests/test_pricing.py", 3), ("arg-type", "src/billing/invoice.py", 3)}


@needs_mypy
async def test_an_undefined_name_is_not_reported_where_a_star_import_may_define_it(tmp_path: Path) -> None:
    # numpy is not read (installed packages are not), so mypy cannot know that `array` comes from it
    starred = "from numpy import *\n\nvalues = array([1, 2])\n"
    change = make_change(tmp_path, {"calc.py": ("", starred), "other.py": ("", "values = array([1, 2])\n")})
    evidence = await MypyAnalyzer().analyze(change)
    assert hits(evidence) == {("name-defined", "other.py", 1)}


@needs_mypy
async def test_the_repository_mypy_config_and_its_plugins_are_not_read(tmp_path: Path) -> None:
    config = '[tool.mypy]\nplugins = ["evil_plugin"]\ndisable_error_code = ["name-defined"]\n'
    change = make_change(
        tmp_path,
        {
            "pyproject.toml": ("", config),
            "mypy.ini": ("", "[mypy]\nplugins = evil_plugin\n"),
            "app.py": ("", "x = y\n"),
        },
    )
    evidence = await MypyAnalyzer().analyze(change)
    assert hits(evidence) == {("name-defined", "app.py", 1)}


@needs_mypy
async def test_a_file_that_does_not_parse_is_one_failure_line_and_the_review_goes_on(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"app.py": ("", "def f(:\n"), "ok.py": ("", "x = y\n")})
    with pytest.raises(AnalyzerFailed, match="mypy stopped before checking the change: app.py:1:"):
        await MypyAnalyzer().analyze(change)
    lines: list[str] = []
    report = await collect_evidence(change, {"mypy": MypyAnalyzer()}, warn=lines.append)
    assert report.evidence == [] and lines == report.failed and lines[0].startswith("analyzer mypy failed")


async def test_a_missing_mypy_is_a_skip_line_only_when_python_changed(tmp_path: Path) -> None:
    missing = MypyAnalyzer(binary=tmp_path / "nope")
    assert await missing.analyze(make_change(tmp_path, {"main.go": ("", "package main\n")})) == []
    with pytest.raises(AnalyzerSkipped, match=r"mypy is not installed \(pip install mypy\)"):
        await missing.analyze(make_change(tmp_path, {"app.py": ("", "x = 1\n")}))
    with pytest.raises(AnalyzerSkipped, match="no head-side tree"):
        await missing.analyze(make_change(tmp_path, {"app.py": ("", "x = 1\n")}, with_root=False))


async def test_a_hanging_mypy_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    change = make_change(tmp_path, {"app.py": ("", "x = 1\n")})
    with pytest.raises(AnalyzerFailed, match="mypy ran past its 0.5 s limit"):
        await MypyAnalyzer(binary=hang, timeout_s=0.5).analyze(change)


async def test_output_that_is_not_mypy_json_fails_the_analyzer_not_the_review(tmp_path: Path) -> None:
    liar = tmp_path / "liar"
    liar.write_text("#!/bin/sh\necho 'app.py:1: error: oops'\nexit 1\n")
    liar.chmod(0o755)
    change = make_change(tmp_path, {"app.py": ("", "x = 1\n")})
    with pytest.raises(AnalyzerFailed, match="mypy printed a line that is not JSON"):
        await MypyAnalyzer(binary=liar).analyze(change)


def test_mypy_is_built_in_off_by_default_and_only_an_undefined_name_is_self_evident() -> None:
    registered = builtin_analyzers()
    assert isinstance(registered["mypy"], MypyAnalyzer)
    assert "mypy" not in chosen(registered, enable=(), disable=())  # fewer than half its hits were real
    assert "mypy" in chosen(registered, enable=("mypy",), disable=())
    assert is_self_evident("mypy:name-defined")
    assert not is_self_evident("mypy:arg-type") and not is_self_evident("mypy:union-attr")


@needs_mypy
async def test_a_review_runs_mypy_only_when_enabled_and_publishes_an_undefined_name_without_a_weak_model_check(
    tmp_path: Path,
) -> None:
    from codejury.analyzers import builtin_analyzers as registered
    from codejury.findings import Review
    from codejury.judge.grounding import CONFIRM_TASK
    from codejury.testing.scripted import Final, Raw
    from tests.engine_helpers import make_change as review_change
    from tests.engine_helpers import run_review, scripted_settings

    base = "def total(n: int) -> int:\n    return n\n"
    head = base + "\n\ndef report() -> int:\n    return totl(3)\n"
    change = review_change(tmp_path, {"billing.py": (base, head)})
    others = tuple(name for name in registered() if name != "mypy")  # ruff would flag the name too
    scripts = {"generalist": [Final([])], "coordinator": [Raw({"decisions": []})]}

    off = scripted_settings(analyzers=True, disable_analyzers=others, weak_models=("scripted:*",))
    result, _, events = await run_review(change, scripts, settings=off)
    assert isinstance(result, Review) and result.findings == []
    assert [e for e in events.events if e["type"] == "evidence"] == []  # mypy is off by default: nothing ran

    on = scripted_settings(
        analyzers=True, enable_analyzers=("mypy",), disable_analyzers=others, weak_models=("scripted:*",)
    )
    result, resolver, events = await run_review(change, scripts, settings=on)
    assert isinstance(result, Review)
    [finding] = result.findings
    assert (finding.path, finding.start_line, finding.evidence) == ("billing.py", 6, ["mypy:name-defined"])
    assert 'Name "totl" is not defined' in f"{finding.title} {finding.body}"
    assert [e["rules"] for e in events.events if e["type"] == "evidence"] == [["mypy:name-defined"]]
    prompts = [p for model in resolver.models.values() for p in model.prompts]
    assert not any(CONFIRM_TASK in p for p in prompts)  # published without asking the weak model
