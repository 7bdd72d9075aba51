"""``python -m fpdebug`` runs the command-line interface."""

from __future__ import annotations

import sys

from fpdebug.cli import main

sys.exit(main())
