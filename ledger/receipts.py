"""Receipt verification at the file/ledger seam.

* verdict-core run directories: read ``receipt.json``, ``events.jsonl``, ``graph.json``
  and ``review.json`` and hand their bytes to the pure verifier in
  ``replay.vcore_receipt`` (FORMAT.md § 7).
"""

from __future__ import annotations

from pathlib import Path

from replay.vcore_receipt import RunFiles, verify_run_files


def _read_optional(path: Path) -> tuple[bytes | None, str | None]:
    """(bytes, None) when readable, (None, None) when absent, (None, error) otherwise."""
    try:
        return path.read_bytes(), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, str(exc)


def read_run_dir(run_dir: Path) -> RunFiles:
    """The files of a verdict-core run directory, as the verifier needs them."""
    run_dir = Path(run_dir)
    receipt, receipt_err = _read_optional(run_dir / "receipt.json")
    # An unreadable events.jsonl reads as missing (§ 7 step 4): there is nothing to hash.
    events, _ = _read_optional(run_dir / "events.jsonl")
    graph_path = run_dir / "graph.json"
    try:
        graph, graph_err = graph_path.read_bytes(), None
    except OSError as exc:  # absent graph is a rebuild error too (FORMAT.md § 7 step 6)
        graph, graph_err = None, f"cannot read graph.json: {exc}"
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


def verify_run_dir(run_dir: Path) -> list[str]:
    """FORMAT.md § 7 problem strings for a run directory; ``[]`` means it verifies."""
    return verify_run_files(read_run_dir(Path(run_dir)))
