"""Orchestration that spans the toolkit's packages (``corpus`` and ``trb``): the demo.

The eval engine (``trb``) imports no ``corpus`` module; the one job that drives both
halves end to end lives here, outside the engine, as ``trb-demo``.
"""
