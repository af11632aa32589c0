"""The ``lowerkit`` command. Each subcommand lives in its own module of this package.

A subcommand imports what it runs (torch, the compiler) inside its ``main``, not at the top:
``lowerkit --help`` and argument errors then answer at once. These are not there to dodge an
import cycle; the import-graph test counts them like any other import.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import LowerkitError

# subcommand -> module in this package; each has ``add_arguments(parser)`` and ``main(args)``.
COMMANDS = {
    "run": "Compile a model from FILE.py:FACTORY, run it, and check it against eager PyTorch.",
    "lower": "Print a model's IR after a pipeline (or after one stage of it).",
    "dump": "Write every stage, IREE phase and executable of a model, with an HTML report.",
    "view": "Open a dump's stages as graphs in Model Explorer (served on 127.0.0.1).",
    "explain": "Show torch.compile(backend='lowerkit') on a model: graph breaks, where each graph runs.",
    "check": "List every op of a model that the pipeline cannot lower, with its source line.",
    "zoo": "Run the model zoo through lowerkit: stage reached and max error against eager.",
    "bench": "Benchmark MODEL|zoo: eager, torch.compile and lowerkit, interleaved in one process.",
    "profile": "Where a compiled model's call goes: each dispatch's time inside the call, slowest first.",
    "tune": "Measure which form each convolution of MODEL (a zoo name or FILE.py:FACTORY) runs fastest in on this CPU; store it.",
    "fuzz": "Differential fuzzing: random small torch programs through lowerkit against eager.",
    "bisect": "Name the stage, op and source line (or iree-compile flag) after which a compiled answer differs.",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lowerkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"{__name__}.{name}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(_module=module)
    args = parser.parse_args(argv)
    try:
        return int(args._module.main(args) or 0)
    except LowerkitError as e:
        print(f"lowerkit {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
