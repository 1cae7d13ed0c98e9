"""Reviews, queues, quality-control decisions, blind adjudication and agreement statistics (pure Python, no Qt)."""
