"""benchmarks/attention_loop.py reads one step of the attention dispatch from assembly: the
loop it counts must be the innermost one, and each instruction must land in its kind (the
README's table of that step is made of these counts)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("attention_loop", ROOT / "benchmarks" / "attention_loop.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


ASM = """\
main_dispatch_4_attention_4x16x16x16x16:
\tpushq\t%rbp
.LBB2_1:
\tvbroadcastss\t.LCPI2_4(%rip), %zmm5
.LBB2_2:
\t.loc\t3 40 8
\tvfmadd231ps\t%zmm1, %zmm2, %zmm3
\tvshuff64x2\t$78, %zmm4, %zmm4, %zmm6
\tvmovaps\t%zmm7, 64(%rsp)
\tvmaxps\t%zmm6, %zmm4, %zmm4
\tvaddps\t%zmm1, %zmm2, %zmm2
\tcmpq\t$1472, %r14
\tjb\t.LBB2_2
\tvmulps\t%zmm1, %zmm4, %zmm1
\tcmpq\t$28, %r10
\tjb\t.LBB2_1
\tretq
.Lfunc_end2:
main_dispatch_5_slow_memcpy:
.LBB3_1:
\tvmovups\t(%rax), %zmm0
\tjb\t.LBB3_1
"""


def test_the_innermost_loop_of_the_attention_dispatch_is_counted():
    m = _load()
    name, body = m._function(ASM.splitlines(), "attention")
    assert name == "main_dispatch_4_attention_4x16x16x16x16"
    loop = m.innermost_loop(body)
    assert [i.split()[0] for i in loop] == [
        "vfmadd231ps", "vshuff64x2", "vmovaps", "vmaxps", "vaddps", "cmpq", "jb"]
    kinds = [m.kind_of(i) for i in loop]
    assert kinds == ["fused multiply-add", "lane shuffle, extract or insert",
                     "stack load or store", "max or min", "other vector arithmetic",
                     "scalar and control", "scalar and control"]


def test_the_step_reads_lowerkits_tiles_from_the_configured_dispatch():
    m = _load()
    configured = ("lowering_config = #iree_cpu.lowering_config<distribution = [1, 32, 16, 0, 0], "
                  "vector_common_parallel = [1, 4, 16, 0, 0], vector_reduction = [0, 0, 0, 0, 32]>")
    assert m._tiles(configured) == (4, 32)
