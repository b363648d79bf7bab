"""Before and after deploy: ``init`` writes a starter config from a real HyperPod cluster, ``doctor`` checks the
account and the cluster against a config. Both call AWS read-only with boto3 and never import aws_cdk or jsii."""
