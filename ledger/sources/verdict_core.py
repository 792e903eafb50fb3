"""verdict-core run directories → ``run.event`` per events.jsonl line + ``receipt.issued``.

verdict-core's ``events_digest`` is SHA-256 over the file's raw bytes (verdict-core FORMAT.md § 5), so
each ``run.event`` keeps its line's exact text and number, and ``receipt.issued`` the
file's layout: :func:`reassemble_events_file` gives back the original bytes. Lines split
on ``\\n`` only (a ``\\r`` stays inside its line). Stream naming: verdict-core FORMAT.md § 4; unknown
event types are accepted (a tolerant reader, § 1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger.defaults import DEFAULT_MAX_BYTES
from ledger.sources import strict_json
from ledger.sources.files import present, read_input
from ledger.sources.plan import PlannedEvent, escape, to_events
from ledger.sources.shape import BundleError, describe

MAX_JSON_BYTES = DEFAULT_MAX_BYTES


def run_stream(run_id: str) -> str:
    return f"run/{escape(run_id)}"


def _read_bytes(path: Path, label: str, max_bytes: int) -> bytes:
    """A run file's bytes: a regular file inside the run directory, at most ``max_bytes``
    (``ledger.sources.files``); refused by name otherwise."""
    return read_input(
        path,
        max_bytes=max_bytes,
        name=f"{label}/{path.name}",
        root=path.parent,
        what=f"the run directory {label}",
    )


def _read_optional_json(path: Path, label: str, max_bytes: int) -> Any:
    """The parsed file, or None when no such name exists (a dangling link is read, refused)."""
    if not present(path):
        return None
    return strict_json.loads(_read_bytes(path, label, max_bytes), f"{label}/{path.name}")


def parse_events_file(data: bytes, file: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Split events.jsonl into per-line payloads and the file's layout record."""
    if len(data) > MAX_JSON_BYTES:
        raise BundleError(file, None, f"at most {MAX_JSON_BYTES} bytes", f"{len(data)} bytes")
    lines = data.split(b"\n")
    final_newline = data.endswith(b"\n")
    if final_newline:
        lines = lines[:-1]
    payloads: list[dict[str, Any]] = []
    blank: dict[str, str] = {}
    last_seq: int | None = None
    for n, raw_bytes in enumerate(lines, start=1):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BundleError(
                file, f"line {n}", "UTF-8 text", f"undecodable bytes ({exc.reason})"
            ) from None
        if not raw.strip():
            blank[str(n)] = raw
            continue
        # faithful or refused (strict_json): a NaN, a 65-bit integer, a key written twice
        # or a line nested past what canonical JSON stores is named by line, never kept
        try:
            v = strict_json.loads(raw, file, line=n)
        except strict_json.JsonInputError as exc:
            raise BundleError(
                file, f"line {n}", "one JSON object per line", f"corrupt event: {exc.problem}"
            ) from None
        if not isinstance(v, dict):
            raise BundleError(file, f"line {n}", "a JSON object", describe(v))
        for k in ("seq", "type"):
            if k not in v:
                raise BundleError(file, f"line {n}.{k}", "this key to be present", "nothing")
        seq = v["seq"]
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise BundleError(file, f"line {n}.seq", "an integer", describe(seq))
        if last_seq is not None and seq <= last_seq:
            raise BundleError(file, f"line {n}.seq", f"a seq greater than {last_seq}", str(seq))
        last_seq = seq
        data_field = v.get("data") or {}
        if not isinstance(data_field, dict):
            raise BundleError(file, f"line {n}.data", "a JSON object", describe(data_field))
        payloads.append(
            {
                "line": n,
                "raw": raw,
                "seq": seq,
                "at": str(v.get("at", "")),
                "type": str(v["type"]),
                "node_id": str(v.get("node_id", "")),
                "data": data_field,
            }
        )
    layout = {
        "bytes": len(data),
        "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        "line_count": len(lines),
        "final_newline": final_newline,
        "blank_lines": blank,
    }
    return payloads, layout


def reassemble_events_file(
    run_events: Sequence[Mapping[str, Any]], layout: Mapping[str, Any]
) -> bytes:
    """The exact bytes of events.jsonl from ``run.event`` payloads and the recorded layout."""
    by_line = {p["line"]: p["raw"] for p in run_events}
    blank = layout.get("blank_lines") or {}
    parts = []
    for n in range(1, layout["line_count"] + 1):
        text = by_line.get(n)
        if text is None:
            text = blank.get(str(n))
        if text is None:
            raise ValueError(
                f"line {n} of events.jsonl is neither a run.event nor a recorded blank line"
            )
        parts.append(text)
    out = "\n".join(parts)
    if layout["final_newline"]:
        out += "\n"
    return out.encode("utf-8")


def run_id_for(graph: Any, events: Sequence[Mapping[str, Any]], dir_name: str) -> str:
    if isinstance(graph, Mapping) and isinstance(graph.get("run_id"), str) and graph["run_id"]:
        return graph["run_id"]
    for p in events:
        if p["type"] == "run_started":
            rid = p["data"].get("run_id")
            if isinstance(rid, str) and rid:
                return rid
            break
    return dir_name


def run_events(
    path: Path, label: str, max_bytes: int = MAX_JSON_BYTES
) -> tuple[str, tuple[PlannedEvent, ...]]:
    """Read a run directory; return its stream and events (run.event…, receipt.issued)."""
    efile = f"{label}/events.jsonl"
    data = _read_bytes(path / "events.jsonl", label, max_bytes)
    payloads, layout = parse_events_file(data, efile)
    graph = _read_optional_json(path / "graph.json", label, max_bytes)
    review = _read_optional_json(path / "review.json", label, max_bytes)
    run_id = run_id_for(graph, payloads, path.name)
    typed: list[tuple[str, dict[str, Any]]] = [("run.event", p) for p in payloads]
    rpath = path / "receipt.json"
    if present(rpath):
        receipt_bytes = _read_bytes(rpath, label, max_bytes)
        receipt = strict_json.loads(receipt_bytes, f"{label}/receipt.json")
        try:
            receipt_text = receipt_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise BundleError(
                f"{label}/receipt.json", None, "UTF-8 text", "undecodable bytes"
            ) from None
        typed.append(
            (
                "receipt.issued",
                {
                    "run_id": run_id,
                    "run_dir": path.name,
                    "receipt": receipt,
                    "receipt_raw": receipt_text,
                    "graph": graph,
                    "review": review,
                    "events_file": layout,
                },
            )
        )
    stream = run_stream(run_id)
    return stream, to_events(stream, typed, label)
