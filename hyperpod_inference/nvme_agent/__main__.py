"""``python -m nvme_agent`` (mounted from a ConfigMap) or ``python -m hyperpod_inference.nvme_agent``."""

import sys

from .cli import main

sys.exit(main())
