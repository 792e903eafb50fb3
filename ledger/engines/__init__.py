"""The engines by name (the interface is :mod:`ledger.engines.base`); each is imported only
when asked for, so the core install never imports Ray."""

from __future__ import annotations

from typing import Any

from ledger.engines.base import Engine, EngineError

ENGINES = ("local", "ray")


def get_engine(name: str, *, workers: int = 1, **options: Any) -> Engine:
    """The engine called ``name`` (``local`` or ``ray``); ``options`` go to its constructor."""
    if name == "local":
        from ledger.engines.local import LocalEngine

        return LocalEngine(workers=workers)
    if name == "ray":
        from ledger.engines.ray_engine import RayEngine

        return RayEngine(workers=workers, **options)
    raise EngineError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
