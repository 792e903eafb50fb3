"""A run's ``graph.json`` in canonical form, and its digest (FORMAT.md § 3)."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from typing import Any

from replay.vcore_run import RebuildError

GRAPH_SCHEMA = "verdict.orchestration/v1"

NODE_DEFAULTS: dict[str, Any] = {
    "kind": "implement",
    "story": "",
    "depends_on": [],
    "owned_files": [],
    "required_context": [],
    "acceptance": [],
    "verification_command": [],
    "barrier": "",
    "risk": "low",
    "required_capabilities": ["tools"],
    "coding": True,
    "reasoning": False,
    "min_context_tokens": 32000,
}
NODE_FIELDS = ("node_id", "objective", *NODE_DEFAULTS)
_LIST_FIELDS = ("depends_on", "acceptance", "verification_command", "required_capabilities")
_PATH_FIELDS = ("owned_files", "required_context")


def _as_list(value: Any, field: str, node_id: str) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    raise RebuildError(
        f"graph node {node_id!r}: {field} must be a list, got {type(value).__name__}"
    )


def _norm_path(item: Any, field: str, node_id: str) -> str:
    path = str(item).strip().replace("\\", "/")
    if path.startswith("/") or ".." in path.split("/"):
        raise RebuildError(
            f"graph node {node_id!r}: {field} entry {item!r} must be a relative path inside the repo"
        )
    return posixpath.normpath(path)


def _barrier(value: Any) -> str:
    if value is True:
        return "integration"
    if value is False or value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def normalise_node(raw: Any) -> dict[str, Any]:
    """§ 3 step 2: exactly the node fields, defaults filled, values coerced."""
    if not isinstance(raw, dict):
        raise RebuildError(f"graph node must be an object, got {type(raw).__name__}")
    node_id = str(raw.get("node_id", ""))
    unknown = sorted(set(raw) - set(NODE_FIELDS))
    if unknown:
        raise RebuildError(f"graph node {node_id!r}: unknown key(s) {unknown}")
    if "node_id" not in raw or "objective" not in raw:
        raise RebuildError(f"graph node {node_id!r}: node_id and objective are required")
    node = {**NODE_DEFAULTS, **raw}
    out: dict[str, Any] = {"node_id": node_id, "objective": str(node["objective"])}
    out["kind"] = str(node["kind"])
    out["story"] = str(node["story"])
    for f in _LIST_FIELDS:
        out[f] = [str(x) for x in _as_list(node[f], f, node_id)]
    for f in _PATH_FIELDS:
        out[f] = [_norm_path(x, f, node_id) for x in _as_list(node[f], f, node_id)]
    out["barrier"] = _barrier(node["barrier"])
    risk = str(node["risk"]).lower()
    out["risk"] = risk if risk in ("low", "medium", "high") else "medium"
    out["coding"] = bool(node["coding"])
    out["reasoning"] = bool(node["reasoning"])
    out["min_context_tokens"] = int(node["min_context_tokens"])
    return {k: out[k] for k in NODE_FIELDS}


def canonical_graph(graph: Mapping[str, Any]) -> dict[str, Any]:
    """§ 3 steps 1–4 (``run_id`` and extra top-level keys such as ``openspec`` dropped)."""
    nodes = graph.get("nodes") or []
    if not isinstance(nodes, list):
        raise RebuildError("graph.json: nodes must be a list")
    return {
        "schema_version": GRAPH_SCHEMA,
        "goal": graph.get("goal", ""),
        "topology": graph.get("topology") or "PARALLEL_WORK_UNITS",
        "rationale": graph.get("rationale") or [],
        "max_parallel": int(graph.get("max_parallel") or 3),
        "nodes": [normalise_node(n) for n in nodes],
    }


def graph_digest(canonical: Mapping[str, Any]) -> str:
    """§ 3 step 5."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
