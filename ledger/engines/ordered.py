"""A picklable function over a sequence of inputs in worker processes, results in input order.

What ingest's reading runs on (``ledger.app.ingest_read``): each item is parsed and bounded
in a worker, and the driver consumes the results in the order the items were given — never
the order they complete in — so what it appends is the same for any number of workers.
At most ``IN_FLIGHT_PER_WORKER × workers`` items are submitted and not yet consumed: the
driver holds that window, never every result.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ledger.engines.base import EngineError
from ledger.log.layout import pid_alive

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

T = TypeVar("T")
R = TypeVar("R")

# items submitted ahead of the one the driver waits for: enough to keep every worker busy
# while the driver consumes the head, few enough that the window's results stay small
IN_FLIGHT_PER_WORKER = 3


def in_order(
    submit: Callable[[T], Any], result: Callable[[Any], R], items: Iterable[T], window: int
) -> Iterator[R]:
    """``result(submit(item))`` for every item, in order, with at most ``window`` submitted
    and not yet consumed. Leaving the generator early leaves the rest unsubmitted."""
    flight: deque[Any] = deque()
    for item in items:
        flight.append(submit(item))
        if len(flight) >= window:
            yield result(flight.popleft())
    while flight:
        yield result(flight.popleft())


def pool_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``fn`` over ``items`` in ``workers`` local processes, in order (see the module doc).

    Leaving early (an error on the driver) cancels what has not started and waits for the
    rest."""
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

    with process_pool(workers) as pool:

        def submit(item: T) -> Future:
            with main_left_alone():  # the pool starts its processes inside submit
                return pool.submit(fn, item)

        try:
            yield from in_order(submit, _result, items, IN_FLIGHT_PER_WORKER * workers)
        except BrokenProcessPool:
            # raised by a result, or by a submit once the pool knows a worker died
            pool.shutdown(wait=True, cancel_futures=True)
            raise EngineError(
                "a worker process died while reading the inputs (killed, or out of memory); "
                "nothing was appended: run it again, or with --workers 1 to read in one process"
            ) from None
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def process_pool(workers: int) -> ProcessPoolExecutor:
    """The local engine's worker processes: forked from a forkserver, not the driver (the
    driver may hold threads — the hash pool, Ray's gRPC — that a forked child would inherit
    mid-state; a fresh server process has none), each exiting with the driver
    (:func:`exit_with`)."""
    import multiprocessing  # noqa: PLC0415 - the pool path only (start-up)
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    context = multiprocessing.get_context("forkserver")
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=exit_with, initargs=(os.getpid(),)
    )


def start_server(preload: list[str]) -> None:
    """Start the forkserver :func:`pool_map` forks its workers from now, importing
    ``preload`` there, without waiting for it: it imports while the caller still lists its
    inputs (a corpus.yaml of 10,000 rows and its bundle directories: about a second), and
    each worker is then forked with those modules loaded instead of importing them itself.
    A server already running (an earlier pool of this process) is kept as it is."""
    import multiprocessing  # noqa: PLC0415 - the pool path only (start-up)
    from multiprocessing import forkserver  # noqa: PLC0415

    multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
    with main_left_alone():
        forkserver.ensure_running()


def exit_with(pid: int) -> None:
    """In a worker process: exit as soon as process ``pid`` (the driver) is gone.

    A driver killed outright (SIGKILL, the OOM killer) never shuts its pool down, and
    its workers do not notice: each also holds the read end of the pool's result pipe, so
    a worker writing a result into the full pipe blocks for ever, and the other waits for
    the pipe's lock (seen: a killed 2-worker ingest left both workers behind). A daemon
    thread waits on the driver's pidfd (polls where there is none) and ends the process."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+: poll instead
        fd = None

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])
        else:
            while pid_alive(pid):
                time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="vledger-driver-watch", daemon=True).start()


def _result(fut: Future) -> Any:
    return fut.result()


@contextmanager
def main_left_alone() -> Iterator[None]:
    """Start worker processes that do not run the caller's ``__main__`` again.

    A forkserver or spawned process re-imports the main script (as ``__mp_main__``) unless
    it looks interactive; a script calling ``ledger.ingest(...)`` at top level, with no
    ``if __name__ == "__main__":`` guard, would then ingest again in every worker and fail.
    The workers run functions of installed modules only, so for the moment processes are
    started here ``__main__`` is a bare module, which multiprocessing leaves alone."""
    real = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = real
