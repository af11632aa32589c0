"""The fingerprint guards only the globals a model's code reads, as Dynamo's guards do (issue 73):
a script's changing top-level value or IPython's ``_i`` strings beside the model's class leave
it a hit, and a change to anything that ``forward`` or what it calls reads still misses."""

from __future__ import annotations

import json
import sys
import textwrap
import types

import pytest
import torch

import lowerkit
from lowerkit.ingress.fingerprint import fingerprint

ARGS = (torch.randn(2, 8),)

# A script's top level: the model, a helper and its flags, and values the model never reads.
SCRIPT = """
import time
import torch
from torch import nn

SCALE = 2.0        # read by forward
OFFSET = 0.5       # read only by the helper forward calls
UNRELATED = 1      # read by nothing
t = time.perf_counter()

def shifted(y):
    return y + OFFSET

def make_gain(g):
    def gain(y):
        return y * g
    return gain

gain = make_gain(3.0)

class Tiny(nn.Module):
    FACTORS = (1.0, 2.0)  # a class attribute forward reads

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = shifted(self.lin(x) * SCALE)
        return torch.tanh(gain(y) * self.FACTORS[1])
"""


def _script(monkeypatch, name: str, source: str = SCRIPT) -> types.ModuleType:
    """Run ``source`` as the module ``name`` (a script's ``__main__``, a notebook's cells)."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), module.__dict__)
    return module


def _fp(model):
    return fingerprint(model, ARGS, {}, None, {})


def test_a_changing_unrelated_top_level_value_keeps_the_fingerprint(monkeypatch):
    script = _script(monkeypatch, "script_a")
    model = script.Tiny()
    before = _fp(model)
    assert before is not None and not before.note
    script.t = 12.5
    script.UNRELATED = 2
    script._i, script._ii, script._i7 = "x = 1", "y = 2", "print(3)"  # IPython's cell history
    script.other = lambda: 4
    assert _fp(model) == before


def test_a_script_with_a_timer_is_a_fingerprint_hit(monkeypatch, tmp_path):
    script = _script(monkeypatch, "script_timer")
    torch.manual_seed(0)
    model = script.Tiny()
    first = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert first.cache_note.startswith("miss"), first.cache_note
    script.t = script.time.perf_counter() + 1.0  # the next timing in the script
    again = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert again.cache_note.startswith("hit: fingerprint"), again.cache_note
    with torch.no_grad():
        torch.testing.assert_close(again(*ARGS), model(*ARGS), rtol=1e-5, atol=1e-6)


def test_a_global_forward_reads_misses(monkeypatch, tmp_path):
    script = _script(monkeypatch, "script_b")
    torch.manual_seed(0)
    model = script.Tiny()
    before = _fp(model)
    lowerkit.compile(model, ARGS, cache=tmp_path)
    script.SCALE = -1.0
    assert _fp(model) != before
    art = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert not art.cache_note.startswith("hit: fingerprint"), art.cache_note
    with torch.no_grad():
        torch.testing.assert_close(art(*ARGS), model(*ARGS), rtol=1e-5, atol=1e-6)


def test_a_global_only_a_helper_reads_misses(monkeypatch, tmp_path):
    script = _script(monkeypatch, "script_c")
    torch.manual_seed(0)
    model = script.Tiny()
    before = _fp(model)
    lowerkit.compile(model, ARGS, cache=tmp_path)
    script.OFFSET = 4.0
    assert _fp(model) != before
    art = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert not art.cache_note.startswith("hit: fingerprint"), art.cache_note
    with torch.no_grad():
        torch.testing.assert_close(art(*ARGS), model(*ARGS), rtol=1e-5, atol=1e-6)


def test_a_helper_rebound_or_its_code_changed_misses(monkeypatch):
    script = _script(monkeypatch, "script_c2")
    model = script.Tiny()
    before = _fp(model)
    script.shifted = lambda y: y - script.OFFSET
    assert _fp(model) != before


def test_a_closure_cell_misses(monkeypatch):
    script = _script(monkeypatch, "script_d")
    model = script.Tiny()
    before = _fp(model)
    script.gain.__closure__[0].cell_contents = 5.0  # the closure's value, in place
    assert _fp(model) != before
    script.gain = script.make_gain(3.0)  # a new closure with the first value again
    assert _fp(model) == before


def test_a_class_attribute_misses(monkeypatch):
    script = _script(monkeypatch, "script_d2")
    model = script.Tiny()
    before = _fp(model)
    monkeypatch.setattr(script.Tiny, "FACTORS", (1.0, 3.0))  # a tuple: not a plain value
    assert _fp(model) != before


HELPERS = """
import torch
from torch import nn

