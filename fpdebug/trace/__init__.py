"""The trace: fpdebug's contract on disk. Imports nothing of fpdebug's but itself.

Standard library, pydantic and orjson only: the engine writes it, every view and the backtracker
read it.
"""
