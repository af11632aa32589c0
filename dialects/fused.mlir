// fused: high-level ops that torch decomposes, kept whole so a lowering can fuse them.
// Loaded by name (`lowerkit-opt --dialect=fused`, lowerkit.dialects.irdl.load_dialect(ctx, "fused"));
// pipelines/fused_ops.py raises torch ops into it and lowers it to linalg.generic.
irdl.dialect @fused {
  // gelu(x) = x * (1 + erf(x / sqrt(2))) / 2, elementwise on a float tensor.
  irdl.operation @gelu {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(input: %t)
    irdl.results(output: %t)
  }
  // silu(x) = x * sigmoid(x), elementwise on a float tensor.
  irdl.operation @silu {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(input: %t)
    irdl.results(output: %t)
  }
  // rms_norm(x, w) = x / sqrt(mean(x * x, last dim) + epsilon) * w.
  irdl.operation @rms_norm {
    %t = irdl.base "!builtin.tensor"
    %w = irdl.base "!builtin.tensor"
    %eps = irdl.base "#builtin.float"
    irdl.operands(input: %t, weight: %w)
    irdl.attributes { "epsilon" = %eps }
    irdl.results(output: %t)
  }
}
