"""Bundled data: the demo conversation."""
