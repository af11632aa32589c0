module {
  pdl.pattern @add : benefit(1) {
    %type = pdl.type
    %x = pdl.operand
    %add = pdl.operation "arith.addf"(%x, %x : !pdl.value, !pdl.value) -> (%type : !pdl.type)
    pdl.rewrite %add with "broken_rewrite"(%add : !pdl.operation)
  }
}
