"""Per-shape choices measured on one CPU, stored, and reused by later compiles (issue 22).

Some choices have no answer that holds on every CPU. One of them is whether a small-kernel
convolution goes per kernel tap (one matmul per tap, `ingress.decompositions`) or to IREE's
im2col. Which one is faster depends on the shape and the CPU, and on these 2-core machines two
runs of one configuration can differ by 70 %. So `lowerkit.tools.tune` measures both,
interleaved and repeated, and stores the outcome here. The import then reads it instead of the
fixed rule (`decompositions.taps_pay`).

An entry is keyed by the IREE version and the CPU that iree-compile compiles for (its LLVM name
and features, as `target.resolve_host_cpu` reads them). An entry from another CPU or another
IREE is never used. The database is a JSON file: ``$LOWERKIT_TUNING_DB``, else
``$XDG_DATA_HOME/lowerkit/tuning.json`` (``~/.local/share/...``). ``LOWERKIT_TUNING_DB=off``
turns it off. It is data rather than cache: clearing the compile cache keeps it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .errors import LowerkitError

ENV = "LOWERKIT_TUNING_DB"
FORMAT = 1
# A convolution's two forms (`decompositions._conv_taps`): per kernel tap, or whole to IREE
# (im2col for a dense convolution, IREE's depthwise kernel for a depthwise one).
TAPS, IM2COL = "taps", "im2col"
CHOICES = (TAPS, IM2COL)
# One choice per CPU rather than per op: how many bytes of each matrix operand a workgroup of
# IREE's data-tiled matmuls takes (`--iree-llvmcpu-matmul-tile-bytes`). IREE's default gave the
# ViT-B/16 MLP's 197x3072x768 matmul one 16x16 output tile per workgroup, so its packed weights
# were read once per 16 rows: fine while they stay in cache, and 1.5x slower per call when
# they come from memory, as each layer's weights do inside a model. Measured per CPU and model
# (`lowerkit.tools.tune.measure_matmul_tiles`); stored as a byte count, or IREE_DEFAULT.
MATMUL_TILE = "matmul-tile-bytes"
IREE_DEFAULT = "iree"
_MATMUL_TILE_FLAG = "--iree-llvmcpu-matmul-tile-bytes"
# How dense 2-D convolutions reach IREE, for a whole compile. RULE is `decompositions.taps_pay`
# (per tap, else im2col). DATA_TILED sends every one whole, and iree-compile turns them
# channels-last and data-tiles them as it does matmuls (IREE 3.13's experimental convolution
# data tiling; no im2col). Depthwise and 1-D convolutions keep the rule (both lost whole).
# Which wins depends on the model, not only on the CPU (benchmarks/conv_strategy.py: dense 3x3
# nets gain, nets with depthwise convolutions lose), so lowerkit picks it per program
# (`choose_convolutions`), and a caller may ask for either (`forced_convolutions`).
CONVOLUTIONS = "convolutions"
RULE, DATA_TILED = "rule", "data-tiled"
CONVOLUTION_STRATEGIES = (RULE, DATA_TILED)
# What a caller may also ask for, though `lowerkit tune` never stores it: every convolution
# whole (IM2COL, dense ones through IREE's im2col, depthwise ones through its own kernel), the
# fewest dispatches to compile. On a Zen 3, without AVX-512, ResNet-18 compiled in 6.7 s
# against the rule's 14 s in one warm process and ran 1.06x the rule's call time; a UNet ran
# 1.5x (conv-rule-zen3.json). For iterating on a model more than for running it.
ASKABLE_STRATEGIES = (*CONVOLUTION_STRATEGIES, IM2COL)
# A data-tiled 1x1 convolution fused with BatchNorm and a residual add whose second result is
# transposed back keeps a tile on the stack: 113 KiB in ResNet-50 at 224x224, past the 32 KiB
# iree-compile allows by default, which rejected the model. lowerkit's workers have the room
# (`runtime.worker_stack`, four times this).
DATA_TILED_STACK_BYTES = 256 * 1024
DATA_TILED_FLAGS = (
    "--iree-preprocessing-pass-pipeline="
    "builtin.module(util.func(iree-preprocessing-convert-conv-to-channels-last))",
    "--iree-dispatch-creation-experimental-set-data-tiling-ops=matmul",
    "--iree-dispatch-creation-experimental-set-data-tiling-ops=convolution",
    "--iree-global-opt-use-im2col-for-convs=false",
    f"--iree-llvmcpu-stack-allocation-limit={DATA_TILED_STACK_BYTES}",
)
_OFF = {"0", "off", "false", "no", "none"}


# Without a stored or asked-for strategy, lowerkit picks DATA_TILED for a program whose 2-D
# convolutions are all dense, with at least this much work in those with a kernel larger than
# 1x1, on a CPU-only target (`choose_convolutions`). Measured on a Zen 4 and an AMX Xeon host
# (benchmarks/conv_strategy.py, conv-strategy-zen4 and -xeon): such nets ran 1.03-2.07x faster
# (ResNet-18, the small ResNet and UNet) or level (ResNet-50), and compiled in about half the
# time (ResNet-50 data-tiled needs `DATA_TILED_STACK_BYTES`). A net with depthwise
# convolutions lost (MobileNetV2 0.86x, the depthwise-separable net 0.93-0.96x): its depthwise
# ones keep the rule in NCHW, and transposes appear between them and the data-tiled NHWC ones.
# The LeNet-sized CNN (3.2 MFLOP of convolution) lost 0.69-0.77x: too little work to pay for
# the layout changes.
AUTO_MIN_FLOPS = 10e6
# Every one of those nets had square kernels. A dense net with 1x7 and 7x1 ones (Inception-v3
# at 299 px) ran 3.0x slower data-tiled than by the rule on a Zen 4 (2332 against 772 ms, eager
# 1061, the host loaded: benchmarks/conv_strategy.py), and 0.25x eager on an AMX Xeon where
# lowerkit had chosen data tiling (issue 71's figures). Alone, a 7x1 192->192 convolution at
# 17x17 ran 5.9x slower data-tiled and a 1x7 one 1.8x, where a square 3x3 at the same size ran
# level, on the same Zen 4 (ad hoc, interleaved). So a net with a non-square kernel keeps the
# rule. Those hosts all had AVX-512. On an AMD Zen 3 (AVX2, no AVX-512) the same choice lost badly:
# ResNet-50 ran 6.5x slower data-tiled than by the rule (conv-strategy-zen3.json). So lowerkit
# chooses data tiling by itself only for a CPU with 512-bit vectors (`data_tiling_pays`); a
# caller's ``convolutions="data-tiled"`` and a measured `lowerkit tune` entry still apply.
# A net with depthwise convolutions keeps the rule unless they, with any dilated ones (both
# stay per tap, channels-first, beside data-tiled channels-last ones), are at most this share
# of its convolution work. On a Zen 4 (benchmarks/depthwise_share.py,
# conv-strategy-grouped-zen4 and -again) EfficientNet-V2-S at 384 px (1.0 % depthwise: its
# first stages are dense Fused-MBConv blocks) ran 1.32x and 1.25x faster data-tiled; of two
# such nets held out, timm's EfficientNetV2-B0 ran 1.05x (0.62x in a run where the host's
# second core ran slow in bursts) and EfficientNetV2-RW-T 0.88x, still 1.08x IREE's defaults.
# Every net with a larger share lost or stayed level: DeepLabV3-MobileNetV3 (71 %, mostly
# dilated) 0.91x, RegNet-Y, MobileNetV3, EfficientNet-B0 and MnasNet (9-14 %) 0.58-0.91x,
# ConvNeXt (5 and 36 %) level. The Xeon's stored runs of the same choice on dense and
# depthwise nets (conv-strategy-xeon) track the Zen 4's within 0.1x; this share was not
# measured there.
AUTO_MAX_PER_TAP_SHARE = 0.03


@dataclass(frozen=True)
class ConvWork:
    """A program's 2-D convolutions as `choose_convolutions` weighs them
    (`ingress.decompositions.conv_work`)."""

    dense_flops: float   # in the dense ones with a kernel larger than 1x1
    grouped: bool        # any grouped (depthwise) one
    transposed: bool     # any transposed one
    shapes: tuple = ()   # every 2-D one's (input, weight, stride, padding, dilation, groups)
    not_f32: bool = False  # any not in float32 (every measurement behind the choice was)
    asymmetric: bool = False  # any dense one whose kernel is not square (1x7, 7x1, 3x1)
    per_tap_flops: float = 0.0  # in the grouped ones and the dilated dense ones
    all_flops: float = 0.0  # in every one

    @property
    def per_tap_share(self) -> float:
        """The share of the work in convolutions that stay per tap when dense ones are
        data-tiled (`AUTO_MAX_PER_TAP_SHARE`)."""
        return self.per_tap_flops / self.all_flops if self.all_flops else 0.0

    @property
    def key(self) -> str:
        """The tuning database's op key for this set of convolutions: a program with the same
        convolution shapes (the same architecture at the same input size) shares a choice."""
        try:
            ordered = sorted(set(self.shapes))
        except TypeError:  # a size's name (over dynamic sizes) where another has an int
            ordered = sorted(set(self.shapes), key=repr)
        text = repr(ordered)
        return f"{CONVOLUTIONS} {hashlib.sha256(text.encode()).hexdigest()[:16]}"


class TuningError(LowerkitError):
    """A tuning database that cannot be read or written, or a tuning run that went wrong."""


@dataclass(frozen=True)
class ConvShape:
    """The convolution a choice is for: everything that decides its code but the values."""

    input: tuple[int, ...]
    weight: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    bias: bool
    groups: int = 1           # 1, or the channel count of a depthwise convolution

    @property
    def key(self) -> str:
        dims = lambda v: "x".join(str(int(d)) for d in v)  # noqa: E731
        return (f"conv{len(self.input) - 2}d in{dims(self.input)} w{dims(self.weight)} "
                f"s{dims(self.stride)} p{dims(self.padding)} d{dims(self.dilation)}"
                f"{f' g{self.groups}' if self.groups != 1 else ''}{' bias' if self.bias else ''}")

    def to_json(self) -> dict:
        return {"input": list(self.input), "weight": list(self.weight),
                "stride": list(self.stride), "padding": list(self.padding),
                "dilation": list(self.dilation), "bias": self.bias, "groups": self.groups}

    @staticmethod
    def from_json(d: dict) -> "ConvShape":
        return ConvShape(*(tuple(d[k]) for k in ("input", "weight", "stride", "padding",
                                                  "dilation")), bool(d["bias"]),
                         int(d.get("groups", 1)))


def cpu_key(target: Any = "cpu") -> str | None:
    """Whose measurements apply to a compile for ``target``: the IREE version and the llvm-cpu
    CPU it resolves to (name and a hash of its features); None for a target without llvm-cpu."""
    from importlib.metadata import version

    from . import target as targets

    t = targets.Target.parse(target)
    if "llvm-cpu" not in t.backend:
        return None
    cpu = targets.resolved_cpu(t)
    features = hashlib.sha256(cpu.get("cpu_features", "").encode()).hexdigest()[:12]
    return f"iree {version('iree-base-compiler')} {cpu.get('cpu', '?')} {features}"


# A dispatch's lowering config (`lowerkit.iree.dispatch_configs`), keyed "dispatch FINGERPRINT"
DISPATCH = "dispatch"
_LOWERING_CONFIG = "#iree_cpu.lowering_config<"
# A program's whole-compile flag set, measured by `lowerkit tune`: the name of the compile
# ladder's rung (`iree.compiler.LADDER`: data tiling, microkernels and im2col on or off) to
# start from, keyed by `iree.compiler.program_key`. Per program, as no set wins on every model
# or on every CPU (docs/guides/tuning.md).
FLAG_SET = "flags"


def flag_set_op(op: str) -> bool:
    """Whether ``op`` keys one program's flag set."""
    return op.startswith(f"{FLAG_SET} ")


