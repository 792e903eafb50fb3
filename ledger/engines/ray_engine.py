"""The Ray engine: one Ray task per sealed Parquet segment (or per run of small ones).

Each task reads and verifies its own segment files (:mod:`ledger.engines.segment_task`);
segments hold whole trials, so nothing shuffles, and the driver sorts the results by
stream. Workers never write the ledger. Retries, failures and cluster setup:
docs/readme/ray.md, "CLI". Ray is imported here only, and only when a job runs.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ledger.defaults import DEFAULT_MAX_RETRIES, DEFAULT_WORKERS
from ledger.engines.base import EngineError, Progress, TrialFn, TrialSelection
from ledger.engines.ordered import IN_FLIGHT_PER_WORKER, in_order
from ledger.engines.segment_task import (
    SegmentFailure,
    SegmentIntegrityError,
    SegmentTaskError,
    run_segments,
)
from ledger.log.protocol import SealedStore, Store
from ledger.log.segments import SegmentInfo, load_manifest, segment_dir


def plan_units(segments: Sequence[SegmentInfo], task_rows: int | None) -> list[list[SegmentInfo]]:
    """One unit per segment, or runs of consecutive small segments up to ``task_rows`` rows."""
    if not task_rows:
        return [[s] for s in segments]
    units: list[list[SegmentInfo]] = []
    rows = 0
    for s in segments:
        if units and rows + s.rows <= task_rows:
            units[-1].append(s)
            rows += s.rows
        else:
            units.append([s])
            rows = s.rows
    return units


def describe(unit: Sequence[SegmentInfo]) -> str:
    names = ", ".join(s.file for s in unit)
    return f"{names} (seq {unit[0].first_seq}..{unit[-1].last_seq})"


def _ray():
    try:
        import ray
    except ImportError:
        raise EngineError(
            "--engine ray needs the optional extra: pip install 'verdict-ledger[ray]'"
        ) from None
    return ray


def _task(folder: str, unit: list[SegmentInfo], select: TrialSelection, job: tuple) -> list:
    fn, params = job
    return run_segments(folder, unit, select, fn, params)


@dataclass(eq=False)
class RayEngine:
    name = "ray"
    workers: int = DEFAULT_WORKERS
    _: KW_ONLY
    address: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    seal: bool = True
    segment_rows: int | None = None
    segment_bytes: int | None = None
    task_rows: int | None = None
    # Wall-clock split of the last job (benchmarks and the CLI summary read it).
    timings: dict[str, float] = field(default_factory=dict, init=False)

    def sealed_segments(self, lg: Store, select: TrialSelection) -> list[SegmentInfo]:
        """Seal the tail when it holds trial events this job reads; the segments to read."""
        if not isinstance(lg, SealedStore):
            raise EngineError(
                f"the Ray engine reads sealed Parquet segments; {lg.path} is an in-memory log "
                "(--dry-run --source): ingest into a ledger first or use --engine local"
            )
        end = select.to_seq + 1
        manifest = load_manifest(lg.path)
        if manifest.sealed_upto < end and lg.trial_spans(manifest.sealed_upto, end):
            if not self.seal:
                raise EngineError(
                    f"trial events at seq >= {manifest.sealed_upto} are not sealed and this run "
                    "writes nothing (--dry-run): run `vledger seal` first, or drop --dry-run"
                )
            lg.seal(self.segment_rows, self.segment_bytes)
            manifest = load_manifest(lg.path)
        return [s for s in manifest.segments if s.first_seq <= select.to_seq]

    def _init(self, ray: Any) -> bool:
        """Start (or join) Ray; True when this call started it and must shut it down."""
        if ray.is_initialized():
            return False
        opts: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
            "ignore_reinit_error": True,
        }
        if self.address:
            ray.init(address=self.address, **opts)
        else:
            ray.init(num_cpus=self.workers, **opts)
        return True

    def map_trials(
        self,
        lg: Store,
        select: TrialSelection,
        fn: TrialFn,
        params: Any,
        *,
        on_total: Progress | None = None,
        on_done: Progress | None = None,
    ) -> list[tuple[str, Any]]:
        t0 = time.perf_counter()
        segments = self.sealed_segments(lg, select)
        units = plan_units(segments, self.task_rows)
        t1 = time.perf_counter()
        self.timings = {"seal": t1 - t0, "tasks": float(len(units))}
        if not units:
            return []
        ray = _ray()
        started = self._init(ray)
        t2 = time.perf_counter()
        self.timings["startup"] = t2 - t1
        try:
            results = self._run(ray, str(segment_dir(lg.path)), units, select, fn, params, on_done)
        finally:
            t3 = time.perf_counter()
            self.timings["compute"] = t3 - t2
            if started:
                ray.shutdown()
            self.timings["shutdown"] = time.perf_counter() - t3
        results.sort(key=lambda pair: pair[0])
        return results

    def map_inputs(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``fn`` over ``items`` as Ray tasks, results in input order with a bounded window
        (``ledger.engines.ordered``): ingest's reading, done where the inputs lie (every
        node sees them at the same path). A crashed worker's task is retried
        ``max_retries`` times; an error ``fn`` raises is not (reading fails the same way)."""
        ray = _ray()
        started = self._init(ray)
        try:
            cpus = int(ray.cluster_resources().get("CPU", self.workers)) or 1
            remote = ray.remote(fn).options(max_retries=self.max_retries, num_cpus=1)
            yield from in_order(
                remote.remote, lambda ref: self._input(ray, ref), items, IN_FLIGHT_PER_WORKER * cpus
            )
        finally:
            if started:
                ray.shutdown()

    def _input(self, ray: Any, ref: Any) -> Any:
        try:
            return ray.get(ref)
        except Exception as exc:  # noqa: BLE001 (every Ray failure ends here)
            cause = getattr(exc, "cause", None) or exc
            first = (str(cause).strip().splitlines() or [""])[0]
            raise EngineError(
                f"a Ray task reading inputs failed after {self.max_retries + 1} attempt(s): "
                f"{type(cause).__name__}: {first}"
            ) from None

    def _run(
        self,
        ray: Any,
        folder: str,
        units: list[list[SegmentInfo]],
        select: TrialSelection,
        fn: TrialFn,
        params: Any,
        on_done: Progress | None,
    ) -> list[tuple[str, Any]]:
        remote = ray.remote(_task).options(
            max_retries=self.max_retries,
            retry_exceptions=[SegmentTaskError],
            num_cpus=1,
        )
        job = ray.put((fn, params))
        pending = {remote.remote(folder, unit, select, job): unit for unit in units}
        results: list[tuple[str, Any]] = []
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    unit = pending.pop(ref)
                    try:
                        part = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 (every Ray failure ends here)
                        raise self._failure(unit, exc) from None
                    results.extend(part)
                    if on_done:
                        on_done(len(part))
        finally:
            for ref in pending:  # a failed job stops its other tasks (best effort: the
                with contextlib.suppress(Exception):  # failure being reported matters more)
                    ray.cancel(ref, force=True)
        return results

    def _failure(self, unit: list[SegmentInfo], exc: BaseException) -> EngineError:
        cause = getattr(exc, "cause", None) or exc
        attempts = self.max_retries + 1
        if isinstance(cause, SegmentIntegrityError):
            return EngineError(f"segment {cause.segment} failed verification: {cause.detail}")
        if isinstance(cause, SegmentFailure):
            return EngineError(
                f"segment {cause.segment} failed after {attempts} attempt(s): {cause.detail}"
            )
        first = (str(cause).strip().splitlines() or [""])[0]
        return EngineError(
            f"segment {describe(unit)} failed after {attempts} attempt(s): "
            f"{type(cause).__name__}: {first}"
        )
