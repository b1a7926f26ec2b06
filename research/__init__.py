"""dualmem's research code: cross-validation harnesses and experiments over the dev corpora.

Not part of the wheel (``pip install dualmem`` ships the product and ``dualmem bench locomo``);
run from the repository root with the project installed, e.g. ``python -m research.run_cv_joint``.
Every figure in docs/benchmarks.md names the command that produced it.
"""