def flag_set_names() -> tuple[str, ...]:
    from .iree.compiler import LADDER

    return tuple(name for name, _ in LADDER)


def dispatch_op(op: str) -> bool:
    """Whether ``op`` keys one dispatch's lowering config."""
    return op.startswith(f"{DISPATCH} ")


def program_op(op: str) -> bool:
    """Whether ``op`` keys one program's convolution strategy (`ConvWork.key`)."""
    return op == CONVOLUTIONS or op.startswith(f"{CONVOLUTIONS} ")


def valid_choice(op: str, choice: Any) -> bool:
    if op == MATMUL_TILE:
        return choice == IREE_DEFAULT or (isinstance(choice, str) and choice.isdigit()
                                          and int(choice) > 0)
    if program_op(op):
        return choice in CONVOLUTION_STRATEGIES
    if flag_set_op(op):
        return choice in flag_set_names()
    if dispatch_op(op):  # IREE_DEFAULT: searched, IREE's own kept
        return choice == IREE_DEFAULT or (isinstance(choice, str)
                                          and choice.startswith(_LOWERING_CONFIG))
    return choice in CHOICES


def _choices_text(op: str) -> str:
    if flag_set_op(op):
        return str(flag_set_names())
    if dispatch_op(op):
        return f"{IREE_DEFAULT!r} or an {_LOWERING_CONFIG}...>"
    if program_op(op):
        return str(CONVOLUTION_STRATEGIES)
    return f"{IREE_DEFAULT!r} or a byte count" if op == MATMUL_TILE else str(CHOICES)


