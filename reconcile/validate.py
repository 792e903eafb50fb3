"""The load-time rules of a ``migration.yaml`` against its pack (GRADING.md § Declaring a migration).

Every rule (:data:`RULES`, checked per entry in that order) yields a :class:`Finding`
naming the entry, the key and what to write instead. Nothing here reads a file: the pack
is a :class:`PackView` and each corpus the :class:`CorpusResolution` the caller produced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from reconcile.inputs import (
    SHARED,
    CorpusResolution,
    CriterionShape,
    PackView,
    normalise_trial_path,
    words,
)
from schemas.migration import MigrationEntry, MigrationFile

RULES = (
    "candidate_shape",
    "narrowed_shape",
    "was_cross_check",
    "retired_shape",
    "by_resolves",
    "one_route",
    "veto",
    "freed_share",
    "corpus",
    "acknowledged_in_corpus",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule: which entry, which rule, and a message naming the fix."""

    rule: str
    entry: int
    criterion: str
    message: str

    def __str__(self) -> str:
        return f"migrations[{self.entry}] ({self.criterion}): {self.rule}: {self.message}"


def validate_migration(
    migration: MigrationFile,
    pack: PackView,
    corpora: Mapping[str, CorpusResolution],
) -> list[Finding]:
    """Every finding for every entry; an empty list means the declaration loads."""
    return [
        Finding(rule, index, entry.criterion, message)
        for index, entry in enumerate(migration.migrations)
        for rule, message in _entry_findings(entry, pack, corpora)
    ]


