"""The Hub on loopback as a fixture for the tests of this folder."""

from .hub_repos import model_hub  # noqa: F401 - a fixture
