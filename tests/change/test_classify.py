"""Risk tiers, security-sensitive paths and release files."""

from __future__ import annotations

import pytest

from codejury.change.classify import classify_tier, is_release_file, is_security_sensitive, tier_reason
from codejury.change.types import DiffLine, FileChange, Hunk


def change(path: str, added: int = 1, removed: int = 0, old_path: str | None = None) -> FileChange:
    lines = [DiffLine("-", "old", i, None) for i in range(1, removed + 1)]
    lines += [DiffLine("+", "new", None, i) for i in range(1, added + 1)]
    status = "renamed" if old_path else "modified"
    return FileChange(path, old_path, status, (Hunk(1, removed, 1, added, "", tuple(lines)),))


def test_trivial_up_to_ten_lines() -> None:
    assert classify_tier([change("src/a.py", 5, 5)]) == "trivial"
    assert tier_reason([change("src/a.py", 5, 5)]).startswith("trivial: 10 changed lines in 1 file")


def test_lite_up_to_a_hundred_lines() -> None:
    assert classify_tier([change("src/a.py", 6, 5)]) == "lite"
    assert classify_tier([change("src/a.py", 50), change("src/b.py", 50)]) == "lite"


def test_full_over_a_hundred_lines() -> None:
    files = [change("src/a.py", 101)]
    assert classify_tier(files) == "full"
    assert "more than 100 lines" in tier_reason(files)


def test_file_count_limit() -> None:
    assert classify_tier([change(f"src/m{i}.py", 0, 0) for i in range(20)]) == "trivial"
    many = [change(f"src/m{i}.py", 0, 0) for i in range(21)]
    assert classify_tier(many) == "full"
    assert "more than 20 files" in tier_reason(many)


def test_security_sensitive_path_forces_full() -> None:
    files = [change("src/auth/login.py", 1)]
    assert classify_tier(files) == "full"
    assert tier_reason(files) == "full: touches security-sensitive path src/auth/login.py"


def test_rename_from_a_sensitive_path_counts() -> None:
    assert classify_tier([change("src/misc/helpers.py", 0, 0, old_path="src/crypto/helpers.py")]) == "full"


@pytest.mark.parametrize(
    "path",
    [
        "src/auth/login.py", "app/session_store.go", "lib/tokens.rb", "pkg/JwtVerifier.java",
        "config/secrets.yaml", "api/permissions.py", "crypto/aes.c", "server/oauth2/callback.ts",
        "users/password_reset.py", "core/Authentication.kt", "deploy/tls/server.pem", ".env",
        ".env.production", "infra/iam/policy.json", "web/csrf.js", "keys/id_rsa.pub",
    ],
)  # fmt: skip
def test_security_sensitive_paths(path: str) -> None:
    assert is_security_sensitive(path)


@pytest.mark.parametrize(
    "path",
    ["src/tokenizer.py", "AUTHORS", "docs/author_guide.md", "src/sessionless_cache.py", "app/main.py",
     "lib/keyboard.js", "src/monkeypatch.py"],
)  # fmt: skip
def test_ordinary_paths_are_not_security_sensitive(path: str) -> None:
    assert not is_security_sensitive(path)


@pytest.mark.parametrize(
    "path",
    [
        "CHANGELOG.md", "docs/CHANGES.rst", "NEWS", "pyproject.toml", "package.json", "Cargo.toml", "go.mod",
        "src/mypkg/_version.py", "VERSION", "Dockerfile", "docker/Dockerfile.prod", "api.dockerfile",
        "docker-compose.yml", ".github/workflows/ci.yml", ".gitlab-ci.yml", "charts/app/Chart.yaml",
        "setup.py", "mygem.gemspec", "changelog.d/123.feature.md", "Jenkinsfile",
    ],
)  # fmt: skip
def test_release_files(path: str) -> None:
    assert is_release_file(path)


@pytest.mark.parametrize(
    "path",
    ["Makefile", "src/app.py", "README.md", "docs/release_process_notes_draft.py", "tests/test_news.py"],
)
def test_not_release_files(path: str) -> None:
    assert not is_release_file(path)
