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
    Fault("compare-no-dtype", "compare takes an output of another dtype (equal values) as a match",
          ["test/python/test_numerics.py::test_a_dtype_other_than_expected_fails_even_with_equal_values",
           "test/python/test_fuzz.py::test_an_output_dtype_differing_from_eager_is_wrong"],
          "python/lowerkit/runtime/numerics.py",
          "        if a.dtype != e.dtype:\n", "        if False:\n"),
    Fault("fuzz-index-range", "the fuzzer's index inputs drawn like other int64 inputs (out of range)",
          ["test/python/test_fuzz.py::test_index_inputs_stay_in_range_and_parse_back"],
          "python/lowerkit/tools/fuzz.py",
          "        if self.high is not None:\n            return torch.randint(0, self.high",
          "        if False:\n            return torch.randint(0, self.high"),
    Fault("fuzz-ill-conditioned-norms", "the fuzzer normalises constant groups (false wrong answers)",
          ["test/python/test_fuzz.py::test_norms_only_of_well_conditioned_groups"],
          "python/lowerkit/tools/fuzz.py",
          "    return bool((var + 1e-5 >= ", "    return True or bool((var + 1e-5 >= "),
    Fault("fuzz-no-conv", "the fuzzer's space loses its convolutions (grouped, depthwise, 1-D)",
          ["test/python/test_fuzz.py::test_generator_reaches_what_real_models_do"],
          "python/lowerkit/tools/fuzz.py", '    Family("conv", _spatial32, _op_conv, 6),\n', ""),
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
    Fault("backend-options-unchecked", "a misspelt option is accepted silently",
          ["test/python/test_backend.py::test_unknown_option_is_refused"],
          "python/lowerkit/backend.py", "    if unknown:\n", "    if False:\n"),
    Fault("backend-no-dump", "dump_dir is ignored",
          ["test/python/test_backend.py::test_dump_dir_gets_a_numbered_dump_per_graph"],
          "python/lowerkit/backend.py",
          'dump_dir=Path(dump_dir) / f"graph-{index:03d}-{kind}" if dump_dir else None,', "dump_dir=None,"),
    Fault("ray-first-death-final", "a worker's first death under an item is taken as its crash",
          ["test/python/test_executor_ray.py::test_every_item_gets_one_outcome_under_planted_faults"],
          "python/lowerkit/tools/executor/ray_backend.py",
          "                        if attempt == 1 and self.confirm_crashes:\n",
          "                        if False:\n"),
    Fault("ray-timeout-as-crash", "a cancelled hang is reported as a crash",
          ["test/python/test_executor_ray.py::test_every_item_gets_one_outcome_under_planted_faults"],
          "python/lowerkit/tools/executor/ray_backend.py",
          '                    on_outcome(Outcome(item.key, "timeout", "timeout", "run",',
          '                    on_outcome(Outcome(item.key, "crash", "timeout", "run",'),
    Fault("resume-forgets", "--resume finds nothing done in the journal and runs everything again",
          ["test/python/test_executor.py::test_a_run_stopped_halfway_and_resumed_ends_as_the_same_file"],
          "python/lowerkit/tools/executor/journal.py",
          "        return {k: Outcome.from_row(r) for k, r in self.rows.items() if Outcome.from_row(r).done}",
          "        return {}"),
    Fault("shard-overlap", "shard K takes every item from the K-th on",
          ["test/python/test_executor.py::test_shards_split_the_items_once_each"],
          "python/lowerkit/tools/executor/journal.py",
          "    return list(items)[k - 1::n]", "    return list(items)[k - 1:]"),
    Fault("isolated-crash-as-fail", "an isolated item's segfault is reported as a failure found",
          ["test/python/test_executor.py::test_isolated_items_crash_hang_and_raise_alone"],
          "python/lowerkit/tools/executor/inprocess.py",
          'return Outcome(item.key, "crash", "crash", "run", f"the item',
          'return Outcome(item.key, "fail", "crash", "run", f"the item'),
    Fault("e2e-mismatch-ok", "the e2e runner's mismatch counts as ok on the executor",
          ["test/python/test_e2e_suite.py::test_executor_outcomes_become_the_runners_records"],
          "benchmarks/e2e_suite.py", '"mismatch": "fail",', '"mismatch": "ok",'),
    Fault("zoo-journal-loses-stage", "a zoo result read back from the journal forgets its stage",
          ["test/python/test_cli_zoo.py::test_a_coverage_result_survives_the_executors_journal"],
          "python/lowerkit/zoo/coverage.py",
          "        values.update(name=outcome.key, stage=outcome.stage, message=outcome.message)",
          "        values.update(name=outcome.key, stage=\"check\", message=outcome.message)"),
    Fault("no-gelu-fix", "lowerkit's decompositions off: GELU(tanh) with torch-mlir's 0.797724",
          ["test/python/test_decompositions.py::test_gelu_matches_eager_at_f32s_tolerance[tanh]"],
          env={"LOWERKIT_DECOMPOSITIONS": "0"}),
    Fault("cpu-unchecked", "an artifact for CPU features this host lacks is loaded unchecked",
          ["test/python/test_cpu_targets.py::test_an_artifact_for_features_this_host_lacks_is_refused_also_after_save",
           "test/python/test_cpu_targets.py::test_zoo_model_on_a_named_cpu[simple_cnn-sapphirerapids]"],
          "python/lowerkit/runtime/artifact.py", "            self.check_cpu()\n", ""),
    Fault("cpu-feature-order", "a feature switched off later in LLVM's list still counts as on",
          ["test/python/test_cpu_targets.py::test_missing_features_are_named_in_llvm_terms"],
          "python/lowerkit/runtime/cpu_features.py", 'state[f[1:]] = f[0] == "+"',
          'state[f[1:]] = state.get(f[1:], False) or f[0] == "+"'),
    Fault("cpu-not-saved", "Artifact.save forgets the CPU features it was compiled for",
          ["test/python/test_cpu_targets.py::test_an_artifact_for_features_this_host_lacks_is_refused_also_after_save"],
          "python/lowerkit/runtime/artifact.py", '            "cpu": self.cpu,\n', ""),
    Fault("cpu-flag-names", "LLVM's feature names compared with /proc/cpuinfo as they are",
          ["test/python/test_cpu_targets.py::test_missing_features_are_named_in_llvm_terms"],
          "python/lowerkit/runtime/cpu_features.py", "f in CPUINFO and CPUINFO[f] not in flags]",
          "f in CPUINFO and f not in flags]"),
    Fault("depthwise-as-named", "Vulkan's depthwise convs left as IREE's named op",
          ["test/python/test_defects.py::test_shufflenet_unit_on_vulkan",
           "test/python/test_defects.py::test_depthwise_convs_on_the_portable_vulkan_target"],
          "pipelines/target_fixes.py", "            PythonPassStage.from_module(depthwise_order),\n", ""),
    Fault("f64-scalars-on-vulkan", "a Python float stays an f64 constant (round-f64-constants off)",
          ["test/python/test_vulkan.py::test_scalars_and_indices_on_the_portable_vulkan_target"],
          "pipelines/torch_to_linalg.py", '            registry.passes.get("round-f64-constants"),\n', ""),
    Fault("caches-unregistered", "transformers' caches are not registered as pytrees",
          ["test/python/test_transformers_caches.py::test_a_decoder_prefill_returns_its_dynamic_cache"],
          "python/lowerkit/ingress/importer.py",
          "    containers.register_known()  # transformers' caches flatten like tuples, in and out\n", ""),
    Fault("container-dynamic-dims-dropped", "dynamic_shapes inside a registered container are ignored",
          ["test/python/test_transformers_caches.py::test_one_compiled_decode_step_takes_each_steps_cache_for_20_tokens",
           "test/python/test_transformers_caches.py::test_dynamic_shapes_of_a_cache_must_match_its_children"],
          "python/lowerkit/ingress/importer.py",
          "        elif type(value) in pytree.SUPPORTED_NODES:", "        elif False:"),
    Fault("item-as-tensor", "a scalar computed from data comes back as a 0-d tensor",
          ["test/python/test_backend.py::test_scalars_computed_from_data_stay_in_lowerkits_graph"],
          "python/lowerkit/ingress/signature.py", "        return tensor.item()\n", "        return tensor\n"),
    Fault("item-trunc-unrounded", "int(t.item()) of a float reaches torch-mlir's importer as math.trunc",
          ["test/python/test_backend.py::test_scalars_computed_from_data_stay_in_lowerkits_graph"],
          "python/lowerkit/ingress/graph.py",
          "        elif node.target in _ON_THE_TENSOR and _read_from_data(node.args[0]):",
          "        elif False:"),
    Fault("item-sym-float", "float() of an int read from data reaches torch-mlir's importer as sym_float",
          ["test/python/test_backend.py::test_scalars_computed_from_data_stay_in_lowerkits_graph"],
          "python/lowerkit/ingress/graph.py", "    torch.sym_float: (None, torch.float64),\n", ""),
    Fault("f64-kept-on-portable-vulkan", "the portable vulkan target keeps f64 (no demotion)",
          ["test/python/test_vulkan.py::test_variance_norms_on_the_portable_vulkan_target"],
          "python/lowerkit/iree/compiler.py",
          'return COMMON_FLAGS if target.float64 else ("--iree-input-demote-f64-to-f32=true",)',
          "return COMMON_FLAGS"),
    Fault("f64-io-unrefused", "float64 inputs reach iree-compile on a target without Float64",
          ["test/python/test_vulkan.py::test_float64_inputs_are_refused_on_the_portable_vulkan_target"],
          "python/lowerkit/api.py", "    _refuse_float64_io(imported.signature, target)\n", ""),
    Fault("seed-constant", "every call passes the same seed (the random ops repeat, as before)",
          ["test/python/test_random_ops.py::test_each_call_draws_new_samples_and_manual_seed_repeats_them",
           "test/python/test_random_ops.py::test_backend_training_step_draws_a_new_dropout_mask_and_backward_uses_it"],
          "python/lowerkit/runtime/artifact.py",
          "return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)",
          "return torch.zeros((), dtype=torch.int64)"),
    Fault("seed-not-torchs", "the seed comes from the OS, not torch's generator: manual_seed has no effect",
          ["test/python/test_random_ops.py::test_each_call_draws_new_samples_and_manual_seed_repeats_them[rand]"],
          "python/lowerkit/runtime/artifact.py",
          "return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)",
          "return torch.tensor(int.from_bytes(__import__('os').urandom(8), 'little', signed=True))"),
    Fault("seed-one-bit", "the seed is drawn from two values only",
          ["test/python/test_random_ops.py::test_ten_calls_draw_ten_different_samples"],
          "python/lowerkit/runtime/artifact.py",
          "return torch.randint(-(1 << 63), (1 << 63) - 1, (), dtype=torch.int64)",
          "return torch.randint(0, 2, (), dtype=torch.int64)"),
    Fault("seed-pass-off", "seed-as-input leaves the module alone (torch-mlir's global seed, 0 at each load)",
          ["test/python/test_random_ops.py::test_each_call_draws_new_samples_and_manual_seed_repeats_them[dropout]"],
          "python/lowerkit/passes/seed_input.py",
          "    if seed is None:\n        return\n", "    return\n"),
    Fault("seed-stores-dropped", "seed-as-input drops the LCG steps: every random op of a call reads the argument",
          ["test/python/test_random_ops.py::test_two_random_ops_of_one_call_draw_different_samples"],
          "python/lowerkit/passes/seed_input.py",
          "            current = op.operands[0]\n", "            pass\n"),
    Fault("seed-before-state", "the seed is passed before the mutated buffers' state",
          ["test/python/test_random_ops.py::test_a_random_program_with_state_takes_its_seed_after_the_state"],
          "python/lowerkit/runtime/artifact.py",
          "executable.invoke(tensors + self.state + seed,", "executable.invoke(tensors + seed + self.state,"),
    Fault("normal-scale", "normal(mean, std) scaled by sqrt(std)",
          ["test/python/test_random_ops.py::test_normal_takes_its_mean_and_std"],
          "python/lowerkit/ingress/decompositions.py",
          "    return mean + std * noise\n", "    return mean + std ** 0.5 * noise\n"),
    Fault("generator-unexplained", "a random op's own torch.Generator reaches the importer (no word of why it fails)",
          ["test/python/test_random_ops.py::test_an_explicit_generator_is_refused_saying_why"],
          "python/lowerkit/ingress/importer.py", "    _refuse_explicit_generators(exported)\n", ""),
    Fault("random-on-portable-vulkan", "random ops reach iree-compile on a target without 64-bit arithmetic",
          ["test/python/test_random_ops.py::test_the_portable_vulkan_target_refuses_random_ops_at_the_users_line"],
          "pipelines/target_fixes.py", 'refuse = "" if 64 in bits else target.name', 'refuse = ""'),
    Fault("run-check-random", "lowerkit run --check compares a random program with eager (and fails)",
          ["test/python/test_random_ops.py::test_run_check_says_it_does_not_compare_a_random_program"],
          "python/lowerkit/cli/run.py", "    if args.check and art.signature.seeded:\n", "    if False:\n"),
    Fault("verify-random", "verify accepts a random program (and then fails every call)",
          ["test/python/test_random_ops.py::test_verify_refuses_a_random_program_saying_why"],
          "python/lowerkit/runtime/verify.py", "    if artifact.signature.seeded:\n", "    if False:\n"),
    Fault("graph-no-module-names", "the importer's locations name no module (torch-mlir's file:line only)",
          ["test/python/test_dump_graph.py::test_layer_names_survive_to_the_flow_stage"],
          "python/lowerkit/ingress/locations.py",
          "            return Location.name(node_name(node), childLoc=child, context=self._c)",
          "            return loc"),
    Fault("graph-callsite-caller", "an inlined op's layer taken from its call site, not its own location",
          ["test/python/test_dump_graph.py::test_location_names_take_the_callee_and_fused_parts"],
          "python/lowerkit/stages/dump_graph.py",
          "            callee = self._loc()\n            self._expect(\" at \")\n            self._loc()\n",
          "            self._loc()\n            self._expect(\" at \")\n            callee = self._loc()\n"),
    Fault("graph-drops-region-ops", "the ops inside regions are left out of the graph",
          ["test/python/test_dump_graph.py::test_every_stage_of_two_zoo_models_is_a_graph_in_model_explorers_format"],
          "python/lowerkit/stages/dump_graph.py",
          "                        self._op(inner_op.operation, sub, named)\n",
          "                        pass\n"),
    Fault("graph-constants-unfolded", "constants stay where they are, edges to every layer",
          ["test/python/test_dump_graph.py::test_regions_blocks_and_constants"],
          "python/lowerkit/stages/dump_graph.py",
          '            leaf["namespace"] = found[0]["namespace"]\n', "            continue\n"),
    Fault("graph-no-failed-mark", "a failed stage's failing op is not marked",
          ["test/python/test_dump_graph.py::test_failed_ops_are_marked",
           "test/python/test_dump_graph.py::test_a_failed_stage_has_its_input_drawn_with_the_failing_op_marked"],
          "python/lowerkit/stages/dump_graph.py",
          "        bad = _matches(op, location, self.failed) if self.failed else None\n",
          "        bad = None\n"),
    Fault("graph-no-name-fallback", "iree-compile's rejected ops go unmarked (its lines name its own files)",
          ["test/python/test_dump_graph.py::test_ops_iree_compile_rejects_are_marked_on_its_input"],
          "python/lowerkit/stages/dump_graph.py",
          "    if lost:  # a line this stage does not hold", "    if False:  # a line this stage does not hold"),
    Fault("graph-edge-format", "an edge's field misspelt (Model Explorer reads no edge)",
          ["test/python/test_dump_graph.py::test_regions_blocks_and_constants"],
          "python/lowerkit/stages/dump_graph.py",
          '                node["incomingEdges"].append({"sourceNodeId": source[0],',
          '                node["incomingEdges"].append({"sourceNodeID": source[0],'),
    Fault("view-compare-same-graph", "the compare link's second pane opens the first stage's graph",
          ["test/python/test_dump_graph.py::test_compare_link_opens_each_stage_in_its_own_pane"],
          "python/lowerkit/stages/dump_index.py",
          '            selected = f"{graph} (2)" if graph in seen else graph\n',
          "            selected = graph\n"),
    Fault("view-no-install-hint", "lowerkit view without Model Explorer tries to start it",
          ["test/python/test_dump_graph.py::test_view_without_model_explorer_says_what_to_install"],
          "python/lowerkit/tools/view.py",
          "    if not available():\n        raise LowerkitError(INSTALL_HINT)\n", ""),
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
