"""``python -m ratelab`` is the ``ratelab`` command."""

import sys

from ratelab.cli import main

sys.exit(main())
