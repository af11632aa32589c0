"""Per-shape choices measured on this CPU (`lowerkit tune`, `lowerkit.tuning`): stored, read by
later compiles on the same CPU and IREE only, never answered stale from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import lowerkit
from lowerkit import tuning
from lowerkit.cli import main as cli
from lowerkit.ingress.importer import import_program
from lowerkit.runtime.numerics import compare
from lowerkit.tools.tune import MATMUL_TILE_CANDIDATES, decide
from lowerkit.tuning import IM2COL, TAPS, TuningDatabase, TuningError


class TwoConvs(torch.nn.Module):
    """One convolution the rule writes per tap (16 channels) and one it leaves to im2col
    (4 input channels, fewer than `decompositions.MIN_TAP_CHANNELS`)."""

    def __init__(self):
        super().__init__()
        self.wide = torch.nn.Conv2d(16, 4, 3, padding=1)
        self.thin = torch.nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)

    def forward(self, x):
        return self.thin(torch.relu(self.wide(x)))


WIDE = "conv2d in1x16x12x12 w4x16x3x3 s1x1 p1x1 d1x1 bias"
THIN = "conv2d in1x4x12x12 w8x4x3x3 s2x2 p1x1 d1x1"


def two_convs():
    torch.manual_seed(0)
    return TwoConvs().eval(), (torch.randn(1, 16, 12, 12),)


def _whole(module) -> list[str]:
    """The result types of the convolutions an imported module keeps whole (for im2col)."""
    return [line.rsplit("->", 1)[1].strip() for line in str(module).splitlines()
            if "torch.aten.convolution" in line]


# what the module keeps whole: by the rule the thin convolution, by the database below the wide
THIN_WHOLE = ["!torch.vtensor<[1,8,6,6],f32>"]
WIDE_WHOLE = ["!torch.vtensor<[1,4,12,12],f32>"]


def _database(tmp_path, choices: dict[str, str], cpu: str | None = None) -> TuningDatabase:
    db = TuningDatabase(tmp_path / "tuning.json")
    for op, choice in choices.items():
        db.record(cpu or tuning.cpu_key("cpu"), op, choice, {"why": "written by the test"})
    db.save()
    return db


def test_the_rule_decides_without_a_database():
    model, args = two_convs()
    with tuning.applied("cpu", TuningDatabase("/nonexistent/tuning.json")) as used:
        imported = import_program(model, args)
    assert _whole(imported.module) == THIN_WHOLE and used == {}


class ThickConvs(torch.nn.Module):
    """Five dense 3x3 convolutions, one a side of each bound of the rule for thick ones
    (`decompositions.THICK_CHANNELS`, `MIN_THICK_TAP_POSITIONS`)."""

    def __init__(self):
        super().__init__()
        conv = lambda c, stride: torch.nn.Conv2d(c, c, 3, stride, 1, bias=False)  # noqa: E731
        self.strided = conv(128, 2)        # whole: strided, though 784 output positions
        self.at_28 = conv(128, 1)          # per tap: 784 output positions
        self.at_14 = conv(128, 1)          # whole: 196 output positions
        self.thinner = conv(64, 2)         # per tap: strided, but thinner than 128 channels
        self.thin_out = torch.nn.Conv2d(128, 64, 3, 1, 1, bias=False)  # per tap: 64 out

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(self.at_28(self.strided(x)), 2)
        return self.at_14(y), self.thinner(x[:, :64]), self.thin_out(y)


def test_the_rule_sends_thick_strided_or_small_convolutions_whole():
    """A thick convolution (128+ input and output channels) goes whole when strided or under
    28x28 output positions, and per tap otherwise; a thinner strided one, and a small one with
    64 output channels, stay per tap. For a GPU target all stay per tap. Compiled for an AVX2
    CPU: on an AVX-512 host lowerkit data-tiles this net instead, every convolution whole
    (`test_without_a_choice_lowerkit_data_tiles_a_dense_convolution_net_only`)."""
    torch.manual_seed(0)
    model, args = ThickConvs().eval(), (torch.randn(1, 128, 56, 56),)
    with tuning.applied("cpu:x86-64-v3", TuningDatabase("/nonexistent/tuning.json")) as used:
        imported = import_program(model, args)
    assert sorted(_whole(imported.module)) == ["!torch.vtensor<[1,128,14,14],f32>",
                                               "!torch.vtensor<[1,128,28,28],f32>"]
    # at_28's, thinner's and thin_out's taps, three a matmul on an AVX2 CPU (TAPS_PER_MATMUL)
    assert str(imported.module).count("torch.aten.mm ") == 9
    assert used == {}
    with tuning.applied("vulkan", TuningDatabase("/nonexistent/tuning.json")):
        imported = import_program(model, args)  # measured on CPUs only: per tap, as before
    assert _whole(imported.module) == [], _whole(imported.module)


def test_a_stored_choice_decides_each_convolutions_form(tmp_path, monkeypatch):
    model, args = two_convs()
    db = _database(tmp_path, {WIDE: IM2COL, THIN: TAPS})  # the opposite of the rule, both
    with tuning.applied("cpu", db) as used:
        imported = import_program(model, args)
    assert _whole(imported.module) == WIDE_WHOLE
    # the thin one's nine taps, three a matmul on a CPU without AVX-512 (TAPS_PER_MATMUL)
    matmuls = 9 if tuning.data_tiling_pays("cpu") else 3
    assert str(imported.module).count("torch.aten.mm ") == matmuls
    assert used == {WIDE: IM2COL, THIN: TAPS}
    monkeypatch.setenv(tuning.ENV, str(db.path))
    art = lowerkit.compile(model, args, cache=False)
    assert art.tuned == {WIDE: IM2COL, THIN: TAPS}
    with torch.no_grad():
        assert compare(art(*args), model(*args)).ok


def test_choices_of_another_cpu_or_iree_are_not_used(tmp_path):
    model, args = two_convs()
    here = tuning.cpu_key("cpu")
    other_iree = here.replace("iree 3.13.0", "iree 3.12.0")
    assert other_iree != here
    for cpu in (other_iree, "iree 3.13.0 sapphirerapids 000000000000"):
        db = _database(tmp_path, {WIDE: IM2COL, THIN: TAPS}, cpu)
        with tuning.applied("cpu", db) as used:
            imported = import_program(model, args)
        assert used == {} and _whole(imported.module) == THIN_WHOLE, cpu
    # a compile for another named CPU does not read the host's measurements
    db = _database(tmp_path, {WIDE: IM2COL, THIN: TAPS})
    assert tuning.cpu_key("cpu:x86-64-v3") != here
    with tuning.applied("cpu:x86-64-v3", db) as used:
        import_program(model, args)
    assert used == {}


def test_a_changed_choice_is_not_answered_from_the_cache(tmp_path, monkeypatch):
    model, args = two_convs()
    cache = lowerkit.CompileCache(tmp_path / "cache")
    monkeypatch.setenv(tuning.ENV, str(_database(tmp_path, {WIDE: TAPS}).path))
    first = lowerkit.compile(model, args, cache=cache)
    again = lowerkit.compile(model, args, cache=cache)
    assert again.cache_hit  # the same choices: the cache answers, and says what they were
    assert again.tuned == {WIDE: TAPS}, again.cache_note
    _database(tmp_path, {WIDE: IM2COL})
    changed = lowerkit.compile(model, args, cache=cache)
    assert not changed.cache_hit, changed.cache_note
    assert changed.tuned == {WIDE: IM2COL} and first.tuned == {WIDE: TAPS}
    # a forced form (the tuner's candidates, a test's) is not answered by the stored ones
    with tuning.forced(TAPS):
        forced = lowerkit.compile(model, args, cache=cache)
    assert forced.tuned == {WIDE: TAPS, THIN: TAPS}, forced.cache_note
    with torch.no_grad():
        assert compare(changed(*args), model(*args)).ok


def test_torch_compile_reads_the_stored_choices(tmp_path, monkeypatch):
    model, args = two_convs()
    monkeypatch.setenv(tuning.ENV, str(_database(tmp_path, {WIDE: IM2COL, THIN: IM2COL}).path))
    torch._dynamo.reset()
    from lowerkit.backend import explain

    with torch.no_grad():
        found = explain(model, *args)
        want = model(*args)
    [graph] = [g for g in found.graphs if g.artifact is not None]
    ops = graph.artifact.records[0].ops
    # both whole, where the rule writes the wide one per tap (1 whole and 9 matmuls)
    assert ops.get("torch.aten.convolution") == 2 and not ops.get("torch.aten.mm"), ops
    assert compare(found.result, want).ok


DECISIONS = [  # (per-tap times, im2col times a round, what is chosen, why)
    ([0.8] * 9, [1.0] * 9, TAPS, "per tap faster"),
    ([1.2] * 9, [1.0] * 9, IM2COL, "im2col faster"),
    # faster in most rounds, four rounds disturbed (noise only slows a call down)
    ([0.7] * 5 + [1.4] * 4, [1.0] * 9, TAPS, "per tap faster"),
    # faster by the median, but not in the better rounds (the lower quartile): a tie
    ([0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7], [0.72, 0.72, 0.72, 1.0, 1.0, 1.0, 1.0,
                                                    1.0, 1.0], IM2COL, "tie"),
    # faster at both quartiles but in only 4 of 9 paired rounds: a tie
    ([0.1, 0.1, 0.1, 0.1, 0.5, 3.0, 3.0, 3.0, 3.0], [1.0, 1.0, 1.0, 1.0, 0.4, 2.9, 2.9, 2.9,
                                                    2.9], IM2COL, "tie"),
    # faster in every round but by 2 %: a tie
    ([0.98] * 9, [1.0] * 9, IM2COL, "tie"),
]


def test_a_form_is_chosen_only_on_consistent_evidence():
    for taps, im2col, choice, why in DECISIONS:  # one test: each case takes microseconds
        got, reason, ratio, wins = decide(taps, im2col)
        assert got == choice and reason.startswith(why), (taps, reason)


# slow tier (70 s on a 2-core Zen 3): every candidate is a whole-model compile, timed; the
# database tests below read stored choices by default
@pytest.mark.slow
def test_lowerkit_tune_measures_stores_and_is_read_back(tmp_path, capsys):
    factory = tmp_path / "model.py"
    factory.write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                       "from test_tuning import two_convs\n")
    path = tmp_path / "tuning.json"
    assert cli(["tune", f"{factory}:two_convs", "--database", str(path), "--rounds", "3",
                "--no-dispatches"]) == 0  # test_dispatch_tuning.py searches dispatches
    assert "2 convolution shape(s)" in capsys.readouterr().out
    stored = json.loads(path.read_text())["entries"][tuning.cpu_key("cpu")]
    program = next(k for k in stored if k.startswith(f"{tuning.CONVOLUTIONS} "))
    flags = next(k for k in stored if tuning.flag_set_op(k))
    assert set(stored) == {WIDE, THIN, tuning.MATMUL_TILE, program, flags}
    flag_set = stored.pop(flags)  # the whole model, compiled from each ladder rung
    assert flag_set["choice"] in tuning.flag_set_names(), flag_set
    assert len(flag_set["ms"]) >= 4 and max(flag_set["error_over_scale"].values()) <= 1e-4
    strategy = stored.pop(program)  # the whole model, compiled once per strategy
    assert strategy["choice"] in tuning.CONVOLUTION_STRATEGIES, strategy
    assert set(strategy["ms"]) == set(tuning.CONVOLUTION_STRATEGIES), strategy
    assert strategy["compiled_as"][tuning.DATA_TILED].startswith(tuning.DATA_TILED), strategy
    assert max(strategy["error_over_scale"].values()) <= 1e-4
    tile = stored.pop(tuning.MATMUL_TILE)  # the whole model, compiled once per candidate
    assert tile["choice"] in MATMUL_TILE_CANDIDATES and set(tile["ms"]) == set(MATMUL_TILE_CANDIDATES)
    assert max(tile["error_over_scale"].values()) <= 1e-4
    for entry in stored.values():
        assert entry["choice"] in (TAPS, IM2COL) and entry["rounds"] == 3
        assert set(entry["ms"]) == {TAPS, IM2COL} and all(v > 0 for v in entry["ms"].values())
        # both forms were really compiled, and differently
        assert entry["dispatches"][TAPS] != entry["dispatches"][IM2COL], entry
        assert max(entry["error_over_scale"].values()) <= 1e-4
    # stored shapes are not measured again (a compile reading them: the tests above)
    again = lowerkit.tune(*two_convs(), database=path, rounds=3, dispatches=False)
    assert again.measured == [] and again.matmul_tile is None and again.convolutions is None
    assert again.flag_set is None
    assert again.known == {**{k: e["choice"] for k, e in stored.items()},
                           tuning.MATMUL_TILE: tile["choice"], program: strategy["choice"],
                           flags: flag_set["choice"]}


def test_a_malformed_database_is_named_in_the_error(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    path.write_text('{"format": 1, "entries": {"x": {"conv": {"choice": "fastest"}}}}')
    monkeypatch.setenv(tuning.ENV, str(path))
    with pytest.raises(TuningError, match=rf"{path}.*'fastest'.*{tuning.ENV}=off"):
        lowerkit.compile(*two_convs(), cache=False)
    path.write_text("{not json")
    with pytest.raises(TuningError, match=str(path)):
        lowerkit.compile(*two_convs(), cache=False)


# -- the matmul tile: one whole-compile choice per CPU (`tuning.MATMUL_TILE`) ---------------------
TILE_FLAG = "--iree-llvmcpu-matmul-tile-bytes"


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(64, 32).eval(), (torch.randn(8, 64),)


def _flags_seen(monkeypatch) -> list[list[str]]:
    """The iree-compile flags of every compile from here on."""
    from lowerkit import api

    seen: list[list[str]] = []
    real = api.compiler.compile_to_vmfb

    def spy(bytecode, target, flags, **kwargs):
        seen.append(list(flags))
        return real(bytecode, target, flags, **kwargs)

    monkeypatch.setattr(api.compiler, "compile_to_vmfb", spy)
    return seen


def _tile_flags(flags: list[str]) -> list[str]:
    return [f for f in flags if f.startswith(TILE_FLAG)]


def test_a_stored_matmul_tile_reaches_every_compile_for_its_cpu(tmp_path, monkeypatch):
    db = _database(tmp_path, {tuning.MATMUL_TILE: "524288"})
    monkeypatch.setenv(tuning.ENV, str(db.path))
    seen = _flags_seen(monkeypatch)
    model, args = _linear()
    art = lowerkit.compile(model, args, cache=False)
    assert _tile_flags(seen[-1]) == [f"{TILE_FLAG}=524288"], seen[-1]
    assert art.tuned.get(tuning.MATMUL_TILE) == "524288", art.tuned
    # `lowerkit run`'s table says so, apart from convolution forms
    caption = art.stage_table().caption
    assert "matmul tile 524288 bytes" in caption and "convolution" not in caption, caption
    with torch.inference_mode():
        assert compare(art(*args), model(*args)).ok
    # a flag the caller gives wins, and iree-compile never sees the option twice
    lowerkit.compile(model, args, cache=False, iree_flags=[f"{TILE_FLAG}=65536"])
    assert _tile_flags(seen[-1]) == [f"{TILE_FLAG}=65536"], seen[-1]
    # IREE's default stored, or another CPU's choice: no flag
    _database(tmp_path, {tuning.MATMUL_TILE: tuning.IREE_DEFAULT})
    lowerkit.compile(model, args, cache=False)
    assert _tile_flags(seen[-1]) == [], seen[-1]
    other = TuningDatabase(tmp_path / "other.json")
    other.record("iree 0.0 some-other-cpu 000000000000", tuning.MATMUL_TILE, "524288", {})
    other.save()
    monkeypatch.setenv(tuning.ENV, str(other.path))
    lowerkit.compile(model, args, cache=False)
    assert _tile_flags(seen[-1]) == [], seen[-1]


def test_a_changed_matmul_tile_is_never_answered_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path / "cache"))
    model, args = _linear()
    seen = _flags_seen(monkeypatch)
    db = _database(tmp_path, {tuning.MATMUL_TILE: "524288"})
    monkeypatch.setenv(tuning.ENV, str(db.path))
    lowerkit.compile(model, args)
    _database(tmp_path, {tuning.MATMUL_TILE: "1048576"})
    art = lowerkit.compile(model, args)
    assert len(seen) == 2 and _tile_flags(seen[-1]) == [f"{TILE_FLAG}=1048576"], seen
    assert art.tuned.get(tuning.MATMUL_TILE) == "1048576"


def test_a_bad_matmul_tile_in_the_database_is_refused(tmp_path):
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"format": tuning.FORMAT, "entries": {
        "iree 3.13.0 cpu 0": {tuning.MATMUL_TILE: {"choice": "-5"}}}}))
    with pytest.raises(TuningError, match="matmul-tile-bytes"):
        TuningDatabase(path)
    with pytest.raises(TuningError):
        TuningDatabase(tmp_path / "new.json").record("cpu", tuning.MATMUL_TILE, TAPS, {})


@pytest.mark.parametrize("candidate_ms,chosen", [
    (8.0, "2097152"),             # 20 % faster in every round: chosen
    (9.8, tuning.IREE_DEFAULT),   # 2 % faster: within the margin, IREE's default is kept
])
def test_the_matmul_tile_is_chosen_only_when_it_beats_irees_default(monkeypatch, candidate_ms,
                                                                    chosen):
    from lowerkit.tools import tune as tune_module

    rounds = 7
    monkeypatch.setattr(tune_module, "time_interleaved", lambda fns, n: {
        tuning.IREE_DEFAULT: [10.0 + 0.01 * r for r in range(n)],
        "2097152": [candidate_ms + 0.01 * r for r in range(n)]})
    model, args = _linear()
    m = tune_module.measure_matmul_tiles(model, args, rounds=rounds,
                                         candidates=(tuning.IREE_DEFAULT, "2097152"))
    assert m.choice == chosen, m.why
    assert set(m.ms) == {tuning.IREE_DEFAULT, "2097152"}
    assert max(m.error_over_scale.values()) < 1e-5, m.error_over_scale


# -- the flag set: one compile ladder rung per program (`tuning.FLAG_SET`) ------------------------
def _program_key(model, args) -> str:
    return lowerkit.compile(model, args, cache=False).compile_stats["program"]


def test_the_program_key_keeps_the_architecture_and_shapes_not_the_weights():
    from lowerkit.tools.tune import program_key_of

    model, args = _linear()
    key = _program_key(model, args)
    assert program_key_of(model, args) == key  # the tuner's: without iree-compile
    torch.manual_seed(1)
    assert _program_key(torch.nn.Linear(64, 32).eval(), args) == key  # other weights
    assert _program_key(model, (torch.randn(4, 64),)) != key          # another shape
    assert _program_key(torch.nn.Linear(64, 16).eval(), args) != key  # another layer


def test_a_stored_flag_set_starts_that_programs_compile_at_its_rung(tmp_path, monkeypatch):
    model, args = _linear()
    key = _program_key(model, args)
    rung = tuning.flag_set_names()[-1]  # IREE's plain defaults
    db = _database(tmp_path, {f"{tuning.FLAG_SET} {key}": rung})
    monkeypatch.setenv(tuning.ENV, str(db.path))
    art = lowerkit.compile(model, args, cache=False)
    assert art.compile_stats["rung"] == rung and art.tuned.get(tuning.FLAG_SET) == rung, (
        art.compile_stats["rung"], art.tuned)
    assert f"flag set '{rung}'" in art.stage_table().caption
    with torch.inference_mode():
        assert compare(art(*args), model(*args)).ok
    # another program, or another CPU's record: the fast rung
    other = lowerkit.compile(torch.nn.Linear(64, 16).eval(), args, cache=False)
    assert other.compile_stats["rung"] == "fast" and tuning.FLAG_SET not in other.tuned
    elsewhere = _database(tmp_path / "elsewhere", {f"{tuning.FLAG_SET} {key}": rung},
                          cpu="iree 0.0 another-cpu 0")
    monkeypatch.setenv(tuning.ENV, str(elsewhere.path))
    assert lowerkit.compile(model, args, cache=False).compile_stats["rung"] == "fast"


def test_a_changed_flag_set_is_never_answered_from_the_cache(tmp_path, monkeypatch):
    model, args = _linear()
    key = _program_key(model, args)
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path / "cache"))
    names = tuning.flag_set_names()
    db = _database(tmp_path, {f"{tuning.FLAG_SET} {key}": names[1]})
    monkeypatch.setenv(tuning.ENV, str(db.path))
    assert lowerkit.compile(model, args).compile_stats["rung"] == names[1]
    _database(tmp_path, {f"{tuning.FLAG_SET} {key}": names[-1]})
    assert lowerkit.compile(model, args).compile_stats["rung"] == names[-1]


def test_a_flag_set_that_is_not_a_ladder_rung_is_refused(tmp_path):
    with pytest.raises(TuningError, match="IREE defaults"):
        TuningDatabase(tmp_path / "t.json").record("cpu", f"{tuning.FLAG_SET} 0123", "fastest",
                                                   {})


@pytest.mark.parametrize("defaults_ms,chosen", [
    (8.0, "IREE defaults"),   # 20 % faster in every round: chosen
    (9.8, "fast"),            # 2 % faster: within the margin, the fast rung is kept
])
def test_the_flag_set_is_chosen_only_when_it_beats_the_fast_rung(monkeypatch, defaults_ms,
                                                                 chosen):
    from lowerkit.tools import tune as tune_module

    names = tune_module.flag_set_candidates("cpu")
    assert names[0] == "fast" and names[-1] == "IREE defaults", names

    def timed(fns, n):
        assert set(fns) == set(names)  # every rung compiled and timed
        return {name: [(defaults_ms if name == "IREE defaults" else 10.0) + 0.01 * r
                       for r in range(n)] for name in fns}

    monkeypatch.setattr(tune_module, "time_interleaved", timed)
    model, args = _linear()
    m = tune_module.measure_flag_sets(model, args, rounds=7)
    assert m.choice == chosen, m.why
    assert m.key == f"{tuning.FLAG_SET} {_program_key(model, args)}"
    assert m.compiled_as["IREE defaults"] == "IREE defaults", m.compiled_as
    assert max(m.error_over_scale.values()) < 1e-5, m.error_over_scale


class ConvNet(torch.nn.Module):
    """A dense 3x3 convolution the rule writes per tap, then a depthwise one."""

    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x):
        return self.depthwise(torch.relu(self.dense(x)))


def test_data_tiled_convolutions_go_whole_with_irees_flags_and_match_eager(monkeypatch):
    """`tuning.forced_convolutions(DATA_TILED)`: dense 2-D convolutions reach IREE whole, with
    the flags that data-tile them channels-last; depthwise ones keep the per-tap rule; a
    non-CPU target gets neither."""
    from test_decompositions import lowered_ops

    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 16, 12, 12)
    with tuning.forced_convolutions(tuning.DATA_TILED), tuning.applied("cpu"):
        ops = lowered_ops(model, (x,))
    assert "linalg.conv_2d_nchw_fchw" in ops, ops
    assert "linalg.depthwise_conv_2d_nchw_chw" not in ops, ops
    assert "linalg.conv_2d_nchw_fchw" not in lowered_ops(model, (x,))  # the rule: per tap
    with tuning.forced_convolutions(tuning.DATA_TILED), tuning.applied("vulkan"):
        assert "linalg.conv_2d_nchw_fchw" not in lowered_ops(model, (x,))
        assert not any("data-tiling-ops" in f for f in tuning.applied_flags())
    seen = _flags_seen(monkeypatch)
    art = lowerkit.compile(model, (x,), cache=False, convolutions=tuning.DATA_TILED)
    assert all(f in seen[-1] for f in tuning.DATA_TILED_FLAGS), seen[-1]
    assert "dense 2-D convolutions: data-tiled" in art.stage_table().caption
    with torch.inference_mode():
        check = compare(art(x), model(x))
    assert check.ok, check.message
    with pytest.raises(TuningError, match="strategy"):  # im2col is askable; this is not
        with tuning.forced_convolutions("winograd"):
            pass


@pytest.mark.parametrize("cpu,direct", [("x86-64-v3", True), ("znver4", False)])
def test_data_tiled_convolutions_asked_for_a_cpu_without_avx512_warn(cpu, direct):
    """IREE 3.13 data-tiles convolutions only for 512-bit vectors: asked for an AVX2 CPU, the
    compile warns and its stage table says the convolutions are direct ones. Compiled for a
    named CPU, not run."""
    import warnings

    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 16, 12, 12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        art = lowerkit.compile(model, (x,), target=f"cpu:{cpu}", cache=False,
                               convolutions=tuning.DATA_TILED)
    said = [str(w.message) for w in caught if "without AVX-512" in str(w.message)]
    assert len(said) == (1 if direct else 0), [str(w.message) for w in caught]
    caption = art.stage_table().caption
    assert "dense 2-D convolutions: data-tiled" in caption, caption
    assert ("direct convolutions" in caption) == direct, caption


def test_every_convolution_whole_when_asked_and_matches_eager(tmp_path):
    """``convolutions="im2col"``: every convolution, dense and depthwise, reaches IREE whole,
    fewer dispatches than by the rule; the stage table says so and the result matches eager.
    `lowerkit tune` never stores it."""
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(1, 16, 12, 12)
    rule = lowerkit.compile(model, (x,), cache=False)
    art = lowerkit.compile(model, (x,), cache=False, convolutions=tuning.IM2COL)
    assert rule.records[0].ops.get("torch.aten.convolution") is None, rule.records[0].ops
    assert art.records[0].ops.get("torch.aten.convolution") == 2, art.records[0].ops
    assert art.compile_stats["dispatches"] < rule.compile_stats["dispatches"]
    assert "dense 2-D convolutions: im2col, as asked" in art.stage_table().caption
    with torch.inference_mode():
        check = compare(art(x), model(x))
    assert check.ok, check.message
    with pytest.raises(TuningError):
        TuningDatabase(tmp_path / "t.json").record("cpu", "convolutions 0", tuning.IM2COL, {})


class DenseNet(torch.nn.Module):
    """Two dense 3x3 convolutions with 37.7 and 75.5 MFLOP of work, or (``depthwise``) a
    depthwise one after the first."""

    def __init__(self, depthwise: bool = False, asymmetric: bool = False):
        super().__init__()
        self.first = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.second = (torch.nn.Conv2d(32, 32, 3, padding=1, groups=32) if depthwise
                       else torch.nn.Conv2d(32, 32, (1, 7), padding=(0, 3)) if asymmetric
                       else torch.nn.Conv2d(32, 32, 3, padding=1))

    def forward(self, x):
        return self.second(torch.relu(self.first(x)))


ZEN4 = "cpu:znver4"


def test_without_a_choice_lowerkit_data_tiles_a_dense_convolution_net_only(tmp_path):
    """`tuning.choose_convolutions`: where nobody chose, a CPU-only compile for an AVX-512 CPU
    of a net whose 2-D convolutions are dense and carry `AUTO_MIN_FLOPS` sends them whole for
    data tiling; a net with a depthwise one or a non-square kernel, a net with too little work,
    a CPU without AVX-512,
    another target, a caller's ``rule`` and the tuner's forced forms keep the rule. Imports
    only, for named CPUs: the same on every host."""
    torch.manual_seed(0)
    big, small = torch.randn(1, 16, 64, 64), torch.randn(1, 16, 12, 12)
    dense, mixed = DenseNet().eval(), DenseNet(depthwise=True).eval()

    def convolutions_left(model, x):  # whole ones stay aten.convolution through the import
        return lowerkit.op_histogram(import_program(model, (x,)).module).get(
            "torch.aten.convolution", 0)

    def whole(model, x, target=ZEN4, database=None):
        with tuning.applied(target, database):
            return convolutions_left(model, x) >= 1 and tuning.dense_convolutions_whole()

    assert whole(dense, big)
    assert not whole(dense, big, "cpu:x86-64-v3")  # AVX2: 6.5x slower on ResNet-50 (Zen 3)
    assert not whole(dense, small)  # 5.3 MFLOP: below AUTO_MIN_FLOPS
    assert not whole(mixed, big)
    assert not whole(DenseNet(asymmetric=True).eval(), big)  # 1x7: Inception-v3 3.0x slower
    assert not whole(DenseNet().to(torch.bfloat16), big.to(torch.bfloat16))  # measured in f32
    assert not whole(dense, big, "vulkan")
    assert not whole(dense, big, "cpu:znver4+vulkan")  # an AVX-512 CPU, and a GPU beside it
    with tuning.forced_convolutions(tuning.RULE):
        assert not whole(dense, big)
    with tuning.forced(TAPS):
        assert not whole(dense, big)
    measured = TuningDatabase(tmp_path / "tuning.json")  # a shape measured on this CPU
    measured.record(tuning.cpu_key(ZEN4), "conv2d in1x32x64x64 w32x32x3x3 s1x1 p1x1 d1x1 bias",
                    TAPS, {})
    assert not whole(dense, big, database=measured)
    assert convolutions_left(dense, big) == 0  # outside a compile: the rule, per tap


class FusedThenDepthwise(torch.nn.Module):
    """EfficientNet-V2's shape in small: two dense 3x3 convolutions (113 MFLOP), then a
    depthwise one (2.4 MFLOP, 2 % of the work); ``dilated`` adds a dense 3x3 one of dilation 2
    (75.5 MFLOP), which stays per tap too."""

    def __init__(self, dilated: bool = False):
        super().__init__()
        self.dense = DenseNet()
        self.depthwise = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.dilated = torch.nn.Conv2d(32, 32, 3, padding=2, dilation=2) if dilated else None

    def forward(self, x):
        y = self.depthwise(torch.relu(self.dense(x)))
        return self.dilated(y) if self.dilated is not None else y


def test_a_net_with_a_little_depthwise_work_is_data_tiled_on_avx512(tmp_path):
    """`AUTO_MAX_PER_TAP_SHARE`: a net whose depthwise convolutions are a small share of its
    convolution work is data-tiled where a dense net would be (EfficientNet-V2-S ran 1.4x
    faster so on a Zen 4); a larger depthwise share (`DenseNet(depthwise=True)`, 6 %) or a
    dilated one beside it keeps the rule, and so does a CPU without AVX-512."""
    from lowerkit.ingress.decompositions import conv_work

    x = torch.randn(1, 16, 64, 64)

    def work_of(model):
        return conv_work(torch.export.export(model.eval(), (x,)).graph)

    def chosen(work, target=ZEN4):
        with tuning.applied(target, TuningDatabase(tmp_path / "none.json")):
            tuning.choose_convolutions(work)
            return tuning.dense_convolutions_whole()

    light, mixed = work_of(FusedThenDepthwise()), work_of(DenseNet(depthwise=True))
    dilated = work_of(FusedThenDepthwise(dilated=True))
    assert light.grouped and light.per_tap_share == pytest.approx(2.36 / 115.6, rel=0.01)
    assert mixed.per_tap_share > tuning.AUTO_MAX_PER_TAP_SHARE
    assert dilated.per_tap_share > 0.4  # the dilated one counts as per tap
    assert chosen(light) and not chosen(mixed) and not chosen(dilated)
    assert not chosen(light, "cpu:x86-64-v3")


def test_lowerkits_own_data_tiled_choice_compiles_says_so_and_matches_eager(monkeypatch):
    """On this host: data-tiled where its CPU has AVX-512, the rule where it has not."""
    seen = _flags_seen(monkeypatch)
    torch.manual_seed(0)
    model, x = DenseNet().eval(), torch.randn(1, 16, 64, 64)
    art = lowerkit.compile(model, (x,), cache=False)
    tiled = tuning.data_tiling_pays("cpu")
    assert all((f in seen[-1]) == tiled for f in tuning.DATA_TILED_FLAGS), seen[-1]
    said = "dense 2-D convolutions: data-tiled (lowerkit's choice" in art.stage_table().caption
    assert said == tiled, art.stage_table().caption
    with torch.inference_mode():
        check = compare(art(x), model(x))
    assert check.ok, check.message


class _Compiled:
    """What `tools.tune._whole_model` returns per candidate, for a decision without compiles."""

    def __init__(self, convolutions: str | None = None):
        self.compile_stats = {"convolutions": convolutions} if convolutions else {}
        self.max_rel_error = 1e-7


@pytest.mark.parametrize("data_tiled_ms,rejected,chosen,why", [
    (8.0, False, tuning.DATA_TILED, "data-tiled faster"),
    (12.0, False, tuning.RULE, "the rule faster"),
    (10.1, False, tuning.DATA_TILED, "a tie"),   # data-tiled compiled faster, below
    (8.0, True, tuning.RULE, "iree-compile rejected data-tiled"),
])
def test_the_convolution_strategy_is_chosen_on_evidence_and_a_tie_goes_to_the_faster_compile(
        monkeypatch, data_tiled_ms, rejected, chosen, why):
    """`tools.tune.measure_convolutions`'s decision on given timings (its compiles are the CLI
    test's): a win by the margin, else the faster compile; a rejected data-tiled compile is
    the rule's code, whatever it timed."""
    from lowerkit.tools import tune as tune_module

    def whole_model(fn, args, kwargs, candidates, target, rounds, dynamic_shapes, what):
        assert set(candidates) == set(tuning.CONVOLUTION_STRATEGIES)
        tiled_as = "by the rule: iree-compile rejected data-tiled" if rejected else tuning.DATA_TILED
        return ({tuning.RULE: [10.0 + 0.01 * r for r in range(rounds)],
                 tuning.DATA_TILED: [data_tiled_ms + 0.01 * r for r in range(rounds)]},
                {tuning.RULE: 9.0, tuning.DATA_TILED: 4.0},
                {tuning.RULE: _Compiled(), tuning.DATA_TILED: _Compiled(tiled_as)},
                {tuning.RULE: _Compiled(), tuning.DATA_TILED: _Compiled()})

    monkeypatch.setattr(tune_module, "_whole_model", whole_model)
    m = tune_module.measure_convolutions(None, "convolutions abc", (), rounds=7)
    assert m.choice == chosen and m.why.startswith(why), m.why
    assert m.key == "convolutions abc" and set(m.ms) == set(tuning.CONVOLUTION_STRATEGIES)


