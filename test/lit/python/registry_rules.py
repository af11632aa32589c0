# Registries: lazy built-ins, a duplicate name is an error, unknown names list what exists.
# RUN: %PYTHON %s | FileCheck %s
import lowerkit
from lowerkit import RegistryError, registry

print("fused" in registry.dialects, "raise-to-fused" in registry.passes)
# CHECK: True True
try:
    registry.passes.register("raise-to-fused", lambda: None)
except RegistryError as e:
    print(e)
# CHECK: passes 'raise-to-fused' is already registered
try:
    registry.dialects.get("nope")
except RegistryError as e:
    print(e)
# CHECK: no dialects named 'nope'; registered: fused
stage = registry.passes.get("raise-to-fused")
print(type(stage).__name__, stage.name, list(stage.dialects))
# CHECK: GreedyRewriteStage raise-to-fused ['fused', 'torch_c']