def iree_flags(choices: dict[str, str]) -> list[str]:
    """The iree-compile flags one CPU's stored choices add to a whole compile."""
    flags = list(DATA_TILED_FLAGS) if choices.get(CONVOLUTIONS) == DATA_TILED else []
    chosen = choices.get(MATMUL_TILE)
    if chosen is None or chosen == IREE_DEFAULT:
        return flags
    return [*flags, f"{_MATMUL_TILE_FLAG}={int(chosen)}"]


class TuningDatabase:
    """The stored choices, by CPU key and op key, each with the measurements behind it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, dict[str, dict]] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text())
                if data.get("format") != FORMAT:
                    raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
                self.entries = {cpu: dict(ops) for cpu, ops in data["entries"].items()}
                for ops in self.entries.values():
                    for op, entry in ops.items():
                        if not valid_choice(op, entry.get("choice")):
                            raise ValueError(f"{op}: choice {entry.get('choice')!r} is not one "
                                             f"of {_choices_text(op)}")
            except (OSError, ValueError, KeyError, AttributeError, TypeError) as e:
                raise TuningError(f"tuning database {self.path} cannot be read: {e} (fix it, "
                                  f"delete it, or set {ENV}=off)") from e

    def choice(self, cpu: str | None, op: str) -> str | None:
        entry = self.entries.get(cpu or "", {}).get(op)
        return entry["choice"] if entry else None

    def record(self, cpu: str, op: str, choice: str, evidence: dict) -> None:
        if not valid_choice(op, choice):
            raise TuningError(f"{op}: choice {choice!r} is not one of {_choices_text(op)}")
        self.entries.setdefault(cpu, {})[op] = {"choice": choice, **evidence}

    def choices(self, cpu: str | None) -> dict[str, str]:
        return {op: e["choice"] for op, e in self.entries.get(cpu or "", {}).items()}

    def digest(self, cpu: str | None) -> str:
        """A hash of the choices for ``cpu``: a compile's cache fingerprint carries it, so that
        a changed choice never answers with code built under the old one."""
        text = json.dumps(sorted(self.choices(cpu).items()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def save(self) -> None:
        """Write atomically (temporary file, then rename): a reader never sees half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": FORMAT, "entries": self.entries}, indent=1, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tuning-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def default_path() -> Path | None:
    """``$LOWERKIT_TUNING_DB``, else the XDG data folder's; None when turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "lowerkit" / "tuning.json"


@contextlib.contextmanager
def reading(path: "str | Path") -> Iterator[None]:
    """Compiles inside read the database at ``path`` (it is what `ENV` names meanwhile)."""
    before = os.environ.get(ENV)
    os.environ[ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def open_database(path: "str | Path | None" = None) -> TuningDatabase | None:
    """The database at ``path`` (default: `default_path`); None when off or when no file is
    there yet (nothing was tuned, and a compile then resolves no CPU for it)."""
    path = Path(path) if path is not None else default_path()
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    # one compile asks several times (choices, flag set, dispatch configs): read the file
    # once per version of it
    key = (str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size)
    db = _OPENED.get(key)
    if db is None:
        db = TuningDatabase(path)
        _OPENED.clear()
        _OPENED[key] = db
    return db


_OPENED: dict[tuple, TuningDatabase] = {}


class _Active(threading.local):
    """The choices that apply to the import running on this thread, and the shapes it asked."""

    choices: dict[str, str] | None = None
    forced: str | None = None
    forced_tile: str | None = None  # a matmul tile choice in place of the stored one
    forced_convolutions: str | None = None  # a convolution strategy in place of the stored one
    forced_why: str | None = None  # why it was forced when no caller asked (`why_convolutions`)
    forced_dispatches: dict | None = None  # lowering configs in place of the stored ones
    forced_flag_set: str | None = None  # a ladder rung in place of the stored flag set
    key_only: bool = False   # inside `program_key_only`
    asked: list | None = None
    used: dict[str, str] | None = None
    per_tap: list | None = None
    cpu_only: bool = False   # the target `applied` was entered for is llvm-cpu alone
    target: Any = None       # that target (`data_tiling_pays` asks of its CPU when needed)
    why_convolutions: str | None = None  # how `choose_convolutions` picked the strategy
    weighed: list | None = None  # the `ConvWork` of each import inside `weighing`


_active = _Active()


@contextlib.contextmanager
def _set(**values: Any) -> Iterator[None]:
    """``_active``'s fields set to ``values`` inside, and back to what they were after."""
    before = {name: getattr(_active, name) for name in values}
    for name, value in values.items():
        setattr(_active, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(_active, name, value)


def choice_for(shape: ConvShape) -> str | None:
    """What the import should do with ``shape``: a stored or forced choice, or None for the
    rule. Called by the decompositions while they trace."""
    if _active.asked is not None and shape not in _active.asked:
        _active.asked.append(shape)
    chosen = _active.forced or (_active.choices or {}).get(shape.key)
    if chosen is not None and _active.used is not None:
        _active.used[shape.key] = chosen
    return chosen


@contextlib.contextmanager
def applied(target: Any, database: "TuningDatabase | None" = None) -> Iterator[dict[str, str]]:
    """Imports inside read ``database``'s choices for ``target``'s CPU (default: the default
    database). Yields the choices they used, by op key."""
    db = database if database is not None else open_database()
    cpu = cpu_key(target) if db is not None and db.entries else None
    choices = db.choices(cpu) if db is not None else {}
    used: dict[str, str] = {}
    tile = _active.forced_tile or choices.get(MATMUL_TILE)
    if tile is not None:
        choices = {**choices, MATMUL_TILE: tile}
        if _active.forced_tile is None:
            used[MATMUL_TILE] = tile  # a stored choice, reported as the convolutions' are
    strategy = _active.forced_convolutions or choices.get(CONVOLUTIONS)
    only_cpu = cpu_only(target)
    if strategy is not None and not only_cpu:
        strategy = None  # iree-compile's preprocessing would turn every device's convolutions
        choices = {k: v for k, v in choices.items() if k != CONVOLUTIONS}
    if strategy is not None:
        choices = {**choices, CONVOLUTIONS: strategy}
        if _active.forced_convolutions is None and strategy != RULE:
            used[CONVOLUTIONS] = strategy
    why = _active.forced_why if _active.forced_convolutions is not None else None
    forced = IM2COL if strategy == IM2COL else _active.forced
    with _set(choices=choices, used=used, cpu_only=only_cpu, target=target,
              why_convolutions=why, forced=forced):
        yield used


MEASURED = "measured faster on this CPU by lowerkit tune"
CHOSEN = "lowerkit's choice for this program"


def choose_convolutions(work: ConvWork) -> None:
    """Inside `applied`, where neither the caller nor a CPU-wide entry chose how dense 2-D
    convolutions go: the strategy `lowerkit tune` measured for this program's convolutions on
    this CPU, else DATA_TILED for a program that `AUTO_MIN_FLOPS` says pays for it on a CPU
    that `data_tiling_pays` for. Called by
    the import once it has the exported graph, before anything is decomposed."""
    if _active.weighed is not None:
        _active.weighed.append(work)
    choices = _active.choices
    if (choices is None or CONVOLUTIONS in choices or _active.forced_convolutions is not None
            or _active.forced is not None or not _active.cpu_only):
        return
    measured = choices.get(work.key)
    if measured is not None:
        if _active.used is not None:
            _active.used[work.key] = measured
        if measured == DATA_TILED:
            choices[CONVOLUTIONS] = DATA_TILED
            _active.why_convolutions = MEASURED
        return
    if any(key.startswith("conv2d ") for key in choices):
        return  # this CPU's 2-D convolutions were measured per shape: those choices hold
    if (work.transposed or work.asymmetric or work.dense_flops < AUTO_MIN_FLOPS
            or (work.grouped and work.per_tap_share > AUTO_MAX_PER_TAP_SHARE)):
        return
    if work.not_f32 or not data_tiling_pays(_active.target):
        return
    choices[CONVOLUTIONS] = DATA_TILED
    _active.why_convolutions = CHOSEN


def why_convolutions() -> str | None:
    """Why this import's dense convolutions are DATA_TILED when no caller asked: `MEASURED`
    or `CHOSEN`; None when a caller or a CPU-wide entry asked (its rejection is news then)."""
    return _active.why_convolutions


@contextlib.contextmanager
def weighing() -> Iterator[list]:
    """Collects the `ConvWork` of each import inside (what `lowerkit tune` keys a program's
    convolution strategy by)."""
    weighed: list = []
    with _set(weighed=weighed):
        yield weighed


def dispatch_configs(target: Any, database: "TuningDatabase | None" = None) -> dict[str, str]:
    """The lowering configs `lowerkit tune` stored for ``target``'s CPU, by dispatch
    fingerprint (or those `forced_dispatch_configs` gives): what iree-compile gives those
    dispatches in place of its own (`iree.compiler.compile_to_vmfb`)."""
    if _active.forced_dispatches is not None:
        return dict(_active.forced_dispatches)
    db = database if database is not None else open_database()
    if db is None or not db.entries:
        return {}
    return {op.split(" ", 1)[1]: choice for op, choice in db.choices(cpu_key(target)).items()
            if dispatch_op(op) and choice != IREE_DEFAULT}


@contextlib.contextmanager
def forced_dispatch_configs(configs: dict[str, str]) -> Iterator[None]:
    """Compiles inside give these dispatches these lowering configs, and no stored ones
    (the tuner's candidates; ``{}``: IREE's own everywhere)."""
    with _set(forced_dispatches=dict(configs)):
        yield


def flag_set(target: Any, program: str, database: "TuningDatabase | None" = None) -> str | None:
    """The compile ladder rung `lowerkit tune` measured fastest for ``program``
    (`iree.compiler.program_key`) on ``target``'s CPU, or the one `forced_flag_set` gives; None:
    the ladder starts at its fast rung. Only for a target that is llvm-cpu alone."""
    if _active.forced_flag_set is not None:
        return _active.forced_flag_set
    if not cpu_only(target):
        return None
    db = database if database is not None else open_database()
    if db is None or not db.entries:
        return None
    return db.choice(cpu_key(target), f"{FLAG_SET} {program}")


class ProgramKeyFound(Exception):
    """A compile inside `program_key_only` stops here, once it knows its program's key."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


@contextlib.contextmanager
def program_key_only() -> Iterator[None]:
    """Compiles inside stop before iree-compile, raising `ProgramKeyFound`: what a tuner
    needs to look a flag set up costs the import and the pipeline, not a compile."""
    with _set(key_only=True):
        yield


def reached_iree_compile(program: str) -> None:
    """Called by a compile as it is about to run iree-compile on ``program``."""
    if _active.key_only:
        raise ProgramKeyFound(program)


def forcing_flag_set() -> str | None:
    return _active.forced_flag_set


@contextlib.contextmanager
def forced_flag_set(rung: str) -> Iterator[None]:
    """Compiles inside start the compile ladder at ``rung`` (the tuner's candidates)."""
    with _set(forced_flag_set=rung):
        yield


def data_tiling_pays(target: Any) -> bool:
    """Whether the CPU ``target`` compiles for has 512-bit vectors (AVX-512), as iree-compile
    resolves it (the host's for a target without a CPU): the CPUs where lowerkit's own
    data-tiled choice was measured to pay (`AUTO_MIN_FLOPS`)."""
    from . import target as targets

    return targets.native_vector_bytes(targets.Target.parse(target)) >= 64


def cpu_only(target: Any) -> bool:
    """Whether ``target`` is llvm-cpu alone: IREE's preprocessing for DATA_TILED would turn
    every device's convolutions channels-last."""
    from . import target as targets

    return targets.Target.parse(target).backend == "llvm-cpu"


def applied_flags() -> list[str]:
    """Inside `applied`: the iree-compile flags its choices add to the compile."""
    return iree_flags(_active.choices or {})


def digest(target: Any, database: "TuningDatabase | None" = None) -> str:
    """`TuningDatabase.digest` of the default database for ``target`` ("" when there is none),
    or the form `forced` makes every convolution take."""
    if (_active.forced is not None or _active.forced_tile is not None
            or _active.forced_convolutions is not None or _active.forced_dispatches is not None
            or _active.forced_flag_set is not None):
        configs = hashlib.sha256(json.dumps(sorted((_active.forced_dispatches or {}).items()))
                                 .encode()).hexdigest()[:12]
        return (f"forced {_active.forced} {_active.forced_tile} {_active.forced_convolutions} "
                f"{configs if _active.forced_dispatches is not None else None} "
                f"{_active.forced_flag_set}")
    db = database if database is not None else open_database()
    if db is None or not db.entries:
        return ""
    return db.digest(cpu_key(target))


@contextlib.contextmanager
def forced(choice: str | None) -> Iterator[None]:
    """Imports inside make every eligible convolution ``choice`` (the tuner's two candidates)."""
    if choice is not None and choice not in CHOICES:
        raise TuningError(f"choice {choice!r} is not one of {CHOICES}")
    with _set(forced=choice):
        yield


@contextlib.contextmanager
def forced_matmul_tile(choice: str) -> Iterator[None]:
    """Compiles inside take ``choice`` (a byte count or IREE_DEFAULT) for the matmul tile,
    whatever is stored (the tuner's candidates)."""
    if not valid_choice(MATMUL_TILE, choice):
        raise TuningError(f"matmul tile {choice!r} is not one of {_choices_text(MATMUL_TILE)}")
    with _set(forced_tile=choice):
        yield


@contextlib.contextmanager
def forced_convolutions(strategy: str, why: str | None = None) -> Iterator[None]:
    """Compiles inside take ``strategy`` (one of ASKABLE_STRATEGIES) for dense 2-D
    convolutions, whatever is stored (a caller's or the tuner's). ``why``: lowerkit chose it,
    not a caller (`why_convolutions`; the torch.compile backend carries its graph's choice
    from aot_autograd's trace to the compile this way)."""
    if strategy not in ASKABLE_STRATEGIES:
        raise TuningError(f"convolution strategy {strategy!r} is not one of "
                          f"{ASKABLE_STRATEGIES}")
    with _set(forced_convolutions=strategy, forced_why=why):
        yield


def every_convolution_whole() -> bool:
    """Whether this import was asked to send every convolution whole (IM2COL, inside
    `applied` for a llvm-cpu target)."""
    return (_active.choices or {}).get(CONVOLUTIONS) == IM2COL


def dense_convolutions_whole() -> bool:
    """Whether this import sends every dense 2-D convolution whole (DATA_TILED): asked by the
    decompositions, inside `applied` for a llvm-cpu target (which then adds the flags)."""
    return (_active.choices or {}).get(CONVOLUTIONS) == DATA_TILED


def dense_convolutions_data_tiled() -> bool:
    """Whether this import sends dense 2-D convolutions whole (DATA_TILED) to a CPU with
    512-bit vectors, where IREE 3.13 data-tiles them (for other CPUs it compiles them as
    direct convolutions): asked by the decompositions' forms measured there."""
    return dense_convolutions_whole() and data_tiling_pays(_active.target)


def narrow_vector_cpu_import() -> bool:
    """Whether the import running on this thread is for llvm-cpu alone, on a CPU without
    512-bit vectors (`data_tiling_pays` false): the CPUs where lowerkit's forms for them were
    measured (a Zen 3)."""
    return (_active.target is not None and _active.cpu_only
            and not data_tiling_pays(_active.target))


def gpu_import() -> bool:
    """Whether the import running on this thread is for a target with a GPU device (inside
    `applied`); an import outside a compile is taken as for the CPU."""
    return _active.target is not None and not _active.cpu_only


def attention_kernel() -> bool:
    """Whether the import running on this thread is for llvm-cpu alone, on a CPU for which
    lowerkit's attention kernel builds (`iree.cpu_kernels`): its attention then needs neither
    padding to IREE's tiles nor chunks of causal rows (`ingress.decompositions._sdpa`)."""
    if not _active.cpu_only or _active.target is None:
        return False
    from . import target as targets
    from .iree import cpu_kernels

    return cpu_kernels.attention_object_for(targets.Target.parse(_active.target)) is not None


def wrote_per_tap(shape: ConvShape) -> None:
    """Called by the decompositions for each convolution they write per tap."""
    if _active.per_tap is not None:
        _active.per_tap.append(shape)


@contextlib.contextmanager
def per_tap_written() -> Iterator[list]:
    """Collects the convolutions the imports inside write per tap (`api` retries a compile
    with them whole when iree-compile rejects its fast configuration)."""
    written: list = []
    with _set(per_tap=written):
        yield written


def forcing() -> str | None:
    """The form `forced` makes every convolution take on this thread, if any."""
    return _active.forced


@contextlib.contextmanager
def asking() -> Iterator[list]:
    """Collects the shapes the imports inside ask a choice for (what a tuner measures)."""
    asked: list = []
    with _set(asked=asked):
        yield asked
