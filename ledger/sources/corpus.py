"""A corpus.yaml: the curation criterion and each listed bundle's row (FORMATS.md § 6)."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.sources.shape import (
    BundleError,
    check_keys,
    check_type,
    need_list,
    need_mapping,
    opt_str,
)
from ledger.sources.yaml_safe import DEFAULT_LIMITS, YamlLimits, load_confined_yaml

CORPUS_KEYS = frozenset(
    {"criterion", "task_ids", "curated_from", "curated_at", "bundles", "excluded"}
)
CORPUS_ENTRY_KEYS = frozenset(
    {"directory", "source_run", "task_id", "agent_model", "judge_model", "met", "record_carried"}
)


@dataclass(frozen=True, slots=True)
class Corpus:
    """A parsed corpus.yaml: the criterion and each listed bundle's row by directory."""

    label: str
    criterion: str | None
    entries: Mapping[str, dict[str, Any]]


def read_corpus(path: Path, label: str, limits: YamlLimits = DEFAULT_LIMITS) -> Corpus:
    file = f"{label}/corpus.yaml"
    doc = need_mapping(
        load_confined_yaml(path, "corpus.yaml", label, f"the corpus {label}", limits), file, None
    )
    # its rows outlive the parse (every bundle of the corpus looks its own up): copied through
    # one pickle once the parse's objects are freed, they sit together instead of pinning
    # the parse's freed memory around them — 10,000 rows kept 61 MiB resident for a whole
    # ingest, the copy 16 MiB (measured, RSS over the interpreter's); each key and each
    # repeated text (task ids, models, runs) one object for all rows: 1.19 -> 0.5 KB a row
    packed = pickle.dumps(_shared_text(parse_corpus(doc, file)), pickle.HIGHEST_PROTOCOL)
    del doc
    return pickle.loads(packed)  # noqa: S301 - pickled just above


def _shared_text(corpus: Corpus) -> Corpus:
    """``corpus`` with equal strings of its rows (keys and values) made one object: the
    parser makes a new one for each occurrence, and a row is otherwise mostly its keys."""
    seen: dict[str, str] = {}
    one = lambda v: seen.setdefault(v, v) if type(v) is str else v  # noqa: E731
    rows = ({one(k): one(v) for k, v in row.items()} for row in corpus.entries.values())
    return Corpus(corpus.label, corpus.criterion, {row["directory"]: row for row in rows})


def parse_corpus(doc: Mapping[str, Any], file: str) -> Corpus:
    check_keys(doc, CORPUS_KEYS, file, required=("bundles",))
    opt_str(doc, "criterion", file, "")
    entries: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(need_list(doc["bundles"], file, "bundles")):
        key = f"bundles[{i}]"
        row = need_mapping(row, file, key)
        check_keys(row, CORPUS_ENTRY_KEYS, file, key, required=("directory",))
        check_type(row["directory"], (str,), file, f"{key}.directory", "a bundle directory name")
        for flag in ("met", "record_carried"):
            if row.get(flag) is not None:
                check_type(row[flag], (bool,), file, f"{key}.{flag}", "true, false or null")
        if row["directory"] in entries:
            raise BundleError(
                file,
                f"{key}.directory",
                "each directory listed once",
                f"{row['directory']!r} listed twice",
            )
        entries[row["directory"]] = row
    return Corpus(label=file.rsplit("/", 1)[0], criterion=doc.get("criterion"), entries=entries)
