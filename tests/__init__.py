"""The project's tests. Also imported by the scripts run as ``python -m tests.…`` (``tests.golden.inventory``), so
jsii's Node 20 end-of-life banner is silenced here as in tests/conftest.py: set before any test module imports
aws_cdk, whose import starts the jsii kernel."""

import os

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
