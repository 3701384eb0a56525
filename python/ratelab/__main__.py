"""``python -m ratelab`` is the ``ratelab`` command."""

import sys

from .cli import main

sys.exit(main())
