"""Defaults an option's help shows, defined once here (stdlib only) so that ``vledger CMD
--help`` imports no store, reader or projection to print them (issue 17 § 8)."""

from pathlib import Path

DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # the largest YAML or run file read (sources/yaml_safe)
DEFAULT_PACKS = Path("corpora") / "packs"  # this repository's task packs, when they exist