def _entry_findings(
    entry: MigrationEntry, pack: PackView, corpora: Mapping[str, CorpusResolution]
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    out += _mode_shape(entry, pack)
    out += _by_resolves(entry, pack)
    out += _one_route(entry, pack)
    out += _veto(entry, pack)
    out += _freed_share(entry)
    corpus_findings, resolution = _corpus(entry, corpora)
    out += corpus_findings
    if resolution is not None and resolution.error is None:
        out += _acknowledged(entry, resolution)
    return out


# --- mode shapes -------------------------------------------------------------------------


def _shape_of(entry: MigrationEntry) -> CriterionShape:
    w = entry.was
    return CriterionShape(entry.criterion, w.kind, w.required, w.weight, w.description)


def _differences(
    was: CriterionShape, current: CriterionShape, fields: tuple[str, ...]
) -> list[str]:
    diffs = []
    for name in fields:
        a, b = getattr(was, name), getattr(current, name)
        same = words(a) == words(b) if name == "description" else a == b
        if not same:
            shown = "<the criterion's text>" if name == "description" else repr(b)
            diffs.append(f"was.{name} (declared {a!r}, the pack has {shown})")
    return diffs


def _mode_shape(entry: MigrationEntry, pack: PackView) -> list[tuple[str, str]]:
    current = pack.criteria.get(entry.criterion)
    if entry.mode == "candidate":
        return _candidate(entry, current, pack)
    if entry.mode == "narrowed":
        return _narrowed(entry, current, pack)
    return _retired(entry, current, pack)


def _missing_criterion(entry: MigrationEntry, pack: PackView) -> str:
    known = ", ".join(sorted(pack.criteria)) or "none"
    return (
        f"criterion {entry.criterion!r} is not in {pack.source}'s rubric (criteria: {known}); "
        f"a {entry.mode} entry is about a criterion the rubric still holds — name one of "
        "those, or write mode: retired if it has been removed"
    )


def _candidate(
    entry: MigrationEntry, current: CriterionShape | None, pack: PackView
) -> list[tuple[str, str]]:
    rule = "candidate_shape"
    out = []
    if current is None:
        out.append((rule, _missing_criterion(entry, pack)))
    else:
        fields = ("kind", "required", "weight", "description")
        diffs = _differences(_shape_of(entry), current, fields)
        if diffs:
            out.append(
                (
                    rule,
                    "a candidate's was must match the criterion as it stands; differs in "
                    + ", ".join(diffs)
                    + " — copy the criterion's current kind, required, weight and description",
                )
            )
    if entry.evidence is not None:
        out.append(
            (
                rule,
                "a candidate has measured nothing yet, so it carries no evidence — remove "
                "evidence: (name the corpus as the entry's own corpus: key)",
            )
        )
    if entry.residual is not None:
        out.append(
            (rule, "a candidate has decided nothing, so it carries no residual — remove residual:")
        )
    return out


def _narrowed(
    entry: MigrationEntry, current: CriterionShape | None, pack: PackView
) -> list[tuple[str, str]]:
    out = []
    if current is None:
        out.append(("narrowed_shape", _missing_criterion(entry, pack)))
    else:
        if words(entry.was.description) == words(current.description):
            out.append(
                (
                    "narrowed_shape",
                    "was.description equals the criterion's current text, so nothing was "
                    "narrowed — write the pre-migration text in was.description and the narrowed "
                    "text in the rubric, or declare mode: candidate",
                )
            )
        diffs = _differences(_shape_of(entry), current, ("required", "kind"))
        if diffs:
            out.append(
                (
                    "was_cross_check",
                    "a narrowed entry's was.required and was.kind must equal the criterion's "
                    "current ones (was.weight is free); differs in "
                    + ", ".join(diffs)
                    + " — write the criterion's current required and kind in was",
                )
            )
    out += _needs_evidence(entry, "narrowed_shape")
    if entry.residual is None or entry.residual.kind != "text" or not entry.residual.reason.strip():
        out.append(
            (
                "narrowed_shape",
                "a narrowed entry declares what the judge still reads — write "
                "residual: {kind: text, reason: <what remains for the judge>}",
            )
        )
    return out


def _retired(
    entry: MigrationEntry, current: CriterionShape | None, pack: PackView
) -> list[tuple[str, str]]:
    out = []
    if current is not None:
        out.append(
            (
                "retired_shape",
                f"criterion {entry.criterion!r} is still in {pack.source}'s rubric; a retired "
                "criterion is removed from it — delete it from llm_judge.rubric.criteria, or "
                "declare mode: narrowed",
            )
        )
    out += _needs_evidence(entry, "retired_shape")
    if entry.residual is None or entry.residual.kind != "none" or not entry.residual.reason.strip():
        out.append(
            (
                "retired_shape",
                "a retired entry declares that nothing remains and why — write "
                "residual: {kind: none, reason: <why nothing remains for the judge>}",
            )
        )
    return out


def _needs_evidence(entry: MigrationEntry, rule: str) -> list[tuple[str, str]]:
    if entry.evidence is None:
        return [
            (
                rule,
                f"a {entry.mode} entry rests on a measurement — write "
                "evidence: {observations: <N>, kappa: <κ or null>} as vledger reconcile reports it",
            )
        ]
    return []


# --- constraints ---------------------------------------------------------------------------


def _by_resolves(entry: MigrationEntry, pack: PackView) -> list[tuple[str, str]]:
    missing = [cid for cid in entry.by if cid not in pack.constraints]
    if not missing:
        return []
    if not pack.has_trace_checks:
        where = f"{pack.source} declares no trace_checks block"
    else:
        where = "its constraints are: " + (", ".join(sorted(pack.constraints)) or "none")
    return [
        (
            "by_resolves",
            f"by names {', '.join(repr(m) for m in missing)}, not a constraint of "
            f"{pack.source} ({where}) — name constraint ids from this pack's trace_checks",
        )
    ]


def _one_route(entry: MigrationEntry, pack: PackView) -> list[tuple[str, str]]:
    scoped = [
        (cid, pack.constraints[cid].route)
        for cid in entry.by
        if cid in pack.constraints and pack.constraints[cid].route != SHARED
    ]
    first_id, first_route = scoped[0] if scoped else ("", "")
    for cid, route in scoped[1:]:
        if route != first_route:
            return [
                (
                    "one_route",
                    f"by names {first_id!r} (route {first_route!r}) and {cid!r} (route "
                    f"{route!r}); a trial is scored on one route, so no trial decides both — "
                    "name constraints of one route (shared ones may accompany it); a claim "
                    "about two routes needs #1057",
                )
            ]
    return []


def _veto(entry: MigrationEntry, pack: PackView) -> list[tuple[str, str]]:
    if entry.mode == "candidate" or not entry.was.required:
        return []
    offenders = []
    for cid in entry.by:
        decl = pack.constraints.get(cid)
        if decl is None:
            continue
        if decl.route != SHARED:
            offenders.append(f"{cid!r} sits in route {decl.route!r}")
        elif decl.severity != "gate":
            offenders.append(f"{cid!r} is severity: {decl.severity}")
    if not offenders:
        return []
    return [
        (
            "veto",
            f"{entry.criterion!r} is required (a trial-level veto), so a {entry.mode} entry may "
            "name only shared constraints carrying severity: gate; "
            + "; ".join(offenders)
            + " — move the constraint to the shared constraints with severity: gate, or declare "
            "mode: candidate",
        )
    ]


def _freed_share(entry: MigrationEntry) -> list[tuple[str, str]]:
    if entry.mode == "candidate" or entry.was.required or entry.combine_weights is not None:
        return []
    return [
        (
            "freed_share",
            f"{entry.criterion!r} is not required, so its weight sat in the judge component's "
            "denominator — declare the post-migration map, e.g. "
            "combine_weights: {llm_judge: <w>, trace_checks: <w>} (the identity map if nothing "
            "shifts)",
        )
    ]


# --- corpus --------------------------------------------------------------------------------


def _lexical_corpus_problem(value: str) -> str | None:
    if not value.strip():
        return "corpus is empty"
    if PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute():
        return (
            f"corpus {value!r} is absolute; it would resolve to itself whatever base the "
            "caller supplies — write it relative to the base (the working directory)"
        )
    if ".." in PurePosixPath(value.replace("\\", "/")).parts:
        return (
            f"corpus {value!r} climbs out with '..'; a corpus is read inside the base the "
            "caller supplies — write a path below the base, or run from a base that contains it"
        )
    return None


def _corpus(
    entry: MigrationEntry, corpora: Mapping[str, CorpusResolution]
) -> tuple[list[tuple[str, str]], CorpusResolution | None]:
    rule = "corpus"
    if (
        entry.corpus is not None
        and entry.evidence is not None
        and entry.evidence.corpus is not None
        and entry.evidence.corpus != entry.corpus
    ):
        return [
            (
                rule,
                f"corpus {entry.corpus!r} and evidence.corpus {entry.evidence.corpus!r} disagree "
                "— keep the entry's corpus: and drop evidence.corpus (the older spelling)",
            )
        ], None
    value = entry.corpus_value
    if value is None:
        return [
            (
                rule,
                "every entry names the corpus its claim is measured over, in every mode — "
                "write corpus: <directory holding corpus.yaml, relative to the base>",
            )
        ], None
    lexical = _lexical_corpus_problem(value)
    if lexical is not None:
        return [(rule, lexical)], None
    resolution = corpora.get(value)
    if resolution is None:
        return [(rule, f"corpus {value!r} was not resolved by the caller")], None
    if resolution.error is not None:
        return [(rule, resolution.error)], resolution
    return [], resolution


def _acknowledged(entry: MigrationEntry, resolution: CorpusResolution) -> list[tuple[str, str]]:
    out = []
    prefix = normalise_trial_path(resolution.value) + "/"
    for ack in entry.acknowledged:
        spelled = normalise_trial_path(ack.trial)
        relative = spelled[len(prefix) :] if spelled.startswith(prefix) else spelled
        if relative not in resolution.bundles:
            out.append(
                (
                    "acknowledged_in_corpus",
                    f"acknowledged trial {ack.trial!r} is not a bundle under corpus "
                    f"{resolution.value!r} ({resolution.resolved}) — name a bundle directory "
                    "relative to the corpus, e.g. "
                    + (
                        repr(sorted(resolution.bundles)[0])
                        if resolution.bundles
                        else "'<part>/<bundle>'"
                    ),
                )
            )
    return out
