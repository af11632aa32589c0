# lit configuration for lowerkit: `lit test/lit pipelines` (or `cmake --build B -t check-lowerkit`).
# Turns what is installed into lit features, so tests for a missing driver are skipped, not failed.

import os
import shutil
import subprocess
import sys

import lit.formats

config.name = "lowerkit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["Inputs", "__init__.py", "lit.cfg.py", "lit.local.cfg", "conftest.py", "Output", "__pycache__"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "build", "lit")

python = sys.executable
bindir = os.path.dirname(python)
config.environment["PATH"] = os.pathsep.join([bindir, config.environment.get("PATH", os.environ["PATH"])])
for var in ("HOME", "XDG_RUNTIME_DIR", "LOWERKIT_CACHE_DIR", "TMPDIR", "VK_ICD_FILENAMES"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# a developer's tuning database (lowerkit tune) would change the IR these tests check
config.environment["LOWERKIT_TUNING_DB"] = "off"

config.substitutions.append(("%PYTHON", python))
filecheck = shutil.which("FileCheck") or shutil.which("filecheck", path=bindir) or "filecheck"
config.substitutions.append(("FileCheck", filecheck))
lowerkit_opt = shutil.which("lowerkit-opt", path=bindir) or "lowerkit-opt"
config.substitutions.append(("lowerkit-opt", lowerkit_opt))
config.substitutions.append(("%lowerkit", shutil.which("lowerkit", path=bindir) or "lowerkit"))

# Features: IREE runtime drivers that can open a device here.
try:
    probe = subprocess.run(
        [python, "-c", "import lowerkit.runtime.executable as r; print(' '.join(r.usable_drivers()))"],
        capture_output=True, text=True, timeout=60,
    )
    for driver in probe.stdout.split():
        config.available_features.add(f"driver-{driver}")
except Exception:
    pass
config.available_features.add("cpu")
