"""``python -m bench``: every performance figure in one table (see :mod:`bench.run`)."""

from __future__ import annotations

from bench.run import main

raise SystemExit(main())
