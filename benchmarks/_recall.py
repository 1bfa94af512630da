"""Recall of retrieval on reviewed pull requests: did a search reach the code a reviewer commented on?

A case is one pull request: the head side of its changed files (the corpus, indexed and embedded
as a review indexes a repository), the hunks of its change and the places reviewers commented on,
each with the level of context the comment needed (``Diff Level``, ``File Level``, ``Repo Level``).
Only the place (path, lines) and the level of an expected comment are read here, never its text.

Every hunk with added lines is one query (its added lines, cut to 500 characters as ``search_code``
cuts a query). A comment's place is reached by a method when one of the case's queries returns, among
its first ``k`` chunks, a chunk of that path whose lines overlap the commented lines (one line of
slack). Two question sets:

- ``other hunks``: the queries of the hunks that do not touch the commented lines (a reviewer reading
  one part of the change who needs another); a comment with no such hunk is not counted there;
- ``own hunk``: the queries of the hunks that do (the changed code found again from its own lines).

Methods: BM25 alone, vectors alone, hybrid (reciprocal rank fusion of the two) and hybrid + rerank
when a rerank model is given: the lists ``Retriever.search`` keeps for every search.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codejury.change.diffparse import parse_diff
from codejury.repocontext.index import RepoIndex
from codejury.repocontext.retrieval import Retriever

LEVELS = ("Diff Level", "File Level", "Repo Level")
METHODS = ("BM25", "vectors", "hybrid", "hybrid+rerank")
QUESTIONS = ("other hunks", "own hunk")
QUERY_CHARS = 500
SLACK = 1
NEAR = 3
"""A hunk within this many lines of a comment touches it (its query is the comment's ``own hunk``)."""


@dataclass(frozen=True)
class Target:
    path: str
    start: int
    end: int
    level: str


@dataclass(frozen=True)
class Query:
    path: str
    start: int
    end: int
    text: str


@dataclass
class Case:
    name: str
    corpus: Path
    queries: list[Query]
    targets: list[Target]


@dataclass
class Tally:
    """Reached / counted per (question set, level, method)."""

    counts: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    unindexed: dict[str, int] = field(default_factory=dict)
    """Comments per level on a file the index holds no chunk of (no method can reach them)."""

    def add(self, question: str, level: str, method: str, reached: bool) -> None:
        cell = self.counts.setdefault((question, level, method), [0, 0])
        cell[0] += int(reached)
        cell[1] += 1

    def cell(self, question: str, level: str, method: str) -> tuple[int, int]:
        if level == "all":
            pairs = [v for (q, _, m), v in self.counts.items() if q == question and m == method]
            return sum(p[0] for p in pairs), sum(p[1] for p in pairs)
        reached, counted = self.counts.get((question, level, method), [0, 0])
        return reached, counted


def queries_of(diff: str) -> list[Query]:
    """One query per hunk with added lines: its added lines, cut to ``QUERY_CHARS``."""
    out: list[Query] = []
    for fc in parse_diff(diff):
        for hunk in fc.hunks:
            added = [line.text.strip() for line in hunk.lines if line.kind == "+" and line.text.strip()]
            if added:
                end = hunk.new_start + max(hunk.new_len, 1) - 1
                out.append(Query(fc.path, hunk.new_start, end, "\n".join(added)[:QUERY_CHARS]))
    return out


def touches(query: Query, target: Target) -> bool:
    return query.path == target.path and query.start - NEAR <= target.end and target.start <= query.end + NEAR


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def load_cases(dataset: Path, work: Path, names: Sequence[str] = ()) -> Iterable[Case]:
    """The cases of ``dataset`` (``cases.jsonl`` and its bundles): each cloned under ``work`` and its corpus (the
    head side of the changed files) copied beside it; ``names``: only these cases."""
    for line in (dataset / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        if names and raw["id"] not in names:
            continue
        checkout, corpus = work / "checkouts" / raw["id"], work / "corpus" / raw["id"]
        if not checkout.exists():
            _git("clone", "-q", "-b", raw["head"], str(dataset / raw["repo"]), str(checkout))
            _git("-C", str(checkout), "branch", "-q", raw["base"], f"origin/{raw['base']}")
        diff = _git("-C", str(checkout), "diff", raw["base"], raw["head"])
        changed = _git("-C", str(checkout), "diff", "--name-only", "--diff-filter=d", raw["base"], raw["head"]).split()
        if not corpus.exists():
            for path in changed:
                source = checkout / path
                if source.is_file() and not source.is_symlink():
                    (corpus / path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, corpus / path)
            corpus.mkdir(parents=True, exist_ok=True)
        targets = [Target(e["path"], int(e["start_line"]), int(e["end_line"]), e["context"]) for e in raw["expected"]]
        yield Case(raw["id"], corpus, queries_of(diff), targets)


def _reached(index: RepoIndex, hits: list[int], target: Target) -> bool:
    for cid in hits:
        chunk = index.chunks[cid]
        if (
            index.path_of(cid) == target.path
            and chunk.start <= target.end + SLACK
            and target.start - SLACK <= chunk.end
        ):
            return True
    return False


def score(case: Case, open_retriever: Callable[[], Retriever], k: int, tally: Tally, reranks: bool) -> None:
    """Add ``case``'s comments to ``tally``: for each question set, level and method, whether a query reached it.

    ``open_retriever`` gives a fresh retriever for every query, so no answer comes from another query's
    semantic cache."""
    found: dict[Query, dict[str, list[int]]] = {}
    index: RepoIndex | None = None
    for query in case.queries:
        retriever = open_retriever()
        index = retriever.index
        answer = retriever.search(query.text, k)
        lists = {
            "BM25": answer.bm25,
            "vectors": answer.vector or [],
            "hybrid": answer.fused,
            "hybrid+rerank": answer.reranked or [],
        }
        found[query] = {m: [cid for cid, _ in hits[:k]] for m, hits in lists.items()}
    methods = METHODS if reranks else METHODS[:3]
    if index is None:
        return
    for target in case.targets:
        if not index.chunks_of(target.path):
            tally.unindexed[target.level] = tally.unindexed.get(target.level, 0) + 1
        own = [q for q in case.queries if touches(q, target)]
        other = [q for q in case.queries if not touches(q, target)]
        for question, asked in (("own hunk", own), ("other hunks", other)):
            if not asked:
                continue
            for method in methods:
                reached = any(_reached(index, found[q][method], target) for q in asked)
                tally.add(question, target.level, method, reached)


def table(tally: Tally, question: str, k: int, reranks: bool) -> list[str]:
    """The recall table of one question set: a row per context level, a column per method."""
    methods = METHODS if reranks else METHODS[:3]
    head = f"{'context':<12} {'comments':>8}  " + "  ".join(f"{m:>13}" for m in methods)
    out = [f"recall@{k}, queries from the {question}:", head]
    for level in (*LEVELS, "all"):
        counted = tally.cell(question, level, methods[0])[1]
        cells = []
        for method in methods:
            reached, n = tally.cell(question, level, method)
            cells.append(f"{reached / n:>6.2f} ({reached:>3})" if n else "-")
        out.append(f"{level:<12} {counted:>8}  " + "  ".join(f"{c:>13}" for c in cells))
    if not reranks:
        out.append("hybrid+rerank: off (no rerank model given)")
    if tally.unindexed:
        by_level = ", ".join(f"{level} {n}" for level, n in sorted(tally.unindexed.items()))
        out.append(f"comments on a file with no chunk in the index (no method reaches them): {by_level}")
    return out
