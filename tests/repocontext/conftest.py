"""A small repository on disk (and as a git commit) for the index tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

FILES = {
    "shop/cart.py": """from shop.prices import unit_price


class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(unit_price(i) for i in self.items)
""",
    "shop/prices.py": '''TAX = 0.2


def unit_price(item):
    """Price of one item with tax."""
    return item.net * (1 + TAX)
''',
    "shop/checkout.py": """from shop.cart import Cart


def checkout(cart: Cart) -> float:
    amount = cart.total()
    return charge_card(amount)


def charge_card(amount):
    return round(amount, 2)
""",
    "web/api.ts": """export function parseHttpRequest(raw: string): string[] {
  return raw.split("\\n");
}
""",
    "README.md": "# shop\n",
}


def write_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    for path, text in (files or FILES).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo")


def git(root: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(root), "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)
    return done.stdout.decode().strip()
