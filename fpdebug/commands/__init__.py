"""One module per ``fpdebug`` sub-command (``HELP``, ``add_arguments``, ``run``); see :mod:`fpdebug.cli`."""
