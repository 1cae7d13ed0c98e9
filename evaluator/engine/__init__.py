"""Asking models: the run engine (CircularEval in waves, servers streamed), launching and resuming runs,
progress events, run variants, prompts and presets, multi-turn passes, corruptions, live answers."""
