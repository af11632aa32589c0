"""Passes lowerkit ships, one per module: ``NAME``, ``run(op, pass_)``, and ``BUILD`` when it
runs in IREE's MLIR build rather than torch-mlir's.

`PASSES` is the one table that names them; the ``passes`` registry reads it without importing
any pass, and `lowerkit.stages.stage.PythonPassStage.from_module` makes a pass module a stage.
A new pass is a new module here and one line in `PASSES`.
"""

# pass name -> module in lowerkit.passes; the torch-dialect fixes first, in pipeline order
PASSES = {
    "widen-unsigned": "widen_unsigned",
    "rewrite-bool-mask-index-put": "bool_mask_index_put",
    "batch-unbatched-pooling": "unbatched_pooling",
    "rewrite-unit-window-pooling": "unit_window_pooling",
    "trim-conv-overhang": "conv_overhang",
    "undilate-single-window-convs": "single_window_conv",
    "pad-pool-overhang": "pool_overhang",
    "gather-adaptive-max-pool": "adaptive_max_pool",
    "replace-empty-results": "empty_results",
    "fold-empty-cat": "empty_cat",
    "crop-negative-pad": "negative_pad",
    "keep-nan-self-compare": "self_compare",
    "keep-nan-clamps": "nan_clamps",
    "fold-unit-argmax": "unit_argmax",
    "normalize-unit-slices": "unit_slices",
    "flatten-dynamic-views": "dynamic_views",
    "lower-bit-views": "bit_views",
    "fold-empty-contractions": "empty_contractions",
    "keep-nan-arg-reductions": "nan_arg_reductions",
    "round-f64-constants": "f64_constants",
    "widen-narrow-io": "narrow_io",
    "seed-as-input": "seed_input",
    # IREE's build (each module's BUILD): the target fixes (lowerkit.pipelines.target_fixes)
    "lower-attention": "attention",
    "fold-wide-casts-into-reductions": "wide_cast_fold",
    "fence-reductions": "reduction_fence",
    "guard-zero-divisors": "zero_divisor",
    "fence-pad-sources": "pad_fence",
    "fence-strided-slices": "strided_slice_fence",
    "refuse-long-sorts": "sort_guard",
    "reorder-depthwise-convs": "depthwise_order",
    "narrow-index-math": "narrow_index_math",
    "fence-gathered-slices": "gathered_slice_fence",
    "fence-batched-matmul-operands": "batched_operand_fence",
    "fence-transposed-matmul-results": "matmul_transpose_fence",
    "fence-reduced-convolutions": "reduced_conv_fence",
    "widen-narrow-storage": "narrow_storage",
    "keep-nan-self-subtract": "self_subtract",
    "keep-nan-min-max": "nan_min_max",
    "keep-nan-zero-products": "zero_product",
}
