"""An item of a batch and the one outcome it gets."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# ok: ran, no failure found; fail: ran, found a failure (a wrong answer, an error);
# crash: the process running it died (a signal); timeout: no result in time, stopped;
# infrastructure: the executor could not run it (a lost node, Ray itself): not the item's fault.
STATUSES = ("ok", "fail", "crash", "timeout", "infrastructure")
# what `--resume` counts as done; an infrastructure outcome is run again
DONE = ("ok", "fail", "crash", "timeout")


@dataclass(frozen=True)
class Item:
    """One unit of work: a key unique within its batch and small JSON-able data (a program's
    source, a test name, a model id, a candidate)."""

    key: str
    data: dict = field(default_factory=dict)
    timeout_s: float | None = None
    gpu: bool = False  # on Ray: run on an actor that holds a GPU


@dataclass
class Outcome:
    """What happened to one item. ``verdict`` is the job's own word (the fuzzer's ``passed``,
    the e2e runner's ``mismatch``...); ``data`` the job's record; ``run`` how it ran (seconds,
    worker, attempts): everything else is the same whichever backend ran it."""

    key: str
    status: str
    verdict: str | None = None
    stage: str | None = None
    message: str = ""
    log_tail: str = ""
    reproducer: str | None = None
    data: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"outcome status {self.status!r} is not one of {STATUSES}")

    @property
    def done(self) -> bool:
        return self.status in DONE

    def to_row(self) -> dict:
        """One flat JSON row: the outcome's fields, then the job's record (``data``) beside
        them (a key of the record that an outcome field has is the field's), then ``run``."""
        row = {k: v for k, v in asdict(self).items() if k not in ("data", "run")}
        row.update({k: v for k, v in self.data.items() if k not in row and k != "run"})
        row["run"] = dict(self.run)
        return row

    @classmethod
    def from_row(cls, row: dict) -> "Outcome":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in row.items() if k in names and k != "data"},
                   data={k: v for k, v in row.items() if k not in names})


def tail(text: str, lines: int = 20, chars: int = 4000) -> str:
    """The last ``lines`` lines of ``text`` (at most ``chars`` characters)."""
    return "\n".join(str(text).splitlines()[-lines:])[-chars:]


def jsonable(value: Any) -> Any:
    """``value`` with anything JSON cannot hold turned into its string."""
    import json

    return json.loads(json.dumps(value, default=str))
