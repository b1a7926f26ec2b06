"""dualmem.bench."""
