#!/usr/bin/env python3
"""cdk synth / cdk deploy entry point: see hyperpod_inference/app.py."""

import sys

from hyperpod_inference.app import main

if __name__ == "__main__":
    sys.exit(main())
