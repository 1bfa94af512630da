"""Changes for tests and benchmarks: a change built from {path: (old, new)} with its head side on disk, and the
planted security problems the engine tests and the chaos benchmark review."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from codejury.change.diffparse import parse_diff
from codejury.change.types import BaseReader, ChangeMeta, ChangeSet

AUTH_OLD = textwrap.dedent(
    """\
    import hashlib


    def check_password(stored: str, given: str) -> bool:
        return stored == hashlib.sha256(given.encode()).hexdigest()
    """
)
AUTH_NEW = textwrap.dedent(
    """\
    import hashlib
    import sqlite3


    def check_password(stored: str, given: str) -> bool:
        return stored == hashlib.sha256(given.encode()).hexdigest()


    def find_user(db: sqlite3.Connection, name: str) -> tuple[str, str] | None:
        query = "SELECT name, hash FROM users WHERE name = '%s'" % name
        return db.execute(query).fetchone()


    API_KEY = "sk-live-0123456789abcdef"
    """
)


def unified_diff(path: str, old: str, new: str) -> str:
    """A git-style unified diff of one file."""
    import difflib

    body = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )
    return f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n{body}"


class DictBase(BaseReader):
    """Base side of a change held in a dict."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = dict(files)

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def list_dir(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        return sorted(p for p in self.files if p.startswith(prefix) and "/" not in p[len(prefix) :])


def make_change(
    tmp_path: Path,
    files: Mapping[str, tuple[str, str]],
    *,
    title: str = "Add user lookup",
    description: str = "",
    comments: Sequence[str] = (),
    base_files: Mapping[str, str] | None = None,
) -> ChangeSet:
    """A change whose head side lies in ``tmp_path/repo``: {path: (old, new)}."""
    root = tmp_path / "repo"
    diff = ""
    for path, (old, new) in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(new, encoding="utf-8")
        diff += unified_diff(path, old, new)
    base = {p: old for p, (old, _) in files.items()}
    base.update(base_files or {})
    return ChangeSet(
        files=parse_diff(diff),
        meta=ChangeMeta(title=title, description=description, comments=tuple(comments)),
        root=root,
        base=DictBase(base),
    )
