"""Plant known faults one at a time and check that the tests named for each catch it.

    .venv/bin/python scripts/planted_faults.py            # every fault
    .venv/bin/python scripts/planted_faults.py cache-cpu  # some of them, by name

Each fault is a small edit of lowerkit (or an environment variable) that breaks what a test is
named for; the script applies it to the working tree, runs those tests, and restores the file
(the tree must be clean: it refuses otherwise). A fault the tests do not catch is printed as
MISSED and the exit status is 1. The suite itself (scripts/test) runs the unplanted code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Fault:
    name: str
    what: str
    tests: list[str]
    file: str = ""
    old: str = ""
    new: str = ""
    env: dict = field(default_factory=dict)


FAULTS = [
    Fault("fuzz-verdict", "every exception counts as 'unsupported' (the old keyword guess, at its worst)",
          ["test/python/test_fuzz.py::test_a_bug_in_lowerkits_own_pass_is_an_error",
           "test/python/test_fuzz.py::test_an_iree_compile_failure_is_an_error"],
          "python/lowerkit/tools/fuzz.py",
          "    except UnsupportedError as e:  # a deliberate refusal",
          "    except Exception as e:  # a deliberate refusal"),
    Fault("f32-tolerance", "float32's default tolerance loosened to 2e-2 of scale",
          ["test/python/test_numerics.py::test_one_percent_error_at_scale_005_is_caught"],
          "python/lowerkit/runtime/numerics.py",
          'torch.float32: Tolerance(1e-5, "float32:', 'torch.float32: Tolerance(2e-2, "float32:'),
    Fault("cache-cpu", "the cache key forgets which CPU 'host' is",
          ["test/python/test_cache.py::test_two_host_cpus_never_share_an_entry"],
          "python/lowerkit/cache.py",
          '"host_cpu": targets.resolve_host_cpu(host_flags) if host_flags else None,', '"host_cpu": None,'),
    Fault("replay-pass", "a registered pass's replay command names another (working) pass",
          ["test/python/test_replay.py::test_printed_command_reproduces_the_failure"],
          "python/lowerkit/stages/stage.py",
          "--pass={self.name} {shlex.quote(str(path))}", "--pass=canonicalize {shlex.quote(str(path))}"),
    Fault("scan-first-only", "a failing stage reports its first op only (no scan for the others)",
          ["test/python/test_failures.py::test_every_unsupported_aten_op_at_once_with_its_line"],
          "python/lowerkit/stages/scan.py",
          '    """Take ops out of their module, each replaced by an operand of its result\'s type."""\n',
          '    """Take ops out of their module, each replaced by an operand of its result\'s type."""\n'
          "    return False\n"),
    Fault("check-without-fixes", "lowerkit check skips the target's fixes",
          ["test/python/test_check.py::test_check_runs_the_stages_compile_runs_for_the_target"],
          "python/lowerkit/tools/check.py",
          "    if target is not None:\n        after =", "    if False:\n        after ="),
    Fault("opt-imports-torch", "the stage engine imports torch (lowerkit-opt then takes seconds)",
          ["test/python/test_import_graph.py::test_mlir_only_work_does_not_import_torch"],
          "python/lowerkit/stages/stage.py",
          "from .. import registry\n", "from .. import registry\nimport torch  # noqa: F401\n"),
    Fault("import-cycle", "the registry imports the stage engine at the top (a cycle)",
          ["test/python/test_import_graph.py::test_no_import_cycle_between_lowerkits_modules"],
          "python/lowerkit/registry.py",
          "from .passes import PASSES\n", "from .passes import PASSES\nfrom .stages import stage  # noqa: F401\n"),
    Fault("wheel-drops-package", "pyproject leaves lowerkit.tools out of the wheel",
          ["test/python/test_packaging.py::test_pyproject_ships_every_package_and_dialect"],
          "pyproject.toml", '"lowerkit.stages",\n    "lowerkit.tools",', '"lowerkit.stages",'),
    Fault("readme-figure", "a README figure edited by hand",
          ["test/python/test_readme_figures.py::test_readme_matches_the_stored_results"],
          "README.md", "| **geomean, 26 models** | | | | **1.46×**", "| **geomean, 26 models** | | | | **1.56×**"),
    Fault("backend-always-eager", "the torch.compile backend runs every graph eagerly",
          ["test/python/test_backend.py::test_each_subgraph_of_a_program_with_a_graph_break_runs_in_lowerkit",
           "test/python/test_backend.py::test_twenty_sgd_steps_match_eager"],
          "python/lowerkit/backend.py",
          "    dump_dir = options.get(\"dump_dir\")\n    try:\n",
          "    dump_dir = options.get(\"dump_dir\")\n    try:\n        raise LowerkitError(\"planted\")\n"),
    Fault("backend-no-symint", "a SymInt input is refused (dynamic graphs run eagerly)",
          ["test/python/test_backend.py::test_three_batch_sizes_make_two_compiles_and_the_dynamic_one_is_reused"],
          "python/lowerkit/ingress/graph.py",
          "    if scalars and isinstance(value, torch.SymInt):", "    if False:"),
    Fault("backend-unowned-graph", "the graph is imported without a module owning its constants",
          ["test/python/test_backend.py::test_zoo_models_through_the_backend_match_eager"],
          "python/lowerkit/ingress/graph.py",
          "    graph = torch.fx.GraphModule(gm, graph).graph\n", ""),
    Fault("backend-strict-ignored", "strict=True runs a refused graph eagerly anyway",
          ["test/python/test_backend.py::test_strict_raises_instead_of_running_eagerly"],
          "python/lowerkit/backend.py", '        if options.get("strict"):\n', "        if False:\n"),
    Fault("backend-no-reason", "a graph run eagerly does not say why",
          ["test/python/test_backend.py::test_a_graph_lowerkit_refuses_runs_eagerly_and_says_why"],
          "python/lowerkit/backend.py",
          '"eager", time.perf_counter() - start, str(e),', '"eager", time.perf_counter() - start, "?",'),
    Fault("explain-no-line", "explain's breaks lose the user's line",
          ["test/python/test_backend.py::test_explain_shows_the_breaks_and_where_each_graph_ran"],
          "python/lowerkit/backend.py",
          'where = f" at {frame.filename}:{frame.lineno}" if frame is not None else ""', 'where = ""'),
    Fault("backend-freeze-ignored", "options={'freeze': True} compiles nothing in",
          ["test/python/test_backend.py::test_freeze_compiles_parameters_in_as_constants"],
          "python/lowerkit/backend.py",
          'frozen = _freezable(gm, example_inputs) if opts.get("freeze") else []', "frozen = []"),
    Fault("backend-freeze-trained", "freeze compiles in parameters that need gradients",
          ["test/python/test_backend.py::test_freeze_keeps_what_needs_gradients_or_is_mutated"],
          "python/lowerkit/backend.py",
          "        if value.requires_grad and torch.is_grad_enabled():\n            continue\n", ""),
    Fault("inputs-zero-copy", "host inputs handed to IREE without a copy (DLPack)",
          ["test/python/test_runtime_safety.py::test_a_program_sorting_its_input_leaves_the_callers_tensor_alone",
           "test/python/test_runtime_safety.py::test_a_result_never_aliases_an_input"],
          "python/lowerkit/runtime/executable.py",
          "            push(alloc(memory, usage, device, arr, element_types[t.dtype]))\n",
          "            push(device.from_dlpack_capsule(torch.utils.dlpack.to_dlpack(t)))\n"),
    Fault("ladder-off", "a rejected fast configuration fails instead of trying a safer one",
          ["test/python/test_compile_ladder.py::test_each_rung_compiles_what_the_faster_ones_rejected",
           "test/python/test_backend.py::test_training_with_changing_batch_sizes_runs_every_graph_in_lowerkit"],
          "python/lowerkit/iree/compiler.py",
          "    rungs = ladder(target.compile_flags())\n", "    rungs = ladder(target.compile_flags())[:1]\n"),
    Fault("backend-size-outputs", "a SymInt output is refused (the graph runs eagerly)",
          ["test/python/test_backend.py::test_sizes_a_graph_returns_are_each_calls_own"],
          "python/lowerkit/ingress/graph.py",
          "        else _size_leaf(v, f\"output {i}\", symbols) if isinstance(v, (int, torch.SymInt))\n", ""),
    Fault("backend-symbolic-expand", "expand keeps a symbolic size torch-mlir cannot see is unchanged",
          ["test/python/test_backend_generate.py::test_gpt2_generate_matches_eager_with_every_graph_in_lowerkit"],
          "python/lowerkit/ingress/graph.py",
          "        elif node.target is aten.expand.default:\n", "        elif False:\n"),
    Fault("backend-true-divide", "true_divide.Tensor (dynamic=True's Python floats) reaches torch-mlir",
          ["test/python/test_backend_generate.py::test_gpt2_generate_dynamic_true_matches_eager_with_every_graph_in_lowerkit"],
          "python/lowerkit/ingress/graph.py",
          "            node.target = aten.div.Tensor\n", "            pass\n"),
    Fault("nan-self-compare", "x == x of floats left to torch-mlir's fold (True for NaN)",
          ["test/python/test_defects.py::test_x_equals_x_is_false_for_nan"],
          "python/lowerkit/passes/self_compare.py",
          "    if x != y:\n        return None\n", "    return None\n"),
    Fault("unclamped-unsafe-index", "_unsafe_index left unclamped (nearest upsampling reads past the input)",
          ["test/python/test_defects.py::test_nearest_upsampling_whose_scales_disagree_with_its_size"],
          "python/lowerkit/ingress/decompositions.py",
          "        aten._unsafe_index.Tensor: _unsafe_index,\n", ""),
    Fault("threshold-backward-dtype", "threshold_backward left to PyTorch's decomposition (grad's dtype)",
          ["test/python/test_defects.py::test_threshold_backward_of_mixed_dtypes_promotes_as_eager"],
          "python/lowerkit/ingress/decompositions.py",
          "        aten.threshold_backward.default: _threshold_backward,\n", ""),
    Fault("f64-constants-kept", "f64 constants narrowed by truncf left for IREE",
          ["test/python/test_defects.py::test_python_float_arguments_narrowed_from_f64"],
          "python/lowerkit/passes/f64_constants.py",
          "    module_op.walk(visit)\n", "    pass\n"),
    Fault("kthvalue-topk", "kthvalue left to torch-mlir (a topk IREE rejects)",
          ["test/python/test_defects.py::test_kthvalue"],
          "python/lowerkit/ingress/decompositions.py",
          "        aten.kthvalue.default: _kthvalue,\n", ""),
    Fault("vulkan-long-sorts", "a sort longer than 256 runs on Vulkan (IREE leaves rows unsorted)",
          ["test/python/test_defects.py::test_long_sorts_are_refused_on_vulkan_not_answered_wrong"],
          "python/lowerkit/passes/sort_guard.py",
          "        if length is None or length > MAX_SORT:\n", "        if False:\n"),
    Fault("constant-read-twice", "a constant used twice reaches torch-mlir's importer as is",
          ["test/python/test_backend.py::test_freeze_takes_a_weight_used_twice"],
          "python/lowerkit/ingress/graph.py", "    _read_constants_once(graph)\n", ""),
    Fault("constant-in-list", "a frozen tensor in a list argument reaches torch-mlir's importer as is",
          ["test/python/test_constant_lists.py"],
          "python/lowerkit/ingress/importer.py", "    read_list_constants(exported)\n", ""),
    Fault("ecosystem-decoder-cache", "the ecosystem's decoders built with their cache (a DynamicCache output)",
          ["test/python/test_ecosystem_zoo.py::test_ecosystem_model_matches_eager[gpt2]"],
          "python/lowerkit/zoo/ecosystem.py",
          "cfg = getattr(tf, config_name)(vocab_size=_VOCAB, use_cache=False, **config)\n    model = _seeded(lambda: getattr(tf, model_name)(cfg))\n    return model, (_ids(),)\n",
          "cfg = getattr(tf, config_name)(vocab_size=_VOCAB, use_cache=True, **config)\n    model = _seeded(lambda: getattr(tf, model_name)(cfg))\n    return model, (_ids(),)\n"),
    Fault("no-torchvision-patch", "torchvision's op schemas are not defined: its import (and transformers') fails",
          ["test/python/test_ecosystem_zoo.py::test_ecosystem_model_matches_eager[gpt2]"],
          "python/lowerkit/zoo/ecosystem.py", "        lib.define(schema)\n", "        pass\n"),
    Fault("ecosystem-table-missing", "lowerkit zoo --ecosystem prints the hand-written zoo only",
          ["test/python/test_cli_zoo.py::test_the_ecosystem_table_comes_beside_the_zoo_with_the_rung"],
          "python/lowerkit/cli/zoo.py", "        entries += ecosystem_models(fast_only=not args.slow)\n",
          "        pass\n"),
    Fault("zoo-table-no-rung", "lowerkit zoo's table leaves the compile rung out",
          ["test/python/test_cli_zoo.py::test_the_ecosystem_table_comes_beside_the_zoo_with_the_rung"],
          "python/lowerkit/cli/zoo.py", 'stage + expected, r.rung or "-", err', 'stage + expected, "-", err'),
    Fault("ecosystem-zoo-short", "the ecosystem zoo loses a family the issue names (Falcon)",
          ["test/python/test_ecosystem_zoo.py::test_ecosystem_zoo_covers_the_issue_s_families"],
          "python/lowerkit/zoo/ecosystem.py", '    _e("falcon", "transformers", note=_NO_CACHE),\n', ""),
    Fault("backend-options-unchecked", "a misspelt option is accepted silently",
          ["test/python/test_backend.py::test_unknown_option_is_refused"],
          "python/lowerkit/backend.py", "    if unknown:\n", "    if False:\n"),
    Fault("backend-no-dump", "dump_dir is ignored",
          ["test/python/test_backend.py::test_dump_dir_gets_a_numbered_dump_per_graph"],
          "python/lowerkit/backend.py",
          'dump_dir=Path(dump_dir) / f"graph-{index:03d}-{kind}" if dump_dir else None,', "dump_dir=None,"),
    Fault("no-gelu-fix", "lowerkit's decompositions off: GELU(tanh) with torch-mlir's 0.797724",
          ["test/python/test_decompositions.py::test_gelu_matches_eager_at_f32s_tolerance[tanh]"],
          env={"LOWERKIT_DECOMPOSITIONS": "0"}),
]


