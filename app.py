#!/usr/bin/env python3
"""cdk synth / cdk deploy entry point: see hyperpod_inference/app.py."""

import os
import sys

# jsii prints a large end-of-life banner on every start under Node 20. `make` and `npx cdk` run the Node 22 that
# package.json pins (node_modules/.bin first on PATH); this keeps `cdk synth` readable when an older Node runs it.
# It must be set before aws_cdk is imported: the import starts the jsii kernel.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from hyperpod_inference.app import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
