"""Dialects without C++: IRDL definitions shipped with lowerkit (``definitions/*.mlir``) and
the loader that puts them into a torch-mlir context (`lowerkit.dialects.irdl`)."""
