"""The seven leaf constraint kinds, each decided over every completion of its matchers.

GRADING.md § The constraint vocabulary, § Quantifiers, and the closed form, § When a
constraint cannot be decided. A matcher contributes its definite set D and undecidable set
U; a completion is D ∪ X for some X ⊆ U, chosen independently per side. A leaf is decided
where every completion reaches one verdict, and each kind computes that without
enumerating completions:

* present / absent / count read d = |D| and u = |U| (count over the interval [d, d + u]);
* before reduces to one comparison of extremes — left any/first reads min(L), all/last
  max(L); right any/last reads max(R), all/first min(R) — and a side's extreme over its
  completions ranges between two achievable values, so two comparisons decide it;
* absent_before / absent_between select one anchor position per completion (first → a
  minimum, last → a maximum) and ask whether a forbidden event lies in the window; bisection
  over sorted positions keeps that O(n log n) rather than the product of the readings;
* immediately_before reads adjacency in the ``among`` view, which has no min/max form: it is
  monotone in each any/all side, so the side's extreme readings (D, D ∪ U, and the
  singletons where D is empty) decide it, and a first/last side is enumerated over its
  achievable events.

A side that selected nothing (possible only where D is empty) leaves the question unasked;
on_missing decides that reading. Under the recorded-only ``on_missing: withhold``
(Tolokaforge 0.33.1) a single such reading withholds the constraint — it leaves the score's
numerator and denominator alone — and present / count withhold where the matcher selected
no event at all, definite or undecidable (the reference's reading; GRADING.md is silent).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from replay.trace_checks.kleene import Truth, Verdict, from_outcomes
from replay.trace_checks.matching import Resolution, TimelineIndex, describe_missing
from schemas.trace_checks import CountPayload, OnMissing


def _positions(*resolutions: Resolution) -> frozenset[int]:
    return frozenset().union(*(r.matched for r in resolutions))


def _diag(*resolutions: Resolution) -> tuple[str, ...]:
    return tuple(d for r in resolutions for d in r.diagnostics)


def _undecided(kind: str, detail: str, *resolutions: Resolution) -> str:
    missing = "; ".join(describe_missing(r) for r in resolutions if r.missing)
    return f"{kind} is undecided: {detail}; the trial does not carry {missing}"


def _can(on_missing: OnMissing, *sides: Resolution) -> dict[str, bool]:
    """Which outcomes some completion reaches, starting from on_missing's where a side has no
    definite match (``withhold``: an unmatched reading under on_missing: withhold)."""
    can = {"pass": False, "fail": False, "withhold": False}
    if any(not r.matched for r in sides):
        can[on_missing] = True
    return can


def _verdict(
    can_pass: bool,
    can_fail: bool,
    fail_msg: str,
    undecided_msg: str,
    *res: Resolution,
    withheld: bool = False,
) -> Verdict:
    if withheld:
        empty = [i for i, r in enumerate(res) if not r.matched and not r.undecidable]
        msg = (
            "withheld: a side selected no event (on_missing: withhold)"
            if empty
            else (
                "withheld: some reading of the evidence leaves a side unmatched (on_missing: withhold)"
            )
        )
        return Verdict(Truth.WITHHELD, msg, frozenset(), _diag(*res))
    truth = from_outcomes(can_pass, can_fail)
    msg = {Truth.TRUE: "", Truth.FALSE: fail_msg, Truth.UNKNOWN: undecided_msg}[truth]
    return Verdict(truth, msg, _positions(*res), _diag(*res))


def _decide(
    can: dict[str, bool], fail_msg: str, kind: str, detail: str, *res: Resolution
) -> Verdict:
    """The verdict of the outcomes ``can`` reached, undecided as ``kind`` with ``detail``."""
    undecided = _undecided(kind, detail, *res)
    return _verdict(can["pass"], can["fail"], fail_msg, undecided, *res, withheld=can["withhold"])


def _selected_nothing(res: Resolution, on_missing: OnMissing) -> bool:
    """present / count under withhold: the matcher yielded no event, definite or undecidable."""
    return on_missing == "withhold" and not res.matched and not res.undecidable


def present(res: Resolution, on_missing: OnMissing = "fail") -> Verdict:
    d, u = len(res.matched), len(res.undecidable)
    return _verdict(
        d >= 1 or u >= 1,
        d == 0,
        "present: no event matched",
        _undecided("present", f"no event definitely matched and {u} could", res),
        res,
        withheld=_selected_nothing(res, on_missing),
    )


def absent(res: Resolution) -> Verdict:
    d, u = len(res.matched), len(res.undecidable)
    return _verdict(
        d == 0,
        d >= 1 or u >= 1,
        f"absent: {d} event(s) matched at positions {list(res.matched[:10])}",
        _undecided("absent", f"no event definitely matched and {u} could", res),
        res,
    )


def count(res: Resolution, payload: CountPayload, on_missing: OnMissing = "fail") -> Verdict:
    lo, hi = len(res.matched), len(res.matched) + len(res.undecidable)

    def within(k: int) -> bool:
        return (payload.min is None or k >= payload.min) and (
            payload.max is None or k <= payload.max
        )

    # The bounds are an interval and so is [lo, hi]: all inside iff both ends are, none
    # inside iff the two intervals are disjoint.
    all_in = within(lo) and within(hi)
    none_in = (
        (payload.max is not None and lo > payload.max)
        or (payload.min is not None and hi < payload.min)
        # min > max (an advisory on a recorded block): no count is within the bounds
        or (payload.min is not None and payload.max is not None and payload.min > payload.max)
    )
    bounds = f"[{payload.min if payload.min is not None else 0}, {payload.max if payload.max is not None else '∞'}]"
    return _verdict(
        not none_in,
        not all_in,
        f"count: {lo} event(s) matched, outside {bounds}",
        _undecided(
            "count", f"between {lo} and {hi} events match, and {bounds} holds for only some", res
        ),
        res,
        withheld=_selected_nothing(res, on_missing),
    )


# --- before -------------------------------------------------------------------------------

_LEFT_EXTREME = {"any": "min", "first": "min", "all": "max", "last": "max"}
_RIGHT_EXTREME = {"any": "max", "last": "max", "all": "min", "first": "min"}


def extreme_range(res: Resolution, extreme: str) -> tuple[int, int] | None:
    """The lowest and highest value the side's min (or max) takes over its non-empty readings."""
    d, u = res.matched, res.undecidable
    if not d and not u:
        return None
    if extreme == "min":
        lo = min(d[0] if d else u[0], u[0] if u else d[0])
        hi = d[0] if d else u[-1]
    else:
        lo = d[-1] if d else u[0]
        hi = max(d[-1] if d else u[-1], u[-1] if u else d[-1])
    return lo, hi


