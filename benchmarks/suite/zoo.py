"""The hand-written zoo (`lowerkit.zoo`; ``lowerkit bench zoo``), its models at small sizes."""

from lowerkit.tools.bench import zoo_models
from lowerkit.zoo import ZOO

from ._common import GEOMEAN, SETUP_TIMEOUT, _ModelSet, programs

QUICK = ["mlp", "cumsum"]


class Zoo(_ModelSet):
    """Every zoo model `lowerkit bench zoo` times, against eager and torch.compile."""

    params = [programs(zoo_models(include_slow=False), QUICK) + [GEOMEAN]]

    def make(self, name):
        return ZOO[name].make()

    def setup_cache(self):
        return self.measure()

    setup_cache.timeout = SETUP_TIMEOUT
