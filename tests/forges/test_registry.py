"""Forges are registered through the ``codejury_register_forges`` hook and chosen by ``forge_opener``.

The built-in plugin registers GitHub and GitLab; a plugin's forge is chosen the same way; a URL no
forge claims is one ``InputError`` naming every shape expected.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from functools import partial

import pytest
from click.testing import CliRunner

from codejury.cli import cli
from codejury.errors import ConfigError, InputError
from codejury.forges import github, gitlab
from codejury.forges.github.adapter import GitHubPullRequest
from codejury.forges.gitlab.adapter import GitLabMergeRequest
from codejury.forges.registry import Env, ForgeKind, Opener, Warn, forge_opener
from codejury.hookspecs import hookimpl
from codejury.plugins import collect_registry, make_plugin_manager

ENV = {"CODEJURY_GITLAB_TOKEN": "glpat-registry-test", "GITHUB_TOKEN": "ghs_registry_test"}
CONFIGURED_ENV = {
    **ENV,
    "CODEJURY_GITHUB_URL": "https://github.example.com",
    "CODEJURY_GITLAB_URL": "http://127.0.0.1:8080",
}
"""Where the GitHub and GitLab of the URLs below are the configured ones."""


def builtin_forges() -> dict[str, object]:
    return dict(collect_registry(make_plugin_manager(), "codejury_register_forges"))


def opened(url: str | None, env: Env = ENV, kinds: dict[str, object] | None = None) -> partial[object]:
    opener = forge_opener(kinds if kinds is not None else builtin_forges(), url, env, lambda _: None)
    assert isinstance(opener, partial)
    return opener


def test_the_builtin_plugin_registers_github_and_gitlab() -> None:
    assert builtin_forges() == {"github": github.FORGE, "gitlab": gitlab.FORGE}


@pytest.mark.parametrize(
    ("url", "adapter"),
    [
        ("https://github.com/octo/app/pull/7", GitHubPullRequest),
        ("https://github.example.com/octo/app/pull/7/files", GitHubPullRequest),
        ("https://gitlab.com/acme/sub/widgets/-/merge_requests/3", GitLabMergeRequest),
        ("http://127.0.0.1:8080/acme/widgets/-/merge_requests/3/diffs", GitLabMergeRequest),
    ],
)
def test_a_url_goes_to_the_forge_whose_shape_it_has(url: str, adapter: type) -> None:
    configured = url.startswith(("https://github.example.com/", "http://127.0.0.1:8080/"))
    assert opened(url, CONFIGURED_ENV if configured else ENV).func is adapter


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo/app/issues/7",
        "https://github.com/octo/app",
        "https://gitlab.com/acme/widgets/-/issues/3",
        "https://gitlab.com/acme/widgets/-/merge_requests/three",
        "ftp://github.com/octo/app/pull/7",
        "github.com/octo/app/pull/7",
        "",
        "\n",
    ],
)
def test_a_url_no_forge_claims_names_every_shape(url: str) -> None:
    with pytest.raises(InputError) as refused:
        opened(url)
    message = str(refused.value)
    assert "\n" not in message.replace(repr(url), "")
    assert "a GitHub pull request URL (https://HOST/OWNER/REPO/pull/N)" in message
    assert "a GitLab merge request URL (https://HOST/GROUP/PROJECT/-/merge_requests/N)" in message


def test_a_pull_request_url_without_its_token_names_the_github_variables() -> None:
    with pytest.raises(InputError, match="CODEJURY_GITHUB_TOKEN and GITHUB_TOKEN are not set"):
        opened("https://github.com/octo/app/pull/7", env={"CODEJURY_GITLAB_TOKEN": "glpat-registry-test"})


def test_without_a_url_the_ci_run_decides_and_none_is_an_error() -> None:
    pipeline = {
        **ENV,
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_API_V4_URL": "https://gitlab.example.com/api/v4",
        "CI_MERGE_REQUEST_PROJECT_ID": "12",
        "CI_MERGE_REQUEST_IID": "3",
    }
    assert opened(None, env=pipeline).func is GitLabMergeRequest
    with pytest.raises(InputError, match=r"--publish needs --url URL, a GitHub .* or a GitLab merge request pipeline"):
        opened(None, env=ENV)


# -- a third-party forge --------------------------------------------------------------------------
class _Opened(InputError):
    """Raised by the plugin forge's opener, to show it was the one chosen."""


def _plugin_kind() -> ForgeKind:
    def from_url(url: str, env: Env, warn: Warn) -> Opener:
        def open_forge() -> GitHubPullRequest:
            raise _Opened(f"the gitea forge opened {url}")

        return open_forge

    def from_ci(env: Env, warn: Warn) -> Opener | None:
        return None

    return ForgeKind(
        url_noun="Gitea pull request",
        url_shape="https://HOST/OWNER/REPO/pulls/N",
        ci_run="a Gitea Actions run",
        claims_url=lambda url: "/pulls/" in url,
        from_url=from_url,
        from_ci=from_ci,
    )


@pytest.fixture
def gitea_plugin() -> Iterator[str]:
    module = types.ModuleType("codejury_gitea_test_plugin")

    @hookimpl
    def codejury_register_forges(register: object) -> None:
        assert callable(register)
        register("gitea", _plugin_kind())

    module.codejury_register_forges = codejury_register_forges  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module.__name__
    del sys.modules[module.__name__]


def test_a_plugin_forge_is_chosen_for_its_urls_and_named_in_errors(gitea_plugin: str) -> None:
    kinds = dict(collect_registry(make_plugin_manager([gitea_plugin]), "codejury_register_forges"))
    assert sorted(kinds) == ["gitea", "github", "gitlab"]
    opener = forge_opener(kinds, "https://gitea.example.com/o/r/pulls/4", ENV, lambda _: None)
    with pytest.raises(_Opened):
        opener()
    with pytest.raises(InputError, match=r"a Gitea pull request URL \(https://HOST/OWNER/REPO/pulls/N\)"):
        forge_opener(kinds, "https://example.com/nothing", ENV, lambda _: None)


def test_the_cli_reaches_a_plugin_forge(gitea_plugin: str) -> None:
    result = CliRunner().invoke(
        cli, ["review", "--plugin", gitea_plugin, "--url", "https://gitea.example.com/o/r/pulls/4"]
    )
    assert result.exit_code == 2
    assert "the gitea forge opened https://gitea.example.com/o/r/pulls/4" in result.stderr


def test_a_plugin_registering_something_else_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'broken' registered by a plugin is not a ForgeKind"):
        forge_opener({"broken": object()}, "https://github.com/octo/app/pull/7", ENV, lambda _: None)
