"""Fakes at the network edge, shared by the test suite: a local OpenAI-compatible HTTP server."""
