"""From a chosen answer back to the context that caused it: provenance, suspects, causal reruns."""
