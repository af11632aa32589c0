"""``lowerkit-opt``: mlir-opt for lowerkit's stages, Python passes and IRDL dialects included.

It reads MLIR (a file or stdin) into torch-mlir's build, runs a registered pipeline or a list
of passes (registered Python passes by name, any other name as an MLIR pass), and prints the
result. Every failure is an MLIR-style ``file:line:col: error:`` line and a non-zero exit;
``--verify-diagnostics`` checks ``// expected-error {{...}}`` comments instead, for lit tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from .. import registry
from ..diagnostics import Diagnostic
from ..dialects.irdl import dialects_used_in, load_dialects
from ..errors import LowerkitError, StageError
from ..ir import Build, module_asm
from ..stages.crossing import with_crossing
from ..stages.stage import PassPipelineStage

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.M)
_LOC = re.compile(r'"([^"]*)":(\d+):(\d+)')
_EXPECTED = re.compile(
    r"//\s*expected-(error|warning|remark|note)\s*(@[+-]?\d+|@above|@below)?\s*\{\{(.*?)\}\}"
)


def _diag(severity: str, message: str, file: str | None = None, line: int | None = None,
          col: int | None = None, fallback: bool = False) -> Diagnostic:
    """A diagnostic at ``file:line:col`` of the MLIR input, as mlir-opt prints them."""
    return Diagnostic(message, location=file, severity=severity, line=line, col=col,
                      fallback=fallback)


class Failed(Exception):
    """A chunk failed: its diagnostics say why."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


class Chunk:
    """One piece of the input (all of it unless --split-input-file) and where it starts."""

    def __init__(self, text: str, filename: str, line_offset: int):
        self.text = text
        self.filename = filename
        self.line_offset = line_offset

    def diagnostic(self, severity: str, message: str, location: Any) -> Diagnostic:
        m = _LOC.search(str(location)) if location is not None else None
        if not m:
            return _diag(severity, message, self.filename)
        file, line, col = m.group(1), int(m.group(2)), int(m.group(3))
        if file == "-":
            return _diag(severity, message, self.filename, line + self.line_offset, col)
        return _diag(severity, message, file, line, col)

    def from_mlir_error(self, error: Exception, fallback: str) -> list[Diagnostic]:
        out = []
        for info in getattr(error, "error_diagnostics", None) or []:
            out.append(self.diagnostic("error", info.message, info.location))
            for note in getattr(info, "notes", []):
                if "see current operation" not in note.message:
                    out.append(self.diagnostic("note", note.message, note.location))
        if not out:
            out.append(_diag("error", f"{fallback}: {getattr(error, 'message', error)}",
                                  self.filename, fallback=True))
        return out


def split_input(text: str, filename: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, filename, 0)]
    chunks, offset, start = [], 0, 0
    for m in SPLIT_MARKER.finditer(text):
        piece = text[start:m.start()]
        chunks.append(Chunk(piece, filename, offset))
        offset += piece.count("\n") + 1
        start = m.end() + 1
    chunks.append(Chunk(text[start:], filename, offset))
    return chunks


def parse_pass_list(spec: str) -> list[tuple[str, dict[str, str], str]]:
    """``a,b{x=1 y=2}`` -> [(name, options, original text)], commas inside braces kept."""
    items, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        name, _, rest = item.partition("{")
        options = {}
        for kv in rest.rstrip("}").split():
            k, _, v = kv.partition("=")
            options[k] = v
        out.append((name.strip(), options, item))
    return out


def _option_value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v, v)


def build_stages(args: argparse.Namespace) -> list:
    stages: list = []
    if args.pipeline:
        stages.extend(registry.pipelines.get(args.pipeline).leaf_stages())
    for spec in args.passes:
        for name, options, text in parse_pass_list(spec):
            if name in registry.passes:
                stage = registry.passes.factory(name)(**{k.replace("-", "_"): _option_value(v)
                                                         for k, v in options.items()})
            else:
                stage = PassPipelineStage(re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "pass",
                                          text)
            stages.append(stage)
    if args.pass_pipeline:
        stages.append(PassPipelineStage("pass-pipeline", args.pass_pipeline))
    return stages


