"""Moved to :mod:`hyperpod_inference.facts.rules`; kept so that ``from hyperpod_inference.config import rules`` works."""

from ..facts.rules import *  # noqa: F403
from ..facts.rules import PATTERN_DESCRIPTIONS  # noqa: F401
