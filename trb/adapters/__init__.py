"""Adapters: the two-hook contract (spec §2) and its implementations."""

from trb.adapters.base import Adapter, AdapterTier

__all__ = ["Adapter", "AdapterTier"]
