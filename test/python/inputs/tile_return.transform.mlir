module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %r = transform.structured.match ops{["func.return"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l = transform.structured.tile_using_for %r tile_sizes [4] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
