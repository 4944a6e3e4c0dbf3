"""``python -m ctasim.validation``: the same as ``ctasim validate``."""

from ctasim.validation.pipeline import main

raise SystemExit(main())
