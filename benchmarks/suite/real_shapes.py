"""Issue 22's real-shape set (`lowerkit.zoo.real_shapes`; ``lowerkit bench real``): the
README's headline figures."""

from lowerkit.zoo.real_shapes import REAL_SHAPES, available

from ._common import GEOMEAN, SETUP_TIMEOUT, _ModelSet, programs

QUICK = ["sdpa_1500", "bert_base_layer"]


class RealShapes(_ModelSet):
    """The real-shape set against eager and torch.compile, torch on 2 threads."""

    params = [programs([m.name for m in available()[0]], QUICK) + [GEOMEAN]]

    def make(self, name):
        return REAL_SHAPES[name].make()

    def setup_cache(self):
        return self.measure()

    setup_cache.timeout = SETUP_TIMEOUT
