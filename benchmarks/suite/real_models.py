"""The real-size zoo (`lowerkit.zoo.real_models`; ``lowerkit bench real-models``): torchvision
and timm models at their published input sizes."""

from lowerkit.zoo.real_models import REAL_MODELS, available

from ._common import GEOMEAN, SETUP_TIMEOUT, _ModelSet, programs

QUICK = ["convnext_atto"]


class RealModels(_ModelSet):
    """Real models at published sizes against eager and torch.compile, 7 rounds (each call is
    tens to thousands of ms)."""

    params = [programs([m.name for m in available()[0]], QUICK) + [GEOMEAN]]
    bench_rounds = 7

    def make(self, name):
        return REAL_MODELS[name].make()

    def setup_cache(self):
        return self.measure()

    setup_cache.timeout = SETUP_TIMEOUT
