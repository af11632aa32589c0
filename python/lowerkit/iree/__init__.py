"""IREE's side: the crossing of a module into IREE's MLIR build (`bridge`) and the
``iree-compile`` driver that makes a vmfb of it (`compiler`)."""