def _unmatched(kind: str, roles: Sequence[tuple[str, Resolution]]) -> str | None:
    empty = [role for role, r in roles if not r.matched]
    if not empty:
        return None
    return f"{kind} is unmatched: {' and '.join(empty)} selected no event"


def before(left: Resolution, ql: str, right: Resolution, qr: str, on_missing: OnMissing) -> Verdict:
    can = _can(on_missing, left, right)
    rl = extreme_range(left, _LEFT_EXTREME[ql])
    rr = extreme_range(right, _RIGHT_EXTREME[qr])
    if rl is not None and rr is not None:
        can["pass"] |= rl[0] < rr[1]
        can["fail"] |= rl[1] >= rr[0]
    unmatched = _unmatched("before", (("left", left), ("right", right)))
    fail_msg = (
        unmatched
        if unmatched
        else "before: no match is ordered before the other side under the declared quantifiers"
        f" (left: {ql} at {list(left.matched[:10])}, right: {qr} at {list(right.matched[:10])})"
    )
    return _decide(can, fail_msg, "before", "the readings of its sides disagree", left, right)


# --- immediately_before ---------------------------------------------------------------------


def _achievable(res: Resolution, extreme: str) -> list[int]:
    """Every value the side's min (max) can take over its non-empty readings."""
    d, u = res.matched, res.undecidable
    if not d:
        return list(u)
    if extreme == "min":
        return [d[0], *(p for p in u if p < d[0])]
    return [d[-1], *(p for p in u if p > d[-1])]


def _side_options(
    res: Resolution, q: str, increasing: bool, for_pass: bool
) -> list[frozenset[int]]:
    """The readings of one side that reach the extremes of a monotone verdict: every
    achievable singleton for first/last; for any/all the end helping the tested outcome."""
    if q in ("first", "last"):
        return [frozenset({p}) for p in _achievable(res, "min" if q == "first" else "max")]
    d, u = res.matched, res.undecidable
    if not d and not u:
        return []
    want_large = increasing == for_pass
    if want_large:
        return [frozenset(d) | frozenset(u)]
    return [frozenset(d)] if d else [frozenset({p}) for p in u]


def _adjacent(
    nxt: dict[int, int], left: frozenset[int], right: frozenset[int], ql: str, qr: str
) -> bool:
    left_all = ql == "all"
    right_all = qr == "all"
    if right_all:
        if len(right) != 1:
            return False
        (r0,) = right
        hits = [nxt.get(p) == r0 for p in left]
    else:
        hits = [nxt.get(p) in right for p in left]
    return all(hits) if left_all else any(hits)


