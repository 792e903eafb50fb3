"""Defaults a ``vledger`` option shows in its help, defined once below every layer.

The CLI reads them at decoration time, so they live here (stdlib only) rather than in the
heavy modules that use them: ``vledger CMD --help`` must import no store, reader or
projection (issue 17 § 8).
"""

from pathlib import Path

# Refuse any YAML or run file larger than this, by name (ledger/sources/yaml_safe.py).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Where this repository keeps its task packs; the default only when it exists.
DEFAULT_PACKS = Path("corpora") / "packs"
