"""What an endpoint publishes about itself: the metrics the operator scrapes and the SageMaker endpoint's tags."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from .base import Strict, crd, crd_required


class ModelMetrics(Strict):
    path: Annotated[str, StringConstraints(pattern=prod_facts.METRICS_PATH, max_length=256)] | None = crd("path")
    """Path the model serves metrics on."""
    port: Annotated[int, Field(ge=prod_facts.METRICS_PORT_RANGE[0], le=prod_facts.METRICS_PORT_RANGE[1])] | None = crd(
        "port")
    """Port the model serves metrics on; warned when it is not the model server's port (nothing else in the pod
    serves metrics)."""


class Metrics(Strict):
    enabled: bool | None = crd("enabled")
    """Turn metrics scraping on."""
    metrics_scrape_interval_seconds: Annotated[
        int, Field(ge=prod_facts.SCRAPE_INTERVAL_RANGE[0], le=prod_facts.SCRAPE_INTERVAL_RANGE[1])] | None = crd(
        "metricsScrapeIntervalSeconds")
    """Seconds between scrapes."""
    model_metrics: ModelMetrics | None = crd("modelMetrics")
    """Where the model serves its metrics."""


class Tag(Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=prod_facts.TAG_KEY_MAX)] = crd_required(
        "name", description="Tag key: 1-128 characters, not starting with aws: (reserved by AWS; SageMaker refuses "
                            "it), unique among the endpoint's tags.")
    value: Annotated[str, StringConstraints(max_length=prod_facts.TAG_VALUE_MAX)] = crd_required("value")
    """Tag value (at most 256 characters)."""

    @model_validator(mode="after")
    def _not_reserved(self) -> Tag:
        if self.name.lower().startswith("aws:"):
            raise PydanticCustomError("tag", "tag keys starting with aws: are reserved by AWS; SageMaker refuses "
                                      "them ({name})", {"name": self.name})
        return self