def _user_frame(error: BaseException) -> str | None:
    """``file:line`` of the innermost frame outside lowerkit and the MLIR packages."""
    here = str(Path(__file__).parents[1])  # the lowerkit package
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not frame.filename.startswith(here) and "site-packages" not in frame.filename:
            return f"{frame.filename}:{frame.lineno}"
    return None


def new_context(chunk: Chunk, stages: list, extra_dialects: list[str]) -> Any:
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect

    ctx = ir.Context()
    torch_dialect.register_dialect(ctx)
    names = [*extra_dialects, *dialects_used_in(chunk.text)]
    for s in stages:
        names.extend(getattr(s, "dialects", ()))
    try:
        load_dialects(ctx, dict.fromkeys(names))
    except Exception as e:
        raise Failed([_diag("error", f"cannot load dialect: {e}", chunk.filename)]) from None
    return ctx


def run_chunk(chunk: Chunk, stages: list, args: argparse.Namespace, notes: list[Diagnostic]) -> str:
    """Parse and lower one chunk; returns its printed IR or raises Failed."""
    from torch_mlir import ir

    ctx = new_context(chunk, stages, args.dialects)
    ctx.emit_error_diagnostics = True

    def handler(d):
        severity = str(d.severity).rsplit(".", 1)[-1].lower()
        notes.append(chunk.diagnostic(severity, d.message, d.location))
        return True

    ctx.attach_diagnostic_handler(handler)
    try:
        module = ir.Module.parse(chunk.text, ctx)
    except ir.MLIRError as e:
        raise Failed(chunk.from_mlir_error(e, "cannot parse the input")) from None

    for stage in with_crossing(stages, Build.TORCH_MLIR):
        try:
            with module.context:
                result = stage.apply(module)
            module = module if result is None else result
        except StageError as e:
            diags = [_diag("error", f"stage '{e.stage}' failed: {e.summary}", chunk.filename)]
            for d in e.diagnostics:
                diags.append(_diag("note", str(d), chunk.filename))
            raise Failed(diags) from None
        except LowerkitError as e:
            raise Failed([_diag("error", f"stage '{stage.name}': {e}", chunk.filename)]) from None
        except Exception as e:
            if hasattr(e, "error_diagnostics"):
                diags = chunk.from_mlir_error(e, f"stage '{stage.name}' failed")
                if diags[0].line is None and not notes:
                    diags[0].message = f"stage '{stage.name}' failed: {diags[0].message}"
                raise Failed(diags) from None
            where = _user_frame(e)
            diags = [_diag("error", f"stage '{stage.name}' raised {type(e).__name__}: {e}",
                                chunk.filename)]
            if where:
                diags.append(_diag("note", "raised here", *_split_where(where)))
            raise Failed(diags) from None
        if args.print_ir_after_all:
            sys.stderr.write(f"// -----// IR Dump After {stage.name} //----- //\n")
            sys.stderr.write(module_asm(module, elide=False) + "\n")
    return module_asm(module, elide=False)


def _split_where(where: str) -> tuple[str, int]:
    file, _, line = where.rpartition(":")
    return file, int(line)


def expected_diagnostics(chunk: Chunk) -> list[Diagnostic]:
    out = []
    for i, line in enumerate(chunk.text.split("\n"), start=1):
        for m in _EXPECTED.finditer(line):
            target = i
            if m.group(2):
                rel = m.group(2)[1:]
                target = i - 1 if rel == "above" else i + 1 if rel == "below" else i + int(rel)
            out.append(_diag(m.group(1), m.group(3), chunk.filename, target + chunk.line_offset))
    return out


def verify(chunk: Chunk, actual: list[Diagnostic]) -> list[str]:
    """Messages for every expected diagnostic not produced and every unexpected one."""
    problems = []
    remaining = list(actual)
    for exp in expected_diagnostics(chunk):
        match = next((a for a in remaining if a.severity == exp.severity and a.line == exp.line
                      and exp.message in a.message), None)
        if match is None:
            problems.append(f"{exp.location}:{exp.line}: error: expected {exp.severity} "
                            f"\"{exp.message}\" was not produced")
        else:
            remaining.remove(match)
    for a in remaining:
        if a.severity in ("error", "warning"):
            problems.append(f"{a.render().replace(f': {a.severity}: ', ': error: unexpected ' + a.severity + ': ', 1)}")
    return problems


