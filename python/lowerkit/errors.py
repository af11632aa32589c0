"""Exceptions lowerkit raises.

Every failure names where it happened (the stage) and, where known, the op and the
user's Python source line, so that a user never has to read a native stack dump.
"""

from __future__ import annotations

from pathlib import Path

from .diagnostics import Diagnostic


class LowerkitError(Exception):
    """Base class of every error lowerkit raises on purpose."""


# The one diagnostic record; the old name stays for users who catch StageError and read it.
OpDiagnostic = Diagnostic


class StageError(LowerkitError):
    """A stage of a pipeline (or IREE's compiler) failed on a module."""

    def __init__(
        self,
        stage: str,
        summary: str,
        diagnostics: list[Diagnostic] | None = None,
        reproducer: Path | None = None,
        command: str | None = None,
        *,
        why_no_command: str | None = None,
        tool_output: str | None = None,
    ):
        self.stage = stage
        self.summary = summary
        self.diagnostics = list(diagnostics or [])
        self.reproducer = reproducer
        self.command = command
        self.why_no_command = why_no_command  # when no command can replay the failure
        # everything a failed tool printed (iree-compile's stderr), not rendered: the parsed
        # diagnostics can miss a line that the compile ladder looks for (`KNOWN_CAUSES`)
        self.tool_output = tool_output
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [f"stage '{self.stage}' failed: {self.summary}"]
        for d in self.diagnostics:
            lines.append(f"  {d}")
        if self.reproducer is not None:
            lines.append(f"  reproducer: {self.reproducer}")
        if self.command:
            lines.append(f"  replay with: {self.command}")
        elif self.why_no_command:
            lines.append(f"  no replay command: {self.why_no_command}")
        return "\n".join(lines)


class UnsupportedError(StageError):
    """A stage knowingly refuses an op or a program that lowerkit does not support (not a bug).

    Raised only where the refusal is deliberate: an op torch-mlir does not know (left opaque as
    ``torch.operator``), a custom op with no registered lowering, 64-bit integer arithmetic on a
    target without Int64. Any other failure is a plain `StageError`; the fuzzer counts only this
    type as "unsupported" and every other error as a failure.
    """


class IngressError(LowerkitError):
    """torch.export or torch-mlir's FX importer could not import the program."""


class InputError(LowerkitError, TypeError):
    """The arguments given to a compiled program do not match its signature."""


class CheckError(LowerkitError, RuntimeError):
    """A compiled program's run-time check failed (`lowerkit.ingress.checks`): a call eager
    refuses too, e.g. values of another length than a boolean mask's true positions."""


class TargetError(LowerkitError, ValueError):
    """An unknown or unusable target, or a runtime driver that is not available."""


class DeviceLostError(LowerkitError):
    """A GPU device was lost (Vulkan's ``VK_ERROR_DEVICE_LOST``). lowerkit drops it, and the next
    call opens a fresh one; what lived on the lost device (``keep_on_device`` results) is gone."""


class PipelineError(LowerkitError, ValueError):
    """A pipeline was asked for a stage it does not have (``until=``, ``--until``)."""


class RegistryError(LowerkitError, KeyError):
    """A name looked up in, or added to, a registry is unknown or already taken."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class VerificationError(LowerkitError):
    """``verify=True``: a compiled program's outputs differ from eager PyTorch's.

    ``path`` names the first differing output (``output[0]``, ``output['logits']``...),
    ``max_abs_error`` the worst error seen, ``target``/``device`` where it ran."""

    def __init__(self, detail: str, path: str | None = None, max_abs_error: float | None = None,
                 target: str | None = None, device: str | None = None):
        self.detail = detail
        self.path = path
        self.max_abs_error = max_abs_error
        self.target = target
        self.device = device
        where = f" on {target} ({device})" if target else ""
        super().__init__(f"compiled program differs from eager PyTorch{where}: {detail}")
