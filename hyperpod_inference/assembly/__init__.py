"""The composition: a pure plan per endpoint (``plan``, ``plan_commands``: no aws_cdk, no jsii), realized on the AWS
side (``aws_side``), then the Kubernetes side (``kubernetes_side``), then delivered (``delivery``); the operator install,
the stack homes, outputs, review copies, ownership and size limits. ``HyperPodInference`` (``inference.py``) calls them.

Importing this package imports nothing: each module is imported by name.
"""
