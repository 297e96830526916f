"""Environments a subject (``trb-collect``) or a model (closed-loop rollouts) acts in, through one protocol.

:mod:`environments.base` defines the protocol and the registry (built-ins and the
``trb.environments`` entry-point group, as adapters are registered); :mod:`environments.grid`
is the built-in grid world (:mod:`simworld`).
"""

from environments.base import (
    ENTRY_POINT_GROUP,
    Environment,
    EnvironmentRefused,
    Episode,
    StepOutcome,
    environment_names,
    get_environment,
    register_environment,
)

__all__ = ["ENTRY_POINT_GROUP", "Environment", "EnvironmentRefused", "Episode", "StepOutcome", "environment_names",
           "get_environment", "register_environment"]
