"""A permissive payload model for vocabulary types whose schema is still open."""

from pydantic import BaseModel, ConfigDict


class OpenPayload(BaseModel):
    """Any JSON object. Replace with a closed model once the type's shape is settled."""

    model_config = ConfigDict(extra="allow")
