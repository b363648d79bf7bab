"""The worker's health and load limits: its liveness, readiness and startup probes (core/v1 Probe) and its request
limits."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from .base import NonNegative, Positive, Strict, Text, crd, crd_required


class ExecAction(Strict):
    command: list[Annotated[str, StringConstraints(min_length=1)]] = crd_required("command", min_length=1)
    """The command run in the container."""


class HttpHeader(Strict):
    name: Text = crd_required("name")
    """Header name."""
    value: str = crd_required("value")
    """Header value."""


PortRef = Annotated[int, Field(ge=1, le=65535)] | Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=15)]


class HttpGetAction(Strict):
    path: Annotated[str, StringConstraints(pattern=r"^/\S*$", max_length=1024)] | None = crd("path")
    """Path requested."""
    port: PortRef = crd_required("port")
    """Port number or name."""
    host: Text | None = crd("host")
    """Host to connect to."""
    scheme: Literal[prod_facts.PROBE_SCHEMES] | None = crd("scheme")  # type: ignore[valid-type]
    """HTTP or HTTPS."""
    http_headers: list[HttpHeader] | None = crd("httpHeaders")
    """Headers sent."""


class TcpSocketAction(Strict):
    port: PortRef = crd_required("port")
    """Port number or name."""
    host: Text | None = crd("host")
    """Host to connect to."""


class GrpcAction(Strict):
    port: Annotated[int, Field(ge=1, le=65535)] = crd_required("port")
    """Port number."""
    service: Text | None = crd("service")
    """gRPC health service name."""


class Probe(Strict):
    """A core/v1 Probe: exactly one handler."""

    exec_: ExecAction | None = crd("exec", alias="exec")
    """Run a command."""
    http_get: HttpGetAction | None = crd("httpGet")
    """Send an HTTP GET."""
    tcp_socket: TcpSocketAction | None = crd("tcpSocket")
    """Open a TCP connection."""
    grpc: GrpcAction | None = crd("grpc")
    """Call the gRPC health check."""
    initial_delay_seconds: NonNegative | None = crd("initialDelaySeconds")
    """Seconds before the first probe."""
    period_seconds: Positive | None = crd("periodSeconds")
    """Seconds between probes."""
    timeout_seconds: Positive | None = crd("timeoutSeconds")
    """Seconds a probe may take."""
    success_threshold: Positive | None = crd("successThreshold")
    """Successes needed after a failure."""
    failure_threshold: Positive | None = crd("failureThreshold")
    """Failures before acting."""
    termination_grace_period_seconds: Positive | None = crd("terminationGracePeriodSeconds")
    """Grace period when the probe fails."""

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        given = [n for n, v in (("exec", self.exec_), ("httpGet", self.http_get), ("tcpSocket", self.tcp_socket),
                                ("grpc", self.grpc)) if v is not None]
        if len(given) != 1:
            raise PydanticCustomError("probe", "give exactly one of exec, httpGet, tcpSocket, grpc (got {n})",
                                      {"n": ", ".join(given) or "none"})
        return self


class Probes(Strict):
    liveness_probe: Probe | None = crd("livenessProbe")
    """Restart the container when it fails."""
    readiness_probe: Probe | None = crd("readinessProbe")
    """Remove the pod from service when it fails."""
    startup_probe: Probe | None = crd("startupProbe")
    """Hold the other probes until the model has started."""


class RequestLimits(Strict):
    max_concurrent_requests: Positive | None = crd("maxConcurrentRequests")
    """Requests served at once."""
    max_queue_size: NonNegative | None = crd("maxQueueSize")
    """Requests waiting beyond those."""
    overflow_status_code: Annotated[
        int, Field(ge=prod_facts.OVERFLOW_STATUS_RANGE[0], le=prod_facts.OVERFLOW_STATUS_RANGE[1])] | None = crd(
        "overflowStatusCode")
    """HTTP status when the queue is full."""