def run(fault: Fault) -> tuple[bool, float, str]:
    """(caught, seconds, last line of pytest's output)."""
    path = ROOT / fault.file if fault.file else None
    original = path.read_text() if path else None
    if path:
        if original.count(fault.old) != 1:
            raise SystemExit(f"{fault.name}: the text to change is not once in {fault.file}; "
                             "update the fault")
        path.write_text(original.replace(fault.old, fault.new))
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *fault.tests],
            cwd=ROOT, env={**os.environ, "LOWERKIT_CACHE_DIR": "off", **fault.env},
            capture_output=True, text=True)
    finally:
        if path:
            path.write_text(original)
    lines = [l for l in done.stdout.strip().splitlines() if l.strip()]
    return done.returncode != 0, time.perf_counter() - start, lines[-1] if lines else ""


def main(argv: list[str]) -> int:
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print("planted_faults: the tree has uncommitted changes; commit or stash them first",
              file=sys.stderr)
        return 2
    chosen = [f for f in FAULTS if not argv or f.name in argv]
    table = Table(title="planted faults: each must make its tests fail")
    for col in ("fault", "what", "tests", "caught", "s"):
        table.add_column(col, overflow="fold")
    missed = 0
    for fault in chosen:
        caught, seconds, last = run(fault)
        missed += not caught
        table.add_row(fault.name, fault.what, "\n".join(t.split("::")[-1] for t in fault.tests),
                      "caught: " + last if caught else "[red]MISSED[/red]", f"{seconds:.0f}")
    Console(width=200).print(table)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
