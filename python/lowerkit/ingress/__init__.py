"""Ingress: a PyTorch program into torch-mlir's ``torch`` dialect (`importer`), with the call
signature that the runtime checks arguments against (`signature`) and lowerkit's own
decompositions (`decompositions`)."""
