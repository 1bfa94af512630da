"""The index cache: one saved index per commit, under the user's cache directory.

Layout (``repoindex/v1`` under ``$CODEJURY_CACHE_DIR`` or the user's cache directory)::

    commits/<commit>/      one commit's index: files and their blob ids, chunks, terms, BM25 arrays
    commits/tree-<id>/     the same for a checkout with no commit (a working tree), keyed by content
    vectors.sqlite3        chunk vectors per embeddings model, keyed by (model, text digest) (``vectors.py``)

A blob id is git's (``sha1("blob <size>\\0" + bytes)``), computed from the bytes read, so it is the
same for a git checkout, an exported head tree or a plain directory. A new commit starts from the
saved index that shares the most files with it, and only files whose blob id changed are parsed
again. A saved index is written into a temporary directory and renamed into place, so a
concurrent run or a crash never leaves half of one; the newest ``KEEP_COMMITS`` are kept. The
cache is an optimisation only: every error here reads as a miss and is counted, never raised.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codejury.models.weights import cache_root

CACHE_VERSION = 1
VECTOR_FILE = "vectors.sqlite3"
"""The chunk vectors of every embeddings model (``vectors.py``), beside the commits' indexes."""
KEEP_COMMITS = 8
"""Whole-commit indexes kept; older ones are removed when a new one is written."""
_MAX_CACHE_JSON = 64 * 1024 * 1024


def default_cache_dir() -> Path:
    """``$CODEJURY_CACHE_DIR/repoindex/v1``, else under the user's cache directory (platformdirs)."""
    return cache_root() / "repoindex" / f"v{CACHE_VERSION}"


def blob_id(data: bytes) -> str:
    """Git's object id of a blob with these bytes."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def _safe_key(key: str) -> bool:
    return 0 < len(key) <= 128 and all(c.isalnum() or c in "-_." for c in key) and not key.startswith(".")


class IndexCache:
    """Read and write the cache at ``root``; every failure reads as a miss and is counted in ``errors``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.errors = 0

    # ---- whole indexes per commit ------------------------------------------------------

    def commit_dir(self, commit: str) -> Path | None:
        """The directory of a commit's saved index, when there is a complete one."""
        if not _safe_key(commit):
            return None
        where = self.root / "commits" / commit
        return where if (where / "complete").is_file() else None

    @contextlib.contextmanager
    def writing_commit(self, commit: str) -> Iterator[Path | None]:
        """A fresh directory to save a commit's index into; it replaces the old one when the block ends.

        Yields None when the commit cannot be saved (a bad key, an unwritable cache).
        """
        commits = self.root / "commits"
        try:
            if not _safe_key(commit):
                raise OSError("not a usable commit key")
            commits.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=commits))
        except OSError:
            self.errors += 1
            yield None
            return
        try:
            yield staging
            (staging / "complete").write_bytes(b"")
            target = commits / commit
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            os.replace(staging, target)
            self._prune(commits)
        except (OSError, ValueError):
            self.errors += 1
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _prune(self, commits: Path) -> None:
        saved = sorted(
            (p for p in commits.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in saved[KEEP_COMMITS:]:
            shutil.rmtree(old, ignore_errors=True)

    # ---- files -------------------------------------------------------------------------

    def _read_json(self, path: Path) -> Any:
        try:
            with path.open("rb") as fh:
                data = fh.read(_MAX_CACHE_JSON + 1)
            if len(data) > _MAX_CACHE_JSON:
                return None
            return json.loads(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self.errors += 1
            return None

    def read_json(self, path: Path) -> Any:
        return self._read_json(path)

    def saved(self) -> list[Path]:
        """The complete saved indexes, newest first."""
        try:
            found = [p for p in (self.root / "commits").iterdir() if (p / "complete").is_file()]
            return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return []
