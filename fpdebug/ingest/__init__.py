"""Importers: other programs' recordings (agentfootprint, OpenTelemetry) turned into fpdebug traces."""
