"""A verdict-core run's files as the receipt verifier reads them (verdict-core FORMAT.md § 7).

Two places hold a run: its directory on disk, and the ``run/<run_id>`` stream that
``vledger ingest`` recorded it in (the exact events.jsonl bytes reassembled from the
``run.event`` lines and the layout kept on ``receipt.issued``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ledger.sources.files import InputError, present, read_input
from ledger.sources.verdict_core import MAX_JSON_BYTES, reassemble_events_file
from replay.receipts.run import RunFiles


def _read_optional(path: Path) -> tuple[bytes | None, str | None]:
    """(bytes, None) when readable, (None, None) when absent, (None, error) otherwise.

    Through the one confined, bounded reader: a run file that is a link out of the run
    directory, a device (``receipt.json -> /dev/zero``) or over the size limit is an
    error naming the file, never read."""
    if not present(path):
        return None, None
    try:
        data = read_input(path, max_bytes=MAX_JSON_BYTES, name=path.name, root=path.parent,
                          what="the run directory")  # fmt: skip
        return data, None
    except InputError as exc:
        return None, exc.problem


def read_run_dir(run_dir: Path) -> RunFiles:
    """The files of a verdict-core run directory, as the verifier needs them."""
    run_dir = Path(run_dir)
    receipt, receipt_err = _read_optional(run_dir / "receipt.json")
    # An unreadable events.jsonl reads as missing (§ 7 step 4): there is nothing to hash.
    events, _ = _read_optional(run_dir / "events.jsonl")
    graph_path = run_dir / "graph.json"
    graph, graph_err = _read_optional(graph_path)
    if graph is None:  # absent graph is a rebuild error too (verdict-core FORMAT.md § 7 step 6)
        why = graph_err or str(FileNotFoundError(2, "No such file or directory", str(graph_path)))
        graph_err = f"cannot read graph.json: {why}"
    review, review_err = _read_optional(run_dir / "review.json")
    return RunFiles(
        name=run_dir.resolve().name,
        receipt=receipt,
        events=events,
        graph=graph,
        graph_error=graph_err,
        review=review,
        review_error=None if review_err is None else f"cannot read review.json: {review_err}",
        receipt_error=receipt_err,
        events_label=str(run_dir / "events.jsonl"),
    )


RUN_PREFIX = "run/"


def ingested_run_files(lg: Any, stream: str) -> RunFiles | None:
    """The run ``vledger ingest`` recorded in ``stream`` (see above); ``None`` without a receipt."""
    run_events: list[dict[str, Any]] = []
    issued: dict[str, Any] | None = None
    for ev in lg.read(stream=stream):
        if ev.type == "run.event":
            run_events.append(ev.data())
        elif ev.type == "receipt.issued":
            data = ev.data()
            if isinstance(data.get("events_file"), dict) and "receipt_raw" in data:
                issued = data
    if issued is None:
        return None
    try:
        events: bytes | None = reassemble_events_file(run_events, issued["events_file"])
    except (KeyError, TypeError, ValueError):
        events = None  # reported by the verifier as ``missing events.jsonl``
    graph, review = issued.get("graph"), issued.get("review")
    return RunFiles(
        name=str(issued.get("run_dir") or stream[len(RUN_PREFIX) :]),
        receipt=str(issued["receipt_raw"]).encode(),
        events=events,
        # graph_digest binds graph.json's canonical content, not its bytes (verdict-core FORMAT.md § 3)
        graph=None if graph is None else orjson.dumps(graph),
        graph_error="cannot read graph.json: not present when the run was ingested"
        if graph is None
        else None,
        review=None if review is None else orjson.dumps(review),
        events_label=f"{stream}/events.jsonl",
    )
