"""Every zoo model through the whole CPU path, checked against eager (slow ones opt-in)."""

from __future__ import annotations

import pytest

from lowerkit.zoo import ZOO, models
from lowerkit.zoo.coverage import check_model


def _param(m):
    marks = []
    if m.slow:
        marks.append(pytest.mark.slow)
    if "known-failure" in m.tags:
        marks.append(pytest.mark.xfail(reason="known pipeline failure, see the zoo entry"))
    return pytest.param(m, id=m.name, marks=marks)


@pytest.mark.parametrize("entry", [_param(m) for m in models(include_slow=True)])
def test_zoo_model_matches_eager(entry):
    result = check_model(entry)
    assert result.ok, f"{entry.name} stopped at {result.stage}: {result.message}"


def test_zoo_is_big_enough_and_well_formed():
    assert len(ZOO) >= 25
    groups = {m.group for m in ZOO.values()}
    assert groups == {"vision", "language", "sequence", "ops"}
    for m in ZOO.values():
        assert callable(m.factory), m.name
