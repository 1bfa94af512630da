"""Can a model run on this machine? Answered without building a client, loading weights or calling it.

``--dry-run`` lists every chosen model that cannot run and why (an unknown or disabled provider,
its API key variable unset, no ``base_url``, the embedded model's runtime or weights missing, a cloud's SDK
not installed or its region, project, endpoint or API version not set),
and the first-run notice only offers the embedded model when the ``local`` extra is installed.
Installed distributions are read from package metadata (``importlib.metadata``), never by
importing them: importing llama.cpp or the 22 weight packages would take seconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from codejury.models.cloud_setup import CLOUD_KINDS, cloud_problem
from codejury.models.weights import DEFAULT_WEIGHTS, NAMED_MODELS, default_models_dir

if TYPE_CHECKING:
    from codejury.models.providers import ProviderSpec

EMBEDDED_NAMES = frozenset(NAMED_MODELS)
"""Names of the bundled models after ``local:`` (``models.local`` accepts these, or a .gguf path)."""
DEFAULT_RUNTIME = ("xllamacpp",)
"""The embedded runtime when codejury's own metadata cannot be read (a source checkout on sys.path)."""
INSTALL_LOCAL = "pip install 'codejury[local]'"

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_LOCAL_EXTRA = re.compile(r"""extra\s*==\s*["']local["']""")


def local_extra() -> tuple[list[str], list[str]]:
    """The ``local`` extra's distributions: (runtime, weight parts), from codejury's metadata."""
    try:
        requirements = metadata.requires("codejury") or []
    except metadata.PackageNotFoundError:
        return list(DEFAULT_RUNTIME), list(DEFAULT_WEIGHTS.dist_names)
    names = [m.group(1) for r in requirements if _LOCAL_EXTRA.search(r) and (m := _REQUIREMENT_NAME.match(r))]
    parts = {_normalise(n) for n in DEFAULT_WEIGHTS.dist_names}
    runtime = [n for n in names if _normalise(n) not in parts] or list(DEFAULT_RUNTIME)
    return runtime, [n for n in names if _normalise(n) in parts]


def embedded_model_missing(name: str = "default") -> str | None:
    """Why ``local:NAME`` cannot run here (runtime not installed, weights missing), or None."""
    runtime, parts = local_extra()
    absent = [n for n in runtime if not _installed(n)]
    if absent:
        return f"the embedded model's runtime is not installed ({', '.join(absent)}): {INSTALL_LOCAL}"
    named = NAMED_MODELS.get(name.strip().lower())
    if named is None:
        path = Path(name).expanduser()
        return None if path.is_file() else f"local model file {name!r} does not exist"
    model_name, weights = named
    if (default_models_dir() / weights.file_name).is_file():
        return None  # assembled and cached already: the part packages are no longer read
    whose = "the embedded model's weights"  # parts: the local extra's, as codejury's metadata lists them
    if weights is not DEFAULT_WEIGHTS:
        whose, parts = f"the weights of {model_name}", list(weights.dist_names)
    missing = [n for n in parts if not _installed(n)]
    if missing:
        count = f"{len(missing)} of {len(parts)} parts missing"
        return f"{whose} are not installed ({count}): {weights.install}"
    return None


def model_problem(spec: str, providers: Mapping[str, ProviderSpec], env: Mapping[str, str]) -> str | None:
    """Why the model ``provider:model`` cannot run with these providers and this environment, or None."""
    provider_name, sep, model_name = spec.strip().partition(":")
    provider_name = provider_name.strip().lower()
    if not sep or not provider_name or not model_name.strip():
        return f"invalid model {spec!r}: expected provider:model"
    provider = providers.get(provider_name)
    if provider is None:
        known = ", ".join(sorted(providers)) or "none"
        return f"unknown provider {provider_name!r} (known: {known})"
    if not provider.enabled:
        return f"provider {provider_name!r} is disabled"
    if provider.kind == "local":
        return embedded_model_missing(model_name)
    if provider.kind in CLOUD_KINDS:
        return cloud_problem(provider, env)
    if provider.api_key_env is not None and not env.get(provider.api_key_env, "").strip():
        return f"{provider.api_key_env} is not set"
    if provider.kind == "openai-compatible" and not provider.base_url:
        return f"provider {provider_name!r} has no base_url"
    return None


def _installed(dist_name: str) -> bool:
    try:
        metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
