"""Screens of the debugger: the trace screen and the key help.

The trace screen composes and routes; its loader, filters, status bar and view handlers each have
a module of their own beside it.
"""