LIMIT = 0.5
NOISE = "unread"

class Clamp:
    LOW = -1.0

    @staticmethod
    def apply(y):
        return y.clamp(Clamp.LOW, LIMIT)
"""

USER = """
import torch
from torch import nn
import helpers_e

class Uses(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return helpers_e.Clamp.apply(self.lin(x))
"""


def test_module_attributes_and_the_classes_they_name_are_read(monkeypatch):
    helpers = _script(monkeypatch, "helpers_e", HELPERS)
    user = _script(monkeypatch, "user_e", USER)
    model = user.Uses()
    before = _fp(model)
    assert before is not None and not before.note
    helpers.NOISE = "still unread"
    assert _fp(model) == before
    helpers.LIMIT = 0.25  # read by a static method of a class read through `helpers_e.Clamp`
    assert _fp(model) != before
    helpers.LIMIT = 0.5
    assert _fp(model) == before
    monkeypatch.setattr(helpers.Clamp, "LOW", -2.0)
    assert _fp(model) != before


DYNAMIC = """
import torch
from torch import nn

UNRELATED = 1

class Dynamic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) * globals()["GAIN"]

GAIN = 2.0
"""


def test_code_that_reads_globals_it_does_not_name_guards_the_whole_file(monkeypatch, tmp_path):
    script = _script(monkeypatch, "script_f", DYNAMIC)
    torch.manual_seed(0)
    model = script.Dynamic()
    before = _fp(model)
    assert before is not None and "whole files" in before.note and "globals()" in before.note
    script.GAIN = 3.0
    assert _fp(model) != before
    script.GAIN = 2.0
    script.UNRELATED = 2  # as before issue 73: any top-level value counts
    assert _fp(model) != before
    lowerkit.compile(model, ARGS, cache=tmp_path)
    again = lowerkit.compile(model, ARGS, cache=tmp_path)
    assert again.cache_note.startswith("hit: fingerprint"), again.cache_note
    assert "whole files" in again.cache_note and "globals()" in again.cache_note


def test_a_global_array_forward_reads_has_no_fingerprint(monkeypatch):
    for constant in ("torch.ones(8)", "__import__('numpy').ones(8)"):
        source = SCRIPT.replace("SCALE = 2.0", f"SCALE = {constant}")
        script = _script(monkeypatch, "script_g", source)
        assert _fp(script.Tiny()) is None  # a constant the program holds: traced, as before
    source = SCRIPT.replace("2.0", "__import__('numpy').float32(2)")
    script = _script(monkeypatch, "script_g", source)
    before = _fp(script.Tiny())
    assert before is not None
    script.SCALE = script.SCALE * 2  # a NumPy scalar, by its value
    assert _fp(script.Tiny()) != before


NOTEBOOK_CELLS = [
    """
    import torch
    import lowerkit
    from torch import nn

    SCALE = 2.0

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return torch.tanh(self.lin(x) * SCALE)

    torch.manual_seed(0)
    model, args = Tiny(), (torch.randn(2, 8),)
    """,
    "print('NOTE', lowerkit.compile(model, args, cache=CACHE).cache_note)",
    "unrelated = [i * i for i in range(10)]\nunrelated[-1]",
    "print('NOTE', lowerkit.compile(model, args, cache=CACHE).cache_note)",
    "SCALE = -1.0",
    """
    art = lowerkit.compile(model, args, cache=CACHE)
    torch.testing.assert_close(art(*args), model(*args), rtol=1e-5, atol=1e-6)
    print('NOTE', art.cache_note)
    """,
]


def _notes(nb) -> list[str]:
    """What the notebook's cells printed after ``NOTE``: each compile's cache note."""
    return [line.split("NOTE ", 1)[1] for cell in nb.cells for out in cell.get("outputs", [])
            if out.get("name") == "stdout" for line in out["text"].splitlines()
            if line.startswith("NOTE ")]


def test_a_notebook_hits_the_fingerprint_after_an_unrelated_cell(tmp_path):
    """In a real IPython kernel the model's class lives in ``__main__`` beside ``_i``, ``_ii``
    and ``_iN``, which change with every cell; a restarted kernel finds it too."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [nbformat.v4.new_code_cell(f"CACHE = {json.dumps(str(tmp_path / 'cache'))}")]
    cells += [nbformat.v4.new_code_cell(textwrap.dedent(c).strip()) for c in NOTEBOOK_CELLS]
    nb = nbformat.v4.new_notebook(cells=cells)
    # the kernel runs this Python (ipykernel's own spec), with this environment
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    notes = _notes(nb)
    assert len(notes) == 3, notes
    assert notes[0].startswith("miss"), notes
    assert notes[1].startswith("hit: fingerprint"), notes  # after an unrelated cell
    assert not notes[2].startswith("hit: fingerprint"), notes  # SCALE, which forward reads
    # a restarted kernel (a new process) defines the model again: the kept fingerprint answers
    again = nbformat.v4.new_notebook(cells=[cells[0], cells[1], nbformat.v4.new_code_cell(
        textwrap.dedent(NOTEBOOK_CELLS[-1]).strip())])
    nbclient.NotebookClient(again, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    notes = _notes(again)
    assert notes and notes[0].startswith("hit: fingerprint, kept by an earlier process"), notes


DECORATED = """
import functools
import torch
from torch import nn

SCALE = 2.0
UNRELATED = 0

def plain_wrapper(f):  # a decorator without functools.wraps
    def run(*args):
        return f(*args)
    return run

@plain_wrapper
def scaled(y):
    return y * SCALE

@functools.lru_cache(maxsize=None)
def table(n):
    return tuple(range(n))

class Decorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    @torch.no_grad()
    def forward(self, x):
        return scaled(self.lin(x)) + len(table(3))
"""


def test_globals_behind_decorators_are_read(monkeypatch):
    script = _script(monkeypatch, "script_h", DECORATED)
    model = script.Decorated()
    before = _fp(model)
    assert before is not None and not before.note
    script.UNRELATED = 1
    assert _fp(model) == before
    script.SCALE = 3.0  # read by the function a decorator's closure holds
    assert _fp(model) != before


METHODS = """
import torch
from torch import nn

HELPER_SCALE = 2.0
REPR_ONLY = "a"
act = nn.GELU(approximate="tanh")  # a module outside the model's tree, without tensors

class Methods(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def helper(self, y):
        return y * HELPER_SCALE

    def extra_repr(self):  # forward never calls it
        return REPR_ONLY

    def forward(self, x):
        return act(getattr(self, "helper")(self.lin(x)))
"""


def test_methods_forward_names_are_walked_and_others_are_not(monkeypatch):
    script = _script(monkeypatch, "script_i", METHODS)
    model = script.Methods()
    before = _fp(model)
    assert before is not None and not before.note
    script.REPR_ONLY = "b"  # read only by a method forward does not name
    assert _fp(model) == before
    script.HELPER_SCALE = 3.0  # read by the method forward reaches through getattr
    assert _fp(model) != before
    script.HELPER_SCALE = 2.0
    assert _fp(model) == before
    script.act.approximate = "none"  # an attribute of a module the code reads as a global
    assert _fp(model) != before
    script.act = torch.nn.Linear(8, 8)  # a global module holding tensors: the program's constants
    assert _fp(model) is None


IMPORTING = """
import torch
from torch import nn

class Importing(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        from helpers_j import LIMIT
        import helpers_j as h
        return self.lin(x).clamp(h.Clamp.LOW, LIMIT)
"""


def test_an_import_in_forward_reads_that_module(monkeypatch):
    helpers = _script(monkeypatch, "helpers_j", HELPERS)
    model = _script(monkeypatch, "script_j", IMPORTING).Importing()
    before = _fp(model)
    assert before is not None and "reads whole files: helpers_j" in before.note, before.note
    helpers.LIMIT = 0.25
    assert _fp(model) != before
    helpers.LIMIT = 0.5
    assert _fp(model) == before
    helpers.NOISE = "changed"  # `import helpers_j` hands the module on whole: all its file
    assert _fp(model) != before


def test_a_transformers_model_is_guarded_by_its_config():
    pytest.importorskip("transformers")
    from lowerkit.zoo import ecosystem

    model, args, kwargs = next(e for e in ecosystem._ENTRIES if e.name == "bert").make()
    before = fingerprint(model, args, kwargs, None, {})
    assert before is not None
    assert fingerprint(model, args, kwargs, None, {}) == before
    model.config.layer_norm_eps = 1e-3  # read by nothing after building: still in the key
    assert fingerprint(model, args, kwargs, None, {}) != before


def test_a_real_script_with_a_timer_hits_the_fingerprint(tmp_path):
    """The issue's script, run as ``__main__``: a model and a timer at its top level."""
    import subprocess

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import time
        t = time.perf_counter()
        import torch
        import lowerkit
        from torch import nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)

            def forward(self, x):
                return torch.relu(self.lin(x))

        model, args = Tiny(), (torch.randn(2, 8),)
        for _ in range(2):
            t = time.perf_counter()
            print("NOTE", lowerkit.compile(model, args, cache={str(tmp_path / 'cache')!r}).cache_note)
    """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    notes = [line[5:] for line in run.stdout.splitlines() if line.startswith("NOTE ")]
    assert notes[0].startswith("miss") and notes[1].startswith("hit: fingerprint"), notes


OVERRIDE = """
import torch
from torch import nn

