"""``python -m ctahw``: the same as the ``ctahw`` console script."""

import sys

from ctahw.cli import main

sys.exit(main())
