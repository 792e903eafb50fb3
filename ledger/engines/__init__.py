"""The engines by name (the interface is :mod:`ledger.engines.base`); each is imported only
when asked for, so the core install never imports Ray."""

from __future__ import annotations

from typing import Any

from ledger.defaults import DEFAULT_WORKERS
from ledger.engines.base import Engine, EngineError
from schemas.errors import UsageError

ENGINES = ("local", "ray")


def check_address(engine: object, address: str | None) -> None:
    """A cluster address is the ray engine's: with any other it is refused, not ignored."""
    if address is not None and engine != "ray":
        raise UsageError("--address needs --engine ray")


def get_engine(name: str, *, workers: int = DEFAULT_WORKERS, **options: Any) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``); ``options`` go to its constructor."""
    if name == "local":
        from ledger.engines.local import LocalEngine

        return LocalEngine(workers=workers)
    if name == "ray":
        from ledger.engines.ray_engine import RayEngine

        return RayEngine(workers=workers, **options)
    raise EngineError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
