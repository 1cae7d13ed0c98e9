"""Figures over stored runs: run reports, POPE reports, ChEF's desiderata, capability groups, arena ratings and
matchmaking, charts."""
