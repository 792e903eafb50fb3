"""Defaults that ``vledger`` options show in their help, defined once below every layer
(stdlib only): the store, the readers and the API read them here, as the CLI does, so
``vledger CMD --help`` imports no store, reader or projection to print them
(``tests/test_cli_registry.py``)."""

import os
from pathlib import Path

DEFAULT_LEDGER = ".vledger"
DEFAULT_DEMO_LEDGER = Path(".vledger-demo")  # where `vledger demo` builds its ledger
DEFAULT_BUSY_TIMEOUT = 5.0  # seconds to wait for another process holding the ledger
DEFAULT_KEY_NAME = "vledger"  # the key name in a checkpoint's signature lines
DEFAULT_MAX_ROWS = 1_000_000  # rows per sealed segment (a longer trial still stays whole)
# Uncompressed bytes per segment: a segment is materialised whole when it is written (and
# by the task that reads it), so this bounds memory — 100k rows of replay outputs overran
# DuckDB's default 128MB buffer pool without it. ~100k typical trial rows.
DEFAULT_SEGMENT_BYTES = 32 * 2**20
DEFAULT_DUCKDB_MEMORY = "128MB"  # DuckDB's memory cap ($VLEDGER_DUCKDB_MEMORY overrides)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # the largest YAML or run file read (sources/yaml_safe)
DEFAULT_MAX_NODES = 2_000_000  # YAML nodes one document may build
DEFAULT_MAX_EXPANSION = 16  # YAML alias expansion: nodes built per node written
DEFAULT_PACKS = Path("corpora") / "packs"  # this repository's task packs, when they exist
DEFAULT_WORKERS = 1  # retrace: processes of the local engine, CPUs of a local Ray
DEFAULT_RECONCILE_WORKERS = 2  # CPUs of the local Ray reconcile's candidates run on
DEFAULT_MAX_RETRIES = 2  # Ray: retries of a crashed or failed segment task
DEFAULT_REPORT = Path("report.html")  # where `vledger report` writes


def default_ledger_path() -> Path:
    """The ledger no ``--ledger`` / ``ledger=`` names: ``$VLEDGER_HOME``, else ./.vledger."""
    return Path(os.environ.get("VLEDGER_HOME") or DEFAULT_LEDGER)


def default_workers() -> int:
    """How many processes read ``ingest``'s inputs when no ``--workers`` / ``workers=`` is
    given: the cores this process may run on (its CPU affinity, where the OS has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))
