"""Benchmarks, prompts, model backends, CircularEval / POPE, extraction, metrics, reports (no Qt)."""