def test_a_measured_convolution_strategy_decides_later_compiles_of_that_program(tmp_path,
                                                                              monkeypatch):
    """An entry `lowerkit tune` stores for one program's convolutions on this CPU beats
    lowerkit's own choice both ways, and only for a program with those convolutions."""
    from lowerkit.tools import tune as tune_module

    path = tmp_path / "tuning.json"
    monkeypatch.setenv(tuning.ENV, str(path))
    seen = _flags_seen(monkeypatch)
    torch.manual_seed(0)
    model, big, small = DenseNet().eval(), torch.randn(1, 16, 64, 64), torch.randn(1, 16, 12, 12)
    db = TuningDatabase(path)
    big_key = tune_module.program_of(model, (big,))[1].key
    db.record(tuning.cpu_key("cpu"), big_key, tuning.RULE, {})  # lowerkit alone: data-tiled
    db.record(tuning.cpu_key("cpu"), tune_module.program_of(model, (small,))[1].key,
              tuning.DATA_TILED, {})   # and this one: the rule
    db.save()

    def import_in_a_compile(net, x):  # what the compile's import decides, without compiling
        with tuning.applied("cpu") as used:
            import_program(net, (x,))
            return tuning.dense_convolutions_whole(), used

    assert import_in_a_compile(model, big) == (False, {big_key: tuning.RULE})
    assert not import_in_a_compile(DenseNet(depthwise=True).eval(), small)[0]  # not its entry
    tiled = lowerkit.compile(model, (small,), cache=False)
    assert all(f in seen[-1] for f in tuning.DATA_TILED_FLAGS), seen[-1]
    caption = tiled.stage_table().caption
    assert f"data-tiled ({tuning.MEASURED}" in caption, caption
    assert "this program's convolutions data-tiled" in caption, caption
    with torch.inference_mode():
        check = compare(tiled(small), model(small))
    assert check.ok, check.message