def immediately_before(
    idx: TimelineIndex,
    left: Resolution,
    ql: str,
    right: Resolution,
    qr: str,
    among: str,
    on_missing: OnMissing,
) -> Verdict:
    nxt = idx.next_in_view(among)
    can = _can(on_missing, left, right)
    # any (∃) is increasing in its side, all (∀ over the left) decreasing; a right all is
    # decreasing too (one more right event can only break "adjacent to every right").
    l_inc = ql != "all"
    r_inc = qr != "all"
    for want in ("pass", "fail"):
        if can[want] or can["withhold"]:
            continue
        lo = _side_options(left, ql, l_inc, want == "pass")
        ro = _side_options(right, qr, r_inc, want == "pass")
        target = want == "pass"
        can[want] = any(_adjacent(nxt, a, b, ql, qr) is target for a in lo for b in ro)
    unmatched = _unmatched("immediately_before", (("left", left), ("right", right)))
    fail_msg = (
        unmatched
        if unmatched
        else f"immediately_before: no left match is immediately followed by a right match in"
        f" the {among} view under left: {ql}, right: {qr} (left at {list(left.matched[:10])},"
        f" right at {list(right.matched[:10])})"
    )
    disagree = "the readings of its sides disagree"
    return _decide(can, fail_msg, "immediately_before", disagree, left, right)


# --- windows --------------------------------------------------------------------------------


def _count_between(sorted_positions: Sequence[int], lo: int, hi: int) -> int:
    """How many positions p satisfy lo < p < hi."""
    return max(0, bisect_left(sorted_positions, hi) - bisect_right(sorted_positions, lo))


def absent_before(
    forbidden: Resolution, anchor: Resolution, qa: str, on_missing: OnMissing
) -> Verdict:
    can = _can(on_missing, anchor)
    ra = extreme_range(anchor, "min" if qa == "first" else "max")
    if ra is not None:
        all_f = sorted((*forbidden.matched, *forbidden.undecidable))
        # pass: some achievable anchor has no definite forbidden event before it.
        can["pass"] |= not forbidden.matched or ra[0] <= forbidden.matched[0]
        # fail: some achievable anchor has some possible forbidden event before it.
        can["fail"] |= bool(all_f) and all_f[0] < ra[1]
    if not anchor.matched:
        fail_msg = "absent_before is unmatched: anchor selected no event"
    else:
        a = anchor.matched[0] if qa == "first" else anchor.matched[-1]
        bad = [p for p in forbidden.matched if p < a]
        fail_msg = f"absent_before: forbidden event(s) at {bad[:10]} precede the anchor at {a}"
    disagree = "the readings of its forbidden events and anchor disagree"
    return _decide(can, fail_msg, "absent_before", disagree, forbidden, anchor)


def absent_between(
    forbidden: Resolution,
    start: Resolution,
    qs: str,
    end: Resolution,
    qe: str,
    on_missing: OnMissing,
) -> Verdict:
    """Nothing forbidden strictly inside (start, end); an inverted or empty window
    (start >= end) is unmatched, so on_missing decides it."""
    can = _can(on_missing, start, end)
    s_opts = sorted(_achievable(start, "min" if qs == "first" else "max"))
    e_opts = sorted(_achievable(end, "min" if qe == "first" else "max"))
    if s_opts and e_opts:
        if s_opts[-1] >= e_opts[0]:
            can[on_missing] = True  # some reading inverts or empties the window
        definite = forbidden.matched
        every = sorted((*forbidden.matched, *forbidden.undecidable))
        # fail: the widest valid window holding any possible forbidden event.
        if s_opts[0] < e_opts[-1] and _count_between(every, s_opts[0], e_opts[-1]) > 0:
            can["fail"] = True
        # pass: for each start, the narrowest valid window (the nearest end after it)
        # holding no definite forbidden event.
        if not can["pass"]:
            for s in s_opts:
                k = bisect_right(e_opts, s)
                if k < len(e_opts) and _count_between(definite, s, e_opts[k]) == 0:
                    can["pass"] = True
                    break
    fail_msg = _between_message(forbidden, start, qs, end, qe)
    disagree = "the readings of its window and forbidden events disagree"
    return _decide(can, fail_msg, "absent_between", disagree, forbidden, start, end)


def _between_message(
    forbidden: Resolution, start: Resolution, qs: str, end: Resolution, qe: str
) -> str:
    unmatched = _unmatched("absent_between", (("start", start), ("end", end)))
    if unmatched:
        return unmatched
    s = start.matched[0] if qs == "first" else start.matched[-1]
    e = end.matched[0] if qe == "first" else end.matched[-1]
    if s >= e:
        return (
            f"absent_between is unmatched: the window is empty or inverted (start at {s}, end at"
            f" {e})"
        )
    bad = [p for p in forbidden.matched if s < p < e]
    return f"absent_between: forbidden event(s) at {bad[:10]} lie between the start at {s} and the end at {e}"
