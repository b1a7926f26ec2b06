"""dualmem.write."""
