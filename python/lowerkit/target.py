"""Target: which IREE backend compiles a program and which runtime driver runs it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import TargetError


@dataclass(frozen=True)
class Target:
    """An IREE compilation target: the backend, its device options, and the runtime driver."""

    name: str                 # "cpu", "cpu:znver4", ...
    backend: str              # IREE's name: llvm-cpu, vulkan-spirv, cuda
    driver: str               # IREE runtime driver: local-task, vulkan, cuda
    flags: tuple[str, ...] = field(default_factory=tuple)

    def compile_flags(self) -> list[str]:
        return list(self.flags)

    def to_json(self) -> dict:
        return {"name": self.name, "backend": self.backend, "driver": self.driver,
                "flags": list(self.flags)}

    @staticmethod
    def from_json(d: dict) -> "Target":
        return Target(d["name"], d["backend"], d["driver"], tuple(d["flags"]))

    @staticmethod
    def parse(spec: "str | Target") -> "Target":
        """``"cpu"``, ``"cpu:CPU"`` (an LLVM CPU name; ``host`` by default) or a `Target`."""
        if isinstance(spec, Target):
            return spec
        if not isinstance(spec, str):
            raise TargetError(f"target must be a string or a Target, got {type(spec).__name__}")
        kind, _, arch = spec.partition(":")
        factory = _FACTORIES.get(kind)
        if factory is None:
            raise TargetError(
                f"unknown target {spec!r}; valid targets: {', '.join(_FACTORIES)} "
                "(e.g. 'cpu', 'cpu:host', 'cpu:znver4')"
            )
        return factory(arch)


def cpu(arch: str = "") -> Target:
    """IREE's llvm-cpu backend, tuned for ``arch`` (the host's CPU by default)."""
    arch = arch or "host"
    return Target(
        f"cpu:{arch}" if arch != "host" else "cpu",
        "llvm-cpu",
        "local-task",
        (
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            f"--iree-llvmcpu-target-cpu={arch}",
        ),
    )


_FACTORIES = {"cpu": cpu}
