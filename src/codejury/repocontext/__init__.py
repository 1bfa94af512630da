"""Repository context: the repository chunked at definitions (tree-sitter), searched with BM25 (bm25s).

Tool-capable reviewers get ``search_code`` and ``find_references``; models that take the change
inline get a budgeted "related code" section (``related.py``). The index is cached per commit
under the user's cache directory and updated incrementally (``store.py``). With an embeddings
model (``[retrieval]``) chunks are embedded too (``embeddings.py``, ``vectors.py``) and search is
hybrid: BM25 and vectors fused, then reranked, every step kept (``retrieval.py``).
"""

from __future__ import annotations

from codejury.repocontext.context import RepoContext
from codejury.repocontext.index import IndexStats, RepoIndex, build_index
from codejury.repocontext.store import IndexCache, default_cache_dir

__all__ = ["IndexCache", "IndexStats", "RepoContext", "RepoIndex", "build_index", "default_cache_dir"]
