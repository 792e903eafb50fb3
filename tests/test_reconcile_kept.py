"""Kept reconcile observations (``ledger.app.reconcile_kept``): read back, equal grades are
one object, and a score is kept exactly as it was written."""

from __future__ import annotations

from typing import Any

from ledger.app.reconcile_kept import Carried, KeptBody, KeptWriter, read_records
from reconcile.inputs import CandidateEvaluation, RecordedGrade, RecordedGrading


def written_and_read(values: list[Carried]) -> dict[tuple[str, str], Carried]:
    writer = KeptWriter(object())  # no ledger directory: in memory
    for i, c in enumerate(values):
        writer.add("corpus", f"t{i}", c)
    records, reader = read_records(KeptBody.of(writer.file.getvalue()))
    assert reader.hasher.digest() == writer.hasher.digest()
    return records


def test_equal_grades_are_shared_and_scores_keep_their_type_and_sign() -> None:
    grading = RecordedGrading(None, {"llm_judge": 1.0}, "weighted_average", 0.5)
    candidate = CandidateEvaluation({"c": True}, 1.0, False)
    scores: list[Any] = [1.0, 1.0, 1, 0.0, -0.0, 0.25]
    values = [
        Carried(f"trial/c/t/{i}", "", f"sha256:{i}", task_id="t",
                grade=RecordedGrade("completed", (), {"llm_judge": 1.0}, s, bool(s)),
                grading=grading, candidate=candidate)  # fmt: skip
        for i, s in enumerate(scores)
    ]
    got = written_and_read(values)
    read = [got[("corpus", f"t{i}")] for i in range(len(scores))]
    assert read == values
    assert [repr(c.grade.score) for c in read] == [repr(s) for s in scores]  # type: ignore[union-attr]
    assert read[0].grade is read[1].grade  # equal: one object
    assert len({id(c.grade) for c in read}) == 5  # 1 and 1.0, 0.0 and -0.0: not one score
    assert len({id(c.grading) for c in read}) == 1 and len({id(c.candidate) for c in read}) == 1
