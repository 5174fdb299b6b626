"""Dagster wiring, one module per layer. Thin: every computation lives in ``components``.

Resource classes live here (assets type their parameters with them); ``orchestration``
only instantiates and binds them.
"""
