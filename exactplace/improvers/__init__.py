"""Primal improvers: moves that turn a feasible placement into a better one (polish, race, latency starts)."""
