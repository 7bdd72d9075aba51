"""Widgets of the debugger: virtualised lists and documents, and the views built on them."""
