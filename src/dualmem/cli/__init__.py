"""dualmem.cli."""
