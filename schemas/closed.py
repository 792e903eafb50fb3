"""The base of every closed payload and config model: a misspelt key is refused rather than
left unset, and an instance is frozen."""

from pydantic import BaseModel, ConfigDict


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
