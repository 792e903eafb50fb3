"""The ``migration.yaml`` sidecar (GRADING.md § Declaring a migration; FORMATS.md § 7).

Nothing about grading reads the file: it records a claim for ``vledger reconcile`` to check.
This is the *shape* only; the rules relating an entry to its pack and corpus need the pack
and live in ``reconcile.validate``. Two generations are read: ``corpus`` on the entry, or
(older) ``evidence.corpus``; :attr:`MigrationEntry.corpus_value` is the one reader.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from schemas.closed import Closed
from schemas.errors import LedgerError

Mode = Literal["candidate", "narrowed", "retired"]
CriterionKind = Literal["binary", "graded"]


class WasShape(Closed):
    """The criterion's pre-migration shape: what the recorded verdicts were scored against."""

    kind: CriterionKind
    required: bool
    weight: float
    description: str


class Residual(Closed):
    """What the author claims remains for the judge: ``text`` (narrowed) or ``none`` (retired)."""

    kind: Literal["none", "text"]
    reason: str


class Evidence(Closed):
    """The measurement a decision rests on; ``corpus`` only in the older generation."""

    observations: int = Field(ge=0)
    kappa: float | None
    corpus: str | None = None


class Acknowledgement(Closed):
    """A waiver: one disagreeing trial (a bundle under the corpus) and why the judge was wrong."""

    trial: str
    reason: str

    @field_validator("trial", "reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty; name the bundle path and the reason")
        return value


class MigrationEntry(Closed):
    """One declared claim about one rubric criterion."""

    criterion: str
    mode: Mode
    by: tuple[str, ...] = Field(min_length=1)
    corpus: str | None = None
    was: WasShape
    residual: Residual | None = None
    combine_weights: dict[str, float] | None = None
    evidence: Evidence | None = None
    acknowledged: tuple[Acknowledgement, ...] = ()

    @property
    def corpus_value(self) -> str | None:
        """The declared corpus: the entry's own, else the older ``evidence.corpus``."""
        if self.corpus is not None:
            return self.corpus
        return self.evidence.corpus if self.evidence is not None else None


class MigrationFile(Closed):
    """The whole sidecar: a non-empty list of entries."""

    migrations: tuple[MigrationEntry, ...] = Field(min_length=1)


class MigrationSchemaError(LedgerError, ValueError):
    """The file does not have the sidecar's shape; names the file, entry and key."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


# What to write instead, for the keys an author most often gets wrong.
_HINTS: dict[str, str] = {
    "was": "write was: {kind: binary|graded, required: true|false, weight: <number>, "
    "description: <the criterion text the recorded verdicts were scored against>}",
    "residual": "write residual: {kind: text|none, reason: <what the judge still reads / why "
    "nothing remains>}",
    "evidence": "write evidence: {observations: <int>, kappa: <number or null>}",
    "by": "write by: [<trace_checks constraint id>, …] (at least one)",
    "mode": "write mode: candidate, narrowed or retired",
    "acknowledged": "write acknowledged: [{trial: <bundle path under the corpus>, reason: <why>}]",
    "combine_weights": "write combine_weights: {<component>: <number>, …}",
    "migrations": "write migrations: [ {criterion: …, mode: …, by: […], corpus: …, was: {…}} ]",
}


def parse_migration(data: Any, *, source: str = "migration.yaml") -> MigrationFile:
    """Parse a loaded YAML document into a :class:`MigrationFile` or raise, naming every problem."""
    if not isinstance(data, dict):
        raise MigrationSchemaError(
            source, [f"the document is {type(data).__name__}; {_HINTS['migrations']}"]
        )
    try:
        return MigrationFile.model_validate(data)
    except ValidationError as exc:
        raise MigrationSchemaError(source, [_describe(err, data) for err in exc.errors()]) from None


def _describe(err: Any, data: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    where = _where(loc, data)
    key = next((str(p) for p in reversed(loc) if isinstance(p, str) and p in _HINTS), None)
    hint = f"; {_HINTS[key]}" if key else ""
    if err["type"] == "extra_forbidden":
        return f"{where}: unknown key (not part of migration.yaml){hint or '; remove it'}"
    return f"{where}: {err['msg']}{hint}"


def _where(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """``migrations[0] (checked_duplicates_first).was.kind`` — index plus the criterion it names."""
    if len(loc) >= 2 and loc[0] == "migrations" and isinstance(loc[1], int):
        entries = data.get("migrations") or []
        criterion = None
        if loc[1] < len(entries) and isinstance(entries[loc[1]], dict):
            criterion = entries[loc[1]].get("criterion")
        head = f"migrations[{loc[1]}]" + (f" ({criterion})" if criterion else "")
        rest = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[2:])
        return head + rest
    return ".".join(str(p) for p in loc) or "<document>"
