"""``python -m lowerkit``: the same as the ``lowerkit`` command."""

import sys

from .cli import main

sys.exit(main())
