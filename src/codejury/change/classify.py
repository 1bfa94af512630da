"""Path classification and the risk tier, decided before any model runs.

Security-sensitive paths are matched on words, not substrings: each path segment is split
on punctuation and camelCase, so ``src/auth/login.py`` and ``JwtVerifier.java`` match while
``tokenizer.py`` and ``AUTHORS`` do not.

Release files are what the release reviewer reads: changelogs and release notes, version
files, packaging metadata (including ``go.mod``: its module path and go directive ship),
container files, CI/CD configuration and Helm ``Chart.yaml``. A ``Makefile`` is not a
release file: it changes for everyday build reasons, and running the release reviewer on
each such change would be noise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codejury.change.types import FileChange
from codejury.findings import Tier

TRIVIAL_MAX_LINES = 10
LITE_MAX_LINES = 100
MAX_FILES = 20

SECURITY_WORDS = frozenset(
    {
        "auth", "authn", "authz", "oauth", "oauth2", "oidc", "openid", "saml", "sso", "ldap", "kerberos",
        "login", "logout", "signin", "session", "token", "jwt", "jwk", "jwks", "secret", "password",
        "passwd", "credential", "permission", "acl", "rbac", "abac", "iam", "crypto", "cryptography",
        "encryption", "encrypt", "decrypt", "cipher", "hmac", "security", "csrf", "xss", "cors",
        "sanitize", "sanitizer", "mfa", "totp", "otp", "2fa", "tls", "ssl", "cert", "certificate",
        "keys", "keystore", "keychain", "apikey", "privilege", "sudoers", "htpasswd",
    }
)  # fmt: skip
SECURITY_PREFIXES = ("authenticat", "authoriz", "crypt", "encrypt", "decrypt", "passw", "credential")
SECURITY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".crt")

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*")

RELEASE_NAMES = frozenset(
    {
        "version", "version.txt", "version.py", "_version.py", "__version__.py", "version.rb", "version.go",
        "pyproject.toml", "setup.py", "setup.cfg", "manifest.in", "package.json", "cargo.toml", "go.mod",
        "pom.xml", "build.gradle", "build.gradle.kts", "composer.json", "mix.exs", "pubspec.yaml",
        "chart.yaml", "containerfile", ".dockerignore", "compose.yaml", "compose.yml",
        ".gitlab-ci.yml", "jenkinsfile", ".travis.yml", "azure-pipelines.yml", "bitbucket-pipelines.yml",
        ".drone.yml", "appveyor.yml", "cloudbuild.yaml", ".goreleaser.yml", ".goreleaser.yaml",
        "release-please-config.json", ".release-please-manifest.json",
    }
)  # fmt: skip
RELEASE_NOTE_STEMS = frozenset(
    {"changelog", "changes", "history", "news", "release", "releases", "release_notes", "release-notes"}
)
RELEASE_NOTE_EXTS = frozenset({"", "md", "rst", "txt", "adoc", "markdown"})
RELEASE_DIRS = (".github/workflows/", ".github/actions/", ".circleci/", ".gitlab/ci/", ".buildkite/",
                "changelog.d/", "newsfragments/", ".changeset/")  # fmt: skip
RELEASE_SUFFIXES = (".gemspec", ".podspec", ".nuspec", ".dockerfile")
RELEASE_PREFIXES = ("dockerfile", "docker-compose", ".releaserc")


def path_words(path: str) -> list[str]:
    """The lower-case words of a path: segments split on punctuation and camelCase."""
    return [word.lower() for word in _WORDS.findall(path)]


def _is_security_word(word: str) -> bool:
    if word in SECURITY_WORDS or (word.endswith("s") and word[:-1] in SECURITY_WORDS):
        return True
    return word.startswith(SECURITY_PREFIXES)


def is_security_sensitive(path: str) -> bool:
    """Whether a change to ``path`` touches authentication, secrets, crypto or permissions."""
    base = path.rsplit("/", 1)[-1].lower()
    if base == ".env" or base.startswith(".env.") or base.endswith(SECURITY_SUFFIXES):
        return True
    if base.startswith("id_rsa") or base.startswith("id_ed25519"):
        return True
    return any(_is_security_word(word) for word in path_words(path))


def is_release_file(path: str) -> bool:
    """Whether ``path`` is a changelog, version file, packaging metadata, container or CI/CD file."""
    lowered = path.lower()
    base = lowered.rsplit("/", 1)[-1]
    if base in RELEASE_NAMES or base.endswith(RELEASE_SUFFIXES) or base.startswith(RELEASE_PREFIXES):
        return True
    stem, _, ext = base.partition(".")
    if stem in RELEASE_NOTE_STEMS and ext in RELEASE_NOTE_EXTS:
        return True
    return any(lowered.startswith(d) or f"/{d}" in lowered for d in RELEASE_DIRS)


def _sensitive_path(files: Sequence[FileChange]) -> str | None:
    for fc in files:
        for path in (fc.path, fc.old_path):
            if path and is_security_sensitive(path):
                return path
    return None


def _decide(files: Sequence[FileChange]) -> tuple[Tier, str]:
    lines = sum(fc.changed_lines for fc in files)
    count = len(files)
    size = f"{lines} changed line{'s' * (lines != 1)} in {count} file{'s' * (count != 1)}"
    sensitive = _sensitive_path(files)
    if sensitive is not None:
        return "full", f"full: touches security-sensitive path {sensitive}"
    if count > MAX_FILES:
        return "full", f"full: {size} (more than {MAX_FILES} files)"
    if lines > LITE_MAX_LINES:
        return "full", f"full: {size} (more than {LITE_MAX_LINES} lines)"
    if lines > TRIVIAL_MAX_LINES:
        return "lite", f"lite: {size} (at most {LITE_MAX_LINES} lines, {MAX_FILES} files)"
    return "trivial", f"trivial: {size} (at most {TRIVIAL_MAX_LINES} lines, {MAX_FILES} files)"


def classify_tier(files: Sequence[FileChange]) -> Tier:
    """The risk tier of the (already filtered) files: trivial, lite or full."""
    return _decide(files)[0]


def tier_reason(files: Sequence[FileChange]) -> str:
    """One line saying which tier the files get and why."""
    return _decide(files)[1]
