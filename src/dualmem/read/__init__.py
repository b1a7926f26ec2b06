"""dualmem.read."""
