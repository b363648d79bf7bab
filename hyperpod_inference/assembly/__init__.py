"""The composition: realizes the plan (``hyperpod_inference.plan``: no aws_cdk, no jsii) on the AWS side
(``aws_side``), then the Kubernetes side (``kubernetes_side``), then delivers it (``delivery``); the operator install,
the stack homes, outputs, review copies, ownership and size limits. ``HyperPodInference`` (``inference.py``) calls
them. It decides nothing the plan could.

Importing this package imports nothing: each module is imported by name.
"""
