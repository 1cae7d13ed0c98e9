"""Reading answers: choices and rotations, rule and LLM extraction, re-scoring, the metric registry, POPE's
parsers and metrics, the open metrics and the judge of open answers."""
