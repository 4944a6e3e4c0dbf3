"""``python -m ctasim``: the same as the ``ctasim`` console script."""

import sys

from ctasim.cli import main

sys.exit(main())
