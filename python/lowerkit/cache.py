"""Compile cache: a compiled artifact found again by everything that went into it.

The key is a hash of the imported program's bytecode (with its constants: two programs that
differ only in a weight never share an entry), the call signature, the pipeline (each stage's
kind, name and pass text or Python source), the target, the extra flags, and the versions of
torch, torch-mlir, IREE and lowerkit. A target compiled for ``host`` (the default ``cpu``) adds
the CPU iree-compile resolves it to, name and features: a cache folder shared between machines
(a home on NFS, a CI cache) never hands out code built for another CPU. Entries are written
atomically (temporary file, then rename), carry a checksum (a corrupted entry is dropped and
recompiled), and a per-key file lock makes concurrent processes compile a program once and
share it.

The cache is on by default in ``$LOWERKIT_CACHE_DIR`` (else ``$XDG_CACHE_HOME/lowerkit`` or
``~/.cache/lowerkit``); ``LOWERKIT_CACHE_DIR=off`` or ``lowerkit.compile(..., cache=False)``
turns it off.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import inspect
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
import importlib.util
from typing import Any, Callable, Iterator, Sequence

from ._version import __version__
from .cache_folder import ENV, default_directory  # noqa: F401 - the cache's folder, here too
from .ingress.signature import CallSignature
from .ir import to_bytecode
from .registry import custom_ops
from .runtime.artifact import Artifact
from .stages.pipeline import Pipeline
from . import target as targets  # by module: which CPU "host" is, looked up at each key
from . import tuning
from .target import Target

KEY_FORMAT = 3                   # bump when the key's recipe changes
_MAGIC = b"lowerkit-cache-entry 1\n"


@functools.lru_cache(maxsize=1)
def _lowerkit_sources_digest() -> str:
    """A digest of lowerkit's own sources (the package, the shipped pipelines and the IRDL
    dialects, found by path without importing them): a changed pass, pipeline or dialect must
    never be answered with code that an older version compiled."""
    package = Path(__file__).parent
    pipelines = importlib.util.find_spec("lowerkit.pipelines").submodule_search_locations[0]
    roots = (package, Path(pipelines), package / "dialects" / "definitions")
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted({*root.rglob("*.py"), *root.glob("*.mlir"), *root.rglob("*.cc")}):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def toolchain_versions() -> dict[str, str]:
    """Versions of everything whose change may change the compiled code."""
    from importlib import metadata

    from .iree import cpu_kernels

    out = {"lowerkit": __version__, "lowerkit-sources": _lowerkit_sources_digest(),
           "cpu-kernels": cpu_kernels.fingerprint()}
    for dist in ("torch", "torch-mlir", "iree-base-compiler"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def pipeline_fingerprint(pipeline: "Pipeline") -> list:
    """Each leaf stage as its kind, name, build and contents (pass text, Python source)."""
    stages = []
    for stage in pipeline.leaf_stages():
        fields = {k: _describe(v) for k, v in sorted(vars(stage).items()) if not k.startswith("_")}
        stages.append([type(stage).__module__, type(stage).__qualname__, fields])
    return stages


def _describe(value: Any) -> Any:
    """A stable text for a stage's field: source code for functions, values for the rest."""
    if isinstance(value, os.PathLike) or (
            isinstance(value, str) and "\n" not in value and value.endswith(".mlir")):
        return _describe_file(Path(value))  # a PDL or transform script given by path
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "value") and type(value).__module__.startswith("lowerkit"):
        return str(value.value)  # enums such as Build
    if callable(value):
        target = getattr(value, "__func__", value)
        try:  # the whole module: helpers the function calls count too
            module = inspect.getmodule(target)
            return inspect.getsource(module) if module is not None else inspect.getsource(target)
        except (OSError, TypeError):
            return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _describe(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return repr(value)


def _describe_file(path: Path) -> dict:
    """A stage that reads a file when it runs is keyed by what the file holds, not its name:
    an edited script must never be answered with code compiled from the old one."""
    try:
        return {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    except OSError as e:
        return {"path": str(path), "unreadable": e.strerror or type(e).__name__}


def _custom_op_lowerings() -> dict:
    """Registered custom-op lowerings are looked up while lowering, by op name: each one's
    source is part of the key, so registering or changing one never reuses older code."""
    return {name: _describe(custom_ops.get(name)) for name in custom_ops.names()}


def recipe_key(pipeline: "Pipeline", target: "Target", flags: Sequence[str] = ()) -> str:
    """The hex digest of how a program is compiled: pipeline, target, flags, toolchain."""
    host_flags = targets.host_dependent_cpu_flags([*target.flags, *flags])
    recipe = {
        "key_format": KEY_FORMAT,
        "pipeline": pipeline_fingerprint(pipeline),
        "custom_op_lowerings": _custom_op_lowerings(),
        "target": target.to_json(),
        "flags": list(flags),
        "host_cpu": targets.resolve_host_cpu(host_flags) if host_flags else None,
        "versions": toolchain_versions(),
        # lowerkit tune's records that reach iree-compile without a flag (a program's flag
        # set, dispatch configs): a changed record never answers with older code
        "tuning": tuning.digest(target),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=repr).encode()).hexdigest()


def cache_key(
    ir_bytecode: bytes,
    signature: "CallSignature",
    pipeline: "Pipeline",
    target: "Target",
    flags: Sequence[str] = (),
) -> str:
    """The hex digest naming one compilation: the recipe, the call signature and the IR."""
    h = hashlib.sha256()
    h.update(recipe_key(pipeline, target, flags).encode())
    h.update(json.dumps(signature.to_json(), sort_keys=True, default=repr).encode())
    h.update(b"\0ir\0")
    h.update(ir_bytecode)
    return h.hexdigest()


# A program's fingerprint (`lowerkit.ingress.fingerprint`) -> its cache key, learnt when it was
# traced in this process: a later compile of the same program is answered without tracing. A
# portable fingerprint's key is also kept in the cache folder, for the processes after this one.
_FINGERPRINTS: dict[tuple[str, str], str] = {}
_KEY_LENGTH = 64


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    stores: int = 0


class CompileCache:
    """A folder of compiled artifacts named by `cache_key`."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.stats = CacheStats()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.lkc"

    def fingerprint_path(self, fingerprint: str) -> Path:
        return self.directory / "fingerprints" / fingerprint[:2] / fingerprint

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Held while one process looks up and compiles ``key``; others wait, then hit."""
        path = self.path(key).with_suffix(".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def get(self, key: str, device: str | None = None) -> "Artifact | None":
        """The stored artifact, or None when absent or corrupted (a corrupted one is removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        payload = _verified_payload(data)
        if payload is not None:
            try:
                art = Artifact.load(io.BytesIO(payload), device)
            except Exception:
                payload = None
        if payload is None:
            self.stats.corrupt += 1
            self.stats.misses += 1
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        self.stats.hits += 1
        art.cache_hit = True
        return art

    def put(self, key: str, artifact: "Artifact") -> Path | None:
        """Store atomically; None when the artifact cannot be saved (a signature with values
        JSON cannot hold)."""
        if not artifact.signature.json_safe():
            return None
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            artifact.save(tmp, weights=False)  # code only: weights come from each model
            payload = Path(tmp).read_bytes()
            digest = hashlib.sha256(payload).hexdigest().encode()
            with open(tmp, "wb") as f:
                f.write(_MAGIC + digest + b"\n" + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.stats.stores += 1
        return path

    def lookup_or_compile(self, imported: Any, pipeline: "Pipeline", target: "Target",
                          flags: Sequence[str], device: str | None,
                          compile: Callable[[], "Artifact"],
                          fingerprint: str | None = None) -> "Artifact":
        """The cached artifact for this program, or ``compile()``'s, stored for next time.
        ``fingerprint``: the program's, remembered with its key for `recall`."""
        key = cache_key(to_bytecode(imported.module), imported.signature, pipeline, target, flags)
        with self.lock(key):
            hit = self.get(key, device)
            if hit is not None:
                hit.cache_note = "hit: program key (traced and imported, not compiled)"
            else:
                hit = compile()
                stored = self.put(key, hit)
                hit.cache_note = ("miss: compiled and stored" if stored is not None
                                  else "miss: compiled; not storable (a signature JSON cannot hold)")
        if getattr(fingerprint, "note", ""):
            hit.cache_note += f"; fingerprint {fingerprint.note}"
        if fingerprint is not None and not hit.state:
            _FINGERPRINTS[str(self.directory), fingerprint] = key
            if getattr(fingerprint, "portable", False):
                self._remember(fingerprint, key)
        return hit

    def _remember(self, fingerprint: str, key: str) -> None:
        """Keep a portable fingerprint's key in the folder (atomically: a reader sees the
        whole key or none). A folder that refuses it costs later processes a trace, never this
        compile."""
        path, tmp = self.fingerprint_path(fingerprint), None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "w") as f:
                f.write(key)
            os.replace(tmp, path)
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _remembered(self, fingerprint: str) -> str | None:
        """The key another process kept for a portable fingerprint, if well formed."""
        if not getattr(fingerprint, "portable", False):
            return None
        try:
            key = self.fingerprint_path(fingerprint).read_text()
        except (OSError, UnicodeDecodeError):  # none kept, or a folder it cannot read
            return None
        if len(key) != _KEY_LENGTH or any(c not in "0123456789abcdef" for c in key):
            return None
        return key

    def recall(self, fingerprint: str, device: str | None = None) -> "Artifact | None":
        """The artifact of a program traced before, found by its fingerprint alone (no trace,
        no import): by this process, or by an earlier one when the fingerprint is portable;
        None when unknown or no longer stored."""
        key = _FINGERPRINTS.get((str(self.directory), fingerprint))
        earlier = key is None
        if earlier:
            key = self._remembered(fingerprint)
        if key is None:
            return None
        art = self.get(key, device)
        if art is None:
            self.forget(fingerprint)
            return None
        _FINGERPRINTS[str(self.directory), fingerprint] = key
        art.cache_note = ("hit: fingerprint, kept by an earlier process (not traced, imported "
                          "or compiled)" if earlier
                          else "hit: fingerprint (not traced, imported or compiled)")
        if getattr(fingerprint, "note", ""):  # it could not guard only what the code reads
            art.cache_note += f"; {fingerprint.note}"
        return art

    def forget(self, fingerprint: str | None = None) -> None:
        """Forget one fingerprint, or all of this folder's (in this process and on disk): the
        next compile of such a program traces and imports it, then finds it by program key."""
        folder = str(self.directory)
        for known in [k for k in _FINGERPRINTS if k[0] == folder
                      and fingerprint in (None, k[1])]:
            del _FINGERPRINTS[known]
        paths = ([self.fingerprint_path(fingerprint)] if fingerprint is not None
                 else self.directory.glob("fingerprints/*/*"))
        for path in paths:
            with contextlib.suppress(OSError):  # gone, or a folder that refuses it
                path.unlink()

    def clear(self) -> None:
        for p in self.directory.glob("*/*.lkc"):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        self.forget()

    def __repr__(self) -> str:
        return f"CompileCache({str(self.directory)!r})"


def _verified_payload(data: bytes) -> bytes | None:
    header = len(_MAGIC) + 65
    if not data.startswith(_MAGIC) or len(data) < header:
        return None
    digest, payload = data[len(_MAGIC):header - 1], data[header:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def resolve_cache(cache: "CompileCache | str | os.PathLike | bool | None") -> CompileCache | None:
    """The API's ``cache=`` argument: None/True for the default place, False for none, a folder
    or a `CompileCache`."""
    if isinstance(cache, CompileCache):
        return cache
    if cache is False:
        return None
    if cache is None or cache is True:
        directory = default_directory()
        return None if directory is None else CompileCache(directory)
    return CompileCache(cache)
