"""An endpoint's ``verify``: the post-deploy check that invokes the SageMaker endpoint."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from ..facts.safety import payload_problem
from .base import ContentType, CrdPaths, NoCrd, Strict, _err, _raise_all


class Verify(Strict):
    """The post-deploy check. ``payload``: a string sent as given, or a YAML mapping or list sent as JSON (JSON content
    types only); None = the runtime's default. ``showResponse``: also report the answer's first bytes."""

    crd_paths: ClassVar[CrdPaths] = {
        "payload": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "content_type": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "fail_deployment": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
        "show_response": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                               "resource"),
        "timeout_minutes": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
    }
    payload: str | dict[str, Any] | list[Any] | None = None
    """The request body: a string sent as given, or a mapping or list sent as JSON; default the runtime's."""
    content_type: ContentType = "application/json"
    """The request's content type."""
    fail_deployment: bool = False
    """Fail (and roll back) the deployment when the endpoint does not answer."""
    show_response: bool = False
    """Report the first bytes of the answer."""
    timeout_minutes: Annotated[int, Field(ge=5, le=60)] = 60
    """How long to wait for the endpoint (5-60)."""

    @model_validator(mode="after")
    def _json_payload(self) -> Verify:
        problem = payload_problem(self.payload, self.content_type) if self.payload is not None else None
        if problem:
            _raise_all(type(self), [_err(("payload",), problem)])
        return self