_DEEP_STACK = """
import torch, lowerkit
from lowerkit.runtime.numerics import compare
from lowerkit.zoo import vision
torch.manual_seed(0)
model = vision._randomise_batchnorm(vision.ResNetBottleneck(layers=(1, 1), widths=(64, 128))).eval()
x = torch.randn(1, 3, 448, 448)
art = lowerkit.compile(model, (x,), cache=False, convolutions="data-tiled")
print("convolutions:", art.compile_stats.get("convolutions"), "rung:", art.compile_rung)
with torch.inference_mode():
    want = model(x)
    for _ in range(4):  # local-task's workers and local-sync's caller both run it (`_HostPath`)
        check = compare(art(x), want)
        assert check.ok, check.message
print("calls ok")
"""


# slow: 42 s on a 2-core Zen 3, where data-tiled code is slow (it is no longer chosen there);
# the stack limits it guards are flags that every data-tiled compile carries
@pytest.mark.slow
def test_data_tiled_code_that_keeps_more_stack_than_irees_defaults_compiles_and_runs():
    """ResNet-50's first residual add, data-tiled at 448x448 (its first two stages are enough),
    keeps 129 KiB on a worker's stack: more than iree-compile's 32 KiB (it was rejected and
    compiled by the rule) and than the 128 KiB IREE gives its workers (the process died of
    SIGSEGV). A child process, so that a worker running off its stack fails this test rather
    than the suite."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _DEEP_STACK], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    # on a CPU without AVX-512 the stage also says IREE compiles them as direct convolutions
    assert done.stdout.startswith("convolutions: data-tiled"), done.stdout
    assert "rung: fast" in done.stdout, done.stdout
    assert "calls ok" in done.stdout


# slow on a 2-core Zen 3 (the suite's budget is 20 min): 15 s;
# test_a_changed_choice_is_not_answered_from_the_cache keeps forced and stored forms apart by
# default
@pytest.mark.slow
def test_the_convolution_strategy_keys_the_cache(tmp_path, monkeypatch):
    """A program compiled per tap is never answered for the data-tiled strategy, or back."""
    monkeypatch.setenv("LOWERKIT_CACHE_DIR", str(tmp_path / "cache"))
    seen = _flags_seen(monkeypatch)
    model, x = ConvNet().eval(), torch.randn(1, 16, 12, 12)
    lowerkit.compile(model, (x,))
    with tuning.forced_convolutions(tuning.DATA_TILED):
        lowerkit.compile(model, (x,))
    assert len(seen) == 2 and tuning.DATA_TILED_FLAGS[1] in seen[-1], seen


class _SqueezeNet(torch.nn.Module):
    """Convolutions over dynamic sizes beside one over a static 1x1 map (after a global pool):
    the shapes that key the convolution strategy mix size names and ints."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.body = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.squeeze = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.relu(self.body(torch.relu(self.stem(x))))
        return y * torch.sigmoid(self.squeeze(y.mean((2, 3), keepdim=True))).mean(1, True)


