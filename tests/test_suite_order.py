"""The order ``make test`` hands tests to its pytest-xdist workers (``tests/conftest.py``): the embedded-model tests
first, one share per CPU, and the tests that wait on a clock first on the worker that has no embedded test; and
the order each worker first imports the test modules in."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest


class Item:
    """What the ordering reads of a collected test: its name and its marks."""

    def __init__(self, name: str, mark: str | None = None) -> None:
        self.name = name
        self.mark = mark

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == self.mark else None

    def __repr__(self) -> str:
        return self.name


def ordered(items: list[Any], *, workers: int, cpus: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    config: Any = SimpleNamespace(workerinput={"codejury_dist": "worksteal"})
    conftest.pytest_collection_modifyitems(config, items)
    return [item.name for item in items]


def suite() -> list[Item]:
    """In collection order: waiting and embedded tests among the others, as a real suite has them."""
    marks = {"w1": "waits", "e1": "embedded", "w2": "waits", "e2": "embedded", "e3": "embedded"}
    names = ["a", "w1", "b", "e1", "c", "d", "w2", "e2", "f", "g", "h", "e3", "i", "j", "k"]
    return [Item(name, marks.get(name)) for name in names]


def blocks(names: list[str], workers: int) -> list[list[str]]:
    """The blocks ``--dist worksteal`` first hands out: one contiguous share of the tests per worker."""
    return [names[n * len(names) // workers : (n + 1) * len(names) // workers] for n in range(workers)]


def test_three_workers_on_two_cpus_start_the_embedded_and_the_waiting_tests_each_on_a_worker_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ordered(suite(), workers=3, cpus=2, monkeypatch=monkeypatch)
    assert sorted(names) == sorted(item.name for item in suite())  # nothing lost, nothing run twice
    first, second, third = blocks(names, 3)
    assert first[:2] == ["e1", "e3"] and second[:1] == ["e2"]
    assert third[:2] == ["w1", "w2"]
    # The others keep their collection order around them.
    rest = [name for name in names if name[0] not in "ew"]
    assert rest == ["a", "b", "c", "d", "f", "g", "h", "i", "j", "k"]


def test_where_every_worker_has_embedded_tests_the_waiting_ones_follow_them_on_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ordered(suite(), workers=2, cpus=2, monkeypatch=monkeypatch)
    first, second = blocks(names, 2)
    assert first[:2] == ["e1", "e3"]
    assert second[:3] == ["e2", "w1", "w2"]


def test_without_xdist_the_collection_order_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ordered(suite(), workers=0, cpus=2, monkeypatch=monkeypatch)
    assert names == [item.name for item in suite()]


def test_each_worker_imports_every_test_module_starting_from_a_share_of_its_own() -> None:
    names = [f"tests.test_{n}" for n in "abcdef"]
    orders = [conftest._import_order(names, worker, 3) for worker in range(3)]
    assert [order[0] for order in orders] == ["tests.test_a", "tests.test_c", "tests.test_e"]
    assert all(sorted(order) == names for order in orders)  # each still imports all of them


def test_a_module_is_imported_under_pytests_name_for_it_or_left_to_collection(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    for folder in ("", "service", "loose"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for package in ("", "service"):
        (root / package / "__init__.py").write_text("")
    assert conftest._package_module(root / "service" / "test_queue.py", root) == "tests.service.test_queue"
    assert conftest._package_module(root / "test_cli.py", root) == "tests.test_cli"
    # A folder that is no package: pytest names its modules otherwise, so collection imports them itself.
    assert conftest._package_module(root / "loose" / "test_prompts.py", root) == ""