def list_registered() -> str:
    lines = []
    for title, reg in (("pipelines", registry.pipelines), ("passes", registry.passes),
                       ("dialects", registry.dialects), ("custom-ops", registry.custom_ops)):
        lines.append(f"{title}:")
        for name in reg.names():
            try:
                obj = reg.get(name)
                doc = getattr(obj, "description", "") or ""
                if not doc and title == "dialects":
                    doc = ", ".join(obj.ops)
                if not doc and title == "passes":
                    doc = type(obj).__name__
            except Exception as e:  # a broken user entry is listed, not fatal
                doc = f"(cannot load: {e})"
            lines.append(f"  {name}" + (f"  - {doc}" if doc else ""))
    return "\n".join(lines) + "\n"


def load_user_file(path: str) -> None:
    """Import a user's Python file, which registers its passes/dialects/pipelines itself."""
    p = Path(path)
    spec = importlib.util.spec_from_file_location(f"lowerkit_user_{p.stem}", p)
    if spec is None or spec.loader is None:
        raise Failed([_diag("error", "cannot load as a Python file", path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        diags = [_diag("error", f"--load failed: {type(e).__name__}: {e}", path)]
        where = _user_frame(e)
        if where:
            diags.append(_diag("note", "raised here", *_split_where(where)))
        raise Failed(diags) from None


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lowerkit-opt", description=__doc__.splitlines()[0])
    p.add_argument("input", nargs="?", default="-", help="MLIR file (default: stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    p.add_argument("--pipeline", help="a registered pipeline (see --list)")
    p.add_argument("--pass", "-p", dest="passes", action="append", default=[], metavar="PASSES",
                   help="passes to run in order: 'a,b{opt=val}'; registered Python passes by "
                        "name, any other name as an MLIR pass of torch-mlir's build (repeatable)")
    p.add_argument("--pass-pipeline", help="a textual MLIR pass pipeline, run after --pass")
    p.add_argument("--dialect", dest="dialects", action="append", default=[],
                   help="load this IRDL dialect before parsing (repeatable; dialects whose ops "
                        "the input names are loaded anyway)")
    p.add_argument("--load", action="append", default=[], metavar="FILE.py",
                   help="a Python file that registers passes, pipelines, dialects or custom ops")
    p.add_argument("--split-input-file", action="store_true", help="run each '// -----' piece apart")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check expected-error/warning/remark comments instead of failing")
    p.add_argument("--print-ir-after-all", action="store_true", help="print IR after every stage (stderr)")
    p.add_argument("--list", action="store_true", help="list registered pipelines, passes, dialects")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        for path in args.load:
            load_user_file(path)
        if args.list:
            sys.stdout.write(list_registered())
            return 0
        try:
            stages = build_stages(args)
        except Exception as e:  # unknown names, bad options
            print(f"lowerkit-opt: error: {e}", file=sys.stderr)
            return 1
        if args.input == "-":
            text, filename = sys.stdin.read(), "<stdin>"
        else:
            try:
                text, filename = Path(args.input).read_text(), args.input
            except OSError as e:
                print(f"lowerkit-opt: error: cannot read {args.input}: {e.strerror}", file=sys.stderr)
                return 1
        outputs, failed = [], False
        for chunk in split_input(text, filename, args.split_input_file):
            notes: list[Diagnostic] = []
            errors: list[Diagnostic] = []
            try:
                outputs.append(run_chunk(chunk, stages, args, notes))
            except Failed as f:
                errors = f.diagnostics
                if any(n.severity == "error" for n in notes):
                    errors = [e for e in errors if not e.fallback]
            if args.verify_diagnostics:
                problems = verify(chunk, errors + notes)
                for line in problems:
                    print(line, file=sys.stderr)
                failed |= bool(problems)
            else:
                for d in notes + errors:
                    print(d.render(), file=sys.stderr)
                failed |= bool(errors) or any(n.severity == "error" for n in notes)
        if not (args.verify_diagnostics and not outputs):
            out = "\n// -----\n".join(outputs)
            if args.output == "-":
                sys.stdout.write(out)
            else:
                Path(args.output).write_text(out)
        return 1 if failed else 0
    except Failed as f:
        for d in f.diagnostics:
            print(d.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
