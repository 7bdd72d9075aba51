"""Reliability and security: faults, bad input, secrets, terminal safety, no silent live calls (issue 9)."""