PAD = "zeros"

class Conv(nn.Conv2d):
    def _conv_forward(self, x, weight, bias):  # called by torch's Conv2d.forward, not ours
        return super()._conv_forward(x, weight, bias) * (2.0 if PAD == "zeros" else 1.0)
"""


def test_a_method_torchs_forward_calls_is_walked(monkeypatch):
    script = _script(monkeypatch, "script_k", OVERRIDE)
    model, args = script.Conv(2, 2, 3), (torch.randn(1, 2, 5, 5),)
    before = fingerprint(model, args, {}, None, {})
    assert before is not None
    script.PAD = "reflect"
    assert fingerprint(model, args, {}, None, {}) != before


def test_code_that_reads_frames_guards_every_file_it_met(monkeypatch):
    source = DYNAMIC.replace("import torch", "import sys\nimport torch").replace(
        'globals()["GAIN"]', 'sys._getframe(0).f_globals["GAIN"]')
    helpers = _script(monkeypatch, "helpers_l", HELPERS)
    script = _script(monkeypatch, "script_l", source.replace(
        "return self.lin(x)", "return helpers_l.Clamp.apply(self.lin(x))").replace(
        "import sys", "import sys\nimport helpers_l"))
    model = script.Dynamic()
    before = _fp(model)
    assert before is not None and "guards whole files" in before.note, before.note
    assert "sys._getframe" in before.note
    helpers.NOISE = "changed"  # read by nothing that forward names; the frames may reach it
    assert _fp(model) != before
