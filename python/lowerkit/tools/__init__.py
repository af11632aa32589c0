"""Tools beside the data path: ``lowerkit-opt`` (`opt`), ``lowerkit check`` (`check`), the
differential fuzzer (`fuzz`) and the benchmarks' timing harness (`bench`)."""
