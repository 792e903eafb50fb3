"""Where the tests' recorded data lives, declared once.

Everything is inside the repository (provenance and licences: ``tests/data/README.md``), so
a clone with nothing beside it runs the whole suite. ``corpora/`` is what the demo ingests;
``tests/data/`` holds the conformance fixtures the tests alone read.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# shipped with the product (corpora/README.md)
CORPORA = ROOT / "corpora"
NOTES = CORPORA / "notes_duplicate_check"
PACKS = CORPORA / "packs"
NARROWED = PACKS / "notes_duplicate_check_narrowed" / "grading.yaml"
VCORE_DEMO_RUN = CORPORA / "verdict-core" / "demo-run"
# the migration packs name their corpus relative to this directory (``--base``)
PACKS_BASE = ROOT

# test fixtures only (tests/data/README.md)
DATA = ROOT / "tests" / "data"
MERKLE_VECTORS = DATA / "merkle" / "vectors.json"
GVC_CASES = DATA / "gvc" / "derivation-cases.json"
GVC_REGISTRATION = DATA / "gvc" / "verdict-grade-registration.json"
TOLOKAFORGE = DATA / "tolokaforge"
GRADING_PARITY = TOLOKAFORGE / "grading_parity"
GRADING_BUNDLES = TOLOKAFORGE / "grading_bundles"
COMPAT_TARBALL = TOLOKAFORGE / "compat-0.33.1.tar.gz"
COMPAT_KINDS = ("trace", "grade")


def unpack_compat(dest: Path) -> Path:
    """Unpack the two compatibility corpora and their expected results into ``dest``;
    returns the folder holding ``{trace,grade}-corpus/`` and ``{trace,grade}-expected.json``.
    The ``data`` filter refuses absolute paths, ``..``, links out of ``dest`` and devices."""
    if not hasattr(tarfile, "data_filter"):  # added in Python 3.11.4
        raise RuntimeError("unpacking the compat corpora needs Python >= 3.11.4 (tarfile filters)")
    with tarfile.open(COMPAT_TARBALL, "r:gz") as tar:
        tar.extractall(dest, filter="data")
    return dest / "tolokaforge-0.33.1"