def test_a_convolution_net_over_dynamic_sizes_compiles_and_matches_eager():
    torch.manual_seed(0)
    model, auto = _SqueezeNet().eval(), torch.export.Dim.AUTO
    art = lowerkit.compile(model, (torch.randn(2, 3, 20, 24),),
                           dynamic_shapes=({0: auto, 2: auto, 3: auto},))
    for shape in ((2, 3, 20, 24), (3, 3, 17, 9)):
        x = torch.randn(*shape)
        assert compare(art(x), model(x)).ok


def test_a_net_with_a_non_square_kernel_keeps_the_rule_on_avx512(tmp_path):
    """The default tier's check of `choose_convolutions`' non-square rule (the import-level test
    above is in the slow tier): `conv_work` marks a 1x7 kernel, and lowerkit then leaves a net
    that would otherwise be data-tiled on an AVX-512 CPU to the rule (Inception-v3 ran 3.0x
    slower data-tiled on a Zen 4)."""
    from lowerkit.ingress.decompositions import conv_work

    def work_of(kernel):
        conv = torch.nn.Conv2d(32, 32, kernel, padding=tuple(k // 2 for k in kernel))
        return conv_work(torch.export.export(conv.eval(), (torch.randn(1, 32, 64, 64),)).graph)

    square, wide = work_of((3, 3)), work_of((1, 7))
    assert not square.asymmetric and wide.asymmetric
    assert square.dense_flops >= tuning.AUTO_MIN_FLOPS and wide.dense_flops >= tuning.AUTO_MIN_FLOPS

    def chosen(work):
        with tuning.applied(ZEN4, TuningDatabase(tmp_path / "none.json")):
            tuning.choose_convolutions(work)
            return tuning.dense_convolutions_whole()

    assert chosen(square) and not chosen(wide)


class VideoBlock(torch.nn.Module):
    """R3D-18's block in small: two dense 3x3x3 convolutions (28 MFLOP each) with BatchNorm."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv3d(16, 16, 3, padding=1, bias=False), torch.nn.BatchNorm3d(16),
            torch.nn.ReLU(), torch.nn.Conv3d(16, 16, 3, padding=(1, 1, 1)))

    def forward(self, x):
        return self.body(x)


def test_a_3d_convolution_net_is_weighed_as_the_2d_convolutions_it_becomes(tmp_path):
    """`conv_work` counts a 3-D convolution's work (its by-depth 2-D convolutions'), so that
    on an AVX-512 CPU those go whole to data tiling (R3D-18 on a Zen 4: 1.18 s a call per tap,
    0.50 s data-tiled); the data-tiled code matches eager. Before, a 3-D net weighed nothing
    and kept the per-tap rule."""
    from lowerkit.ingress.decompositions import conv_work

    torch.manual_seed(0)
    block, x = VideoBlock().eval(), torch.randn(1, 16, 4, 24, 24)
    work = conv_work(torch.export.export(block, (x,)).graph)
    assert work.dense_flops >= 2 * tuning.AUTO_MIN_FLOPS and not work.asymmetric
    with tuning.applied(ZEN4, TuningDatabase(tmp_path / "none.json")):
        ops = lowerkit.op_histogram(import_program(block, (x,)).module)
        assert tuning.dense_convolutions_whole()
    assert ops.get("torch.aten.convolution", 0) == 2 * 3  # one whole 2-D one per kernel depth
    art = lowerkit.compile(block, (x,), convolutions="data-tiled")
    assert art.compile_rung.startswith("fast")
    with torch.no_grad():
        assert compare(art(x), block(x)).ok  # the f32 default, relative to the scale
