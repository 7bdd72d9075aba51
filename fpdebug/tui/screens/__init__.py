"""Screens of the debugger: the trace screen and the key help."""
