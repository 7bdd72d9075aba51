"""Ingest: other programs' recordings turned into fpdebug traces (agentfootprint, OTLP), and the OTLP receiver."""
