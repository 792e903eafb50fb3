"""The addresses the load rules and the authoring gate report at: ``trace_checks.<id>`` (or
``trace_checks.<path>.<id>`` in a route), then ``.require.<kind>…`` and ``.bind.match``.
"""

from __future__ import annotations

from collections.abc import Iterator

from schemas.trace_checks import Constraint, Require, TraceChecksConfig
from schemas.trace_matchers import Matcher


def iter_constraints(cfg: TraceChecksConfig) -> Iterator[tuple[str, Constraint]]:
    """(address, constraint): trace_checks.<id> shared, trace_checks.<path>.<id> in a route."""
    for c in cfg.shared:
        yield f"trace_checks.{c.id}", c
    for path in cfg.paths:
        for c in path.constraints:
            yield f"trace_checks.{path.id}.{c.id}", c


def iter_nodes(req: Require, address: str) -> Iterator[tuple[Require, str]]:
    yield req, address
    kind = req.kind
    for i, child in enumerate(req.children()):
        sub = f"{address}.{kind}[{i}]" if kind != "negate" else f"{address}.negate"
        yield from iter_nodes(child, sub)


def leaf_matchers(req: Require) -> tuple[tuple[str, Matcher], ...]:
    """(payload path, matcher) for a leaf kind's matchers, the path led by the matcher's role;
    () for a composite."""
    p = req.payload
    match req.kind:
        case "present" | "absent" | "count":
            return (("match", p.match),)
        case "before" | "immediately_before":
            return (("left.match", p.left.match), ("right.match", p.right.match))
        case "absent_before":
            return (("forbidden", p.forbidden), ("anchor.match", p.anchor.match))
        case "absent_between":
            return (
                ("forbidden", p.forbidden),
                ("start.match", p.start.match),
                ("end.match", p.end.match),
            )
    return ()


def iter_matchers(req: Require, address: str) -> Iterator[tuple[str, Matcher]]:
    """(address, matcher) for every matcher of a require tree, in declaration order."""
    for node, where in iter_nodes(req, address):
        for path, matcher in leaf_matchers(node):
            yield f"{where}.{node.kind}.{path}", matcher


def constraint_matchers(c: Constraint, address: str) -> list[tuple[str, Matcher]]:
    """(address, matcher) for every matcher of one constraint: its require tree, then its binder."""
    sites = list(iter_matchers(c.require, f"{address}.require"))
    if c.bind is not None:
        sites.append((f"{address}.bind.match", c.bind.match))
    return sites


def iter_block_matchers(cfg: TraceChecksConfig) -> Iterator[tuple[str, Matcher]]:
    """Every matcher of a block, at the address the authoring gate reports it at."""
    for address, constraint in iter_constraints(cfg):
        yield from constraint_matchers(constraint, address)
