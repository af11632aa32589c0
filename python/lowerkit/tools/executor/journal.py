"""The JSON Lines journal of a batch: a header row, then one row per outcome as it arrives;
resuming from it, and splitting a batch into shards."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..._version import __version__
from ...errors import LowerkitError
from .outcome import Item, Outcome, jsonable


class JournalError(LowerkitError):
    """A journal that cannot be resumed (another run's, or not a journal)."""


class Journal:
    """Rows go to ``path`` as outcomes arrive (a run can be read, or stopped, midway). The
    header's ``run`` says what the batch is; `resume` refuses a journal of another batch. At
    the end, `finish` rewrites the file in item order, one row per item (the last one wins), so
    a run stopped and resumed ends as the same file as a run that never stopped."""

    def __init__(self, path: str | os.PathLike, header: dict, resume: bool = False):
        self.path = Path(path)
        self.header = jsonable({"journal": header.get("journal", "lowerkit executor"),
                                "lowerkit": __version__, **header})
        self.rows: dict[str, dict] = {}
        if resume and self.path.exists():
            self._read_existing()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.header) + "\n")
        self._file = open(self.path, "a")

    def _read_existing(self) -> None:
        lines = [line for line in self.path.read_text().splitlines() if line.strip()]
        try:
            rows = [json.loads(line) for line in lines]
        except json.JSONDecodeError:
            # a run killed while writing its last line: that row is lost, its item runs again
            rows = []
            for line in lines:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    break
        if not rows or "journal" not in rows[0]:
            raise JournalError(f"{self.path}: not a lowerkit journal (no header row)")
        if rows[0].get("run") != self.header.get("run"):
            raise JournalError(f"{self.path} is the journal of another batch: it ran "
                               f"{rows[0].get('run')}, this one is {self.header.get('run')}; "
                               "resume it with the same options, or write a new journal")
        # the header (kept) names the code that ran: a part run on other code would pass as it
        ran, now = rows[0].get("lowerkit_commit"), self.header.get("lowerkit_commit")
        if ran and (ran != now or self.header.get("lowerkit_dirty")):
            changed = " with changes" if self.header.get("lowerkit_dirty") else ""
            raise JournalError(f"{self.path} was run at lowerkit commit {ran}; this is "
                               f"{now or 'no commit'}{changed}: resume it from a checkout of "
                               f"{ran[:10]}, or write a new journal")
        for row in rows[1:]:
            if "key" in row and "status" in row:
                self.rows[row["key"]] = row

    def done(self) -> dict[str, Outcome]:
        """The outcomes already in the journal that count as done (not infrastructure)."""
        return {k: Outcome.from_row(r) for k, r in self.rows.items() if Outcome.from_row(r).done}

    def write(self, outcome: Outcome) -> None:
        row = jsonable(outcome.to_row())
        self.rows[outcome.key] = row
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def finish(self, items: list[Item]) -> None:
        """Rewrite the journal: the header, then each item's last row, in item order."""
        self._file.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(self.header) + "\n")
            for item in items:
                if item.key in self.rows:
                    f.write(json.dumps(self.rows[item.key]) + "\n")
        os.replace(tmp, self.path)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` (1 <= K <= N) as (K, N); None for None."""
    if text is None:
        return None
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be in 1..N")
    return k, n


def select_shard(items: list[Item], shard: tuple[int, int] | None) -> list[Item]:
    """Shard K of N: every N-th item from the K-th, so that each shard gets a like mix."""
    if shard is None:
        return list(items)
    k, n = shard
    return list(items)[k - 1::n]
