"""``vledger init | append | log | keygen | checkpoint | prove | seal | verify``.

Each command parses, calls one store function, prints (STYLE.md, sqlite-utils). Errors from
``ledger/`` are translated once, in :func:`_run`: ``Error: …`` on stderr and the exit code
of ``ledger.errors.EXIT_CODES`` (1 by default; usage errors exit 2 via click).
"""

from __future__ import annotations

import itertools
import os
import stat
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from ledger.cli import main
from ledger.cli.options import (
    busy_option,
    emit_json,
    escape_controls,
    json_option,
    ledger_option,
    nl_option,
    resolve_ledger,
)
from ledger.cli.output import write_json_rows
from ledger.errors import InvalidEvent, LedgerError, exit_code
from ledger.log import segments
from ledger.log.keys import DEFAULT_KEY_NAME, keygen, load_signer, load_verifier, pub_path
from ledger.log.layout import write_atomic
from ledger.log.note import TlogProof, format_tlog_proof, note_text, parse_checkpoint
from ledger.log.outputs import check_output_path
from ledger.log.store import Ledger, init_ledger, open_ledger
from ledger.log.verify import OutsideCheckpoint, verify_ledger
from ledger.sources import strict_json
from ledger.sources.files import InputError, read_input
from schemas.envelope import NewEvent, StoredEvent
from schemas.events import PROJECTION_WRITERS

T = TypeVar("T")


def _run(fn: Callable[[], T]) -> T:
    """Call ``fn``; turn a LedgerError into ``Error: …`` and its documented exit code."""
    try:
        return fn()
    except LedgerError as exc:
        click.echo(f"Error: {escape_controls(str(exc))}", err=True)
        sys.exit(exit_code(exc))


def _open(
    ledger_dir: Path | None, busy_timeout: float, *, read_only: bool = False, recover: bool = True
) -> Ledger:
    """Open the ledger; ``read_only`` for commands that must leave every file as it is."""
    path = resolve_ledger(ledger_dir)
    return _run(
        lambda: open_ledger(
            path, busy_timeout=busy_timeout, read_only=read_only, recover=recover
        )
    )


@main.command("init")
@ledger_option
@json_option
def init_cmd(ledger_dir: Path | None, as_json: bool) -> None:
    """Create an empty ledger directory.

    Example: vledger init --ledger ./.vledger
    """
    path = resolve_ledger(ledger_dir)
    lg = _run(lambda: init_ledger(path))
    origin = lg.origin
    lg.close()
    if as_json:
        emit_json({"ledger": str(path), "origin": origin})
        return
    click.echo(f"initialised ledger {path} (origin {origin})")


class _Line(BaseModel):
    """One line of an ``append`` file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    stream: str
    type: str
    payload: dict[str, Any]
    event_id: str | None = None
    expected_version: int | str = "any"
    schema_version: int = 1


MAX_APPEND_BYTES = 1 << 30


def _input_lines(path: Path) -> list[bytes]:
    """The file's lines, read by the one bounded reader (a regular file, at most 1 GiB)."""
    try:
        data = read_input(path, max_bytes=MAX_APPEND_BYTES)
    except InputError as exc:
        raise click.ClickException(f"{exc}; nothing appended") from None
    lines = data.split(b"\n")
    return lines[:-1] if lines and not lines[-1] else lines


def read_jsonl(path: Path) -> tuple[list[NewEvent], list[int]]:
    """Parse an events file; raise UsageError naming the first bad line. Blank lines skip."""
    events: list[NewEvent] = []
    lines: list[int] = []
    with nullcontext(_input_lines(path)) as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                line = _Line.model_validate(strict_json.loads(raw, str(path), line=n))
            except strict_json.JsonSyntaxError as exc:
                raise click.ClickException(
                    f"{path} line {n}: not JSON ({exc.detail}); nothing appended"
                ) from None
            except InputError as exc:  # faithful or refused: duplicate key, NaN, 65-bit int
                raise click.ClickException(f"{exc}; nothing appended") from None
            except orjson.JSONDecodeError as exc:
                raise click.ClickException(
                    f"{path} line {n}: not JSON ({exc}); nothing appended"
                ) from None
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "<line>"
                raise click.ClickException(
                    f"{path} line {n}: field {where!r}: {err['msg']}; each line is "
                    '{"stream", "type", "payload", "event_id"?, "expected_version"?}; nothing appended'
                ) from None
            _refuse_projection_type(path, n, line.type)
            events.append(NewEvent(**line.model_dump()))
            lines.append(n)
    return events, lines


def _refuse_projection_type(path: Path, n: int, type_: str) -> None:
    """A projection's output type is derived from the log by its command, never appended
    by hand (a hand-written grade.replayed would become a trial's current grade)."""
    writer = PROJECTION_WRITERS.get(type_)
    if writer is not None:
        raise click.ClickException(
            f"{path} line {n}: event type {type_!r} is a projection's output, written only by "
            f"`{writer[0]}` from the events in the log; run that command instead (append "
            "recorded facts: a built-in input type or ext.<name>); nothing appended"
        )


@main.command("append")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@ledger_option
@busy_option
@json_option
def append_cmd(file: Path, ledger_dir: Path | None, busy_timeout: float, as_json: bool) -> None:
    """Append every event of FILE.jsonl as one atomic batch; print the seq range.

    Each line: {"stream", "type", "payload", "event_id"?, "expected_version"?}. Built-in
    types are validated against their schema; your own types use the ext. prefix.

    Example: vledger append events.jsonl
    """
    events, lines = read_jsonl(file)
    with _open(ledger_dir, busy_timeout) as lg:
        res = _run(lambda: _append_naming_line(lg, events, lines, file))
    if as_json:
        emit_json(
            {
                "first_seq": res.first_seq,
                "last_seq": res.last_seq,
                "appended": res.appended,
                "duplicates": [
                    {"line": lines[d.index], "event_id": d.event_id, "seq": d.seq}
                    for d in res.duplicates
                ],
            }
        )
        return
    if res.appended:
        click.echo(f"appended {res.appended} events: seq {res.first_seq}..{res.last_seq}")
    else:
        click.echo("appended 0 events")
    if res.duplicates:
        click.echo(f"{len(res.duplicates)} already present (same event_id and content), skipped")


def _append_naming_line(lg: Ledger, events: list[NewEvent], lines: list[int], file: Path) -> Any:
    """Append; an invalid event's batch index becomes the file's line number."""
    try:
        return lg.append(events)
    except InvalidEvent as exc:
        raise LedgerError(
            f"{file} line {lines[exc.index]}: {exc.detail}; nothing appended"
        ) from None


def event_json(e: StoredEvent) -> dict[str, Any]:
    return {
        "seq": e.seq,
        "stream": e.stream,
        "stream_version": e.stream_version,
        "event_id": e.event_id,
        "type": e.type,
        "schema_version": e.schema_version,
        "recorded_at": e.recorded_at.isoformat(),
        "payload": e.data(),
        "leaf_hash": e.leaf_hash.hex(),
    }


@main.command("log")
@click.option("--stream", default=None, help="Only this stream.")
@click.option("--type", "type_", default=None, help="Only this event type.")
@click.option("--from", "from_seq", type=int, default=None, help="First seq (inclusive).")
@click.option("--to", "to_seq", type=int, default=None, help="Last seq (inclusive).")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most N events.")
@ledger_option
@busy_option
@json_option
@nl_option
def log_cmd(
    stream: str | None,
    type_: str | None,
    from_seq: int | None,
    to_seq: int | None,
    limit: int | None,
    ledger_dir: Path | None,
    busy_timeout: float,
    as_json: bool,
    as_nl: bool,
) -> None:
    """Print events in seq order.

    --json prints one JSON array; --nl one JSON object per line.

    Example: vledger log --stream run/r1 --from 10 --limit 20 --json
    """
    with _open(ledger_dir, busy_timeout, read_only=True) as lg:
        events = lg.read(stream=stream, type=type_, from_seq=from_seq, to_seq=to_seq)
        events = itertools.islice(events, limit)  # a generator: nothing past N is read
        if as_json or as_nl:
            write_json_rows((event_json(e) for e in events), nl=as_nl)
            return
        for e in events:
            payload = e.payload.decode()
            if len(payload) > 120:
                payload = payload[:117] + "..."
            # escaped: a stream name or type holding a newline must not print as two records
            stream, type_text, payload = map(escape_controls, (e.stream, e.type, payload))
            click.echo(f"{e.seq}\t{stream}@{e.stream_version}\t{type_text}\t{payload}")


@main.command("keygen")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Private key file to write (public key goes to FILE.pub).",
)
@click.option(
    "--name", default=DEFAULT_KEY_NAME, show_default=True, help="Key name shown in signature lines."
)
@ledger_option
@json_option
def keygen_cmd(out: Path, name: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Create an Ed25519 checkpoint key OUTSIDE the ledger directory.

    Example: vledger keygen --out ~/.vledger-key
    """
    verifier = _run(lambda: keygen(out, name, ledger_dir=resolve_ledger(ledger_dir)))
    if as_json:
        emit_json({"private_key": str(out), "public_key": str(pub_path(out)),
                   "verifier": verifier.format()})  # fmt: skip
        return
    click.echo(f"private key: {out} (keep it outside the ledger)")
    click.echo(f"public key:  {pub_path(out)}")
    click.echo(verifier.format())


@main.command("checkpoint")
@click.option(
    "--key",
    "key_file",
    envvar="VLEDGER_KEY",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Private key from `vledger keygen` (default: $VLEDGER_KEY).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the signed note to FILE, kept OUTSIDE the ledger (verify --checkpoint FILE).",
)
@ledger_option
@busy_option
@json_option
def checkpoint_cmd(
    key_file: Path | None,
    out: Path | None,
    ledger_dir: Path | None,
    busy_timeout: float,
    as_json: bool,
) -> None:
    """Sign the current tree head (C2SP checkpoint), store it in the ledger and print it.

    With --out, also write it to FILE: a copy kept where whoever can rewrite the ledger
    cannot reach it is what lets `vledger verify --checkpoint FILE` catch a rollback.

    Example: vledger checkpoint --key ~/.vledger-key --out ~/ledger-head.note
    """
    if key_file is None:
        raise click.UsageError(
            "pass --key FILE (made by `vledger keygen --out FILE`) or set VLEDGER_KEY"
        )
    if out is not None:
        _run(lambda: check_output_path(out, resolve_ledger(ledger_dir), what="checkpoint copy"))
    signer = _run(lambda: load_signer(key_file))
    with _open(ledger_dir, busy_timeout) as lg:
        note = _run(lambda: lg.checkpoint(signer))
    if out is not None:
        _run(lambda: _write_outside(out, note))
    if as_json:
        emit_json(checkpoint_json(note, out))
        return
    click.echo(note, nl=False)


def checkpoint_json(note: str, out: Path | None) -> dict[str, Any]:
    """A signed note as data: its body's fields, the whole note text, where it was copied."""
    cp = parse_checkpoint(note_text(note))
    return {"origin": cp.origin, "size": cp.size, "root": cp.root.hex(), "note": note,
            "out": str(out) if out is not None else None}  # fmt: skip


def _write_outside(out: Path, note: str) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out, note.encode("utf-8"))
    except OSError as exc:
        raise LedgerError(f"cannot write the checkpoint copy {str(out)!r}: {exc.strerror}") from None


# An outside checkpoint is one short note; anything much larger is not one.
MAX_NOTE_BYTES = 64 * 1024


def read_outside_checkpoint(path: Path) -> OutsideCheckpoint:
    """The note of ``verify --checkpoint FILE``: a regular file of at most MAX_NOTE_BYTES."""
    try:
        with path.open("rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise LedgerError(f"--checkpoint {str(path)!r}: not a regular file")
            data = f.read(MAX_NOTE_BYTES + 1)
    except OSError as exc:
        raise LedgerError(f"cannot read --checkpoint {str(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_NOTE_BYTES:
        raise LedgerError(
            f"--checkpoint {str(path)!r}: larger than {MAX_NOTE_BYTES} bytes, not a checkpoint note"
        )
    try:
        return OutsideCheckpoint(str(path), data.decode("utf-8"))
    except UnicodeDecodeError:
        raise LedgerError(f"--checkpoint {str(path)!r}: not UTF-8 text, not a checkpoint note") from None


@main.command("prove")
@click.argument("seq", type=int)
@click.option(
    "--size", type=int, default=None, help="Tree size of a stored checkpoint (default: the latest)."
)
@ledger_option
@busy_option
@json_option
def prove_cmd(
    seq: int, size: int | None, ledger_dir: Path | None, busy_timeout: float, as_json: bool
) -> None:
    """Print a C2SP tlog-proof: the inclusion proof of SEQ plus the signed checkpoint.

    Example: vledger prove 42 --size 100
    """
    with _open(ledger_dir, busy_timeout, read_only=True) as lg:
        proof = _run(lambda: prove_record(lg, seq, size))
    text = format_tlog_proof(proof)
    if as_json:
        cp = parse_checkpoint(note_text(proof.checkpoint_note))
        emit_json({"seq": proof.index, "size": cp.size, "root": cp.root.hex(),
                   "path": [h.hex() for h in proof.path], "checkpoint": proof.checkpoint_note,
                   "tlog_proof": text})  # fmt: skip
        return
    click.echo(text, nl=False)


def prove_text(lg: Ledger, seq: int, size: int | None) -> str:
    return format_tlog_proof(prove_record(lg, seq, size))


def prove_record(lg: Ledger, seq: int, size: int | None) -> TlogProof:
    """The tlog-proof of ``seq`` against the stored checkpoint of ``size`` (default latest)."""
    stored = {parse_checkpoint(note_text(n)).size: n for _, n in lg.checkpoints()}
    if not stored:
        raise LedgerError("no checkpoint yet: run `vledger checkpoint --key FILE` first")
    size = max(stored) if size is None else size
    if size not in stored:
        raise LedgerError(f"no checkpoint of size {size}; stored sizes: {sorted(stored)}")
    if not 0 <= seq < size:
        raise LedgerError(
            f"seq {seq} is not in the checkpoint of size {size} (need 0 <= seq < {size})"
        )
    path = lg.prove_inclusion(seq, size)
    return TlogProof(seq, tuple(path), stored[size])


@main.command("seal")
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Rows per segment (a longer trial still stays whole).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Target bytes per segment (default 32 MiB; a longer trial still stays whole).",
)
@ledger_option
@busy_option
@json_option
def seal_cmd(
    max_rows: int,
    max_bytes: int | None,
    ledger_dir: Path | None,
    busy_timeout: float,
    as_json: bool,
) -> None:
    """Seal unsealed events into immutable Parquet segments (trial streams never split).

    A sealed trial stream takes no further events (exit 4, StreamSealed).

    Example: vledger seal --max-rows 100000
    """
    with _open(ledger_dir, busy_timeout) as lg:
        made = _run(lambda: lg.seal(max_rows, max_bytes))
    if as_json:
        emit_json([m.model_dump() for m in made])
        return
    if not made:
        click.echo("nothing to seal")
    for m in made:
        click.echo(
            f"sealed {m.file}: seq {m.first_seq}..{m.last_seq}, {m.rows} rows, root {m.root}"
        )


@main.command("verify")
@click.option(
    "--pub",
    "pub_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Public key (.pub) to check checkpoint signatures with.",
)
@click.option(
    "--checkpoint",
    "checkpoint_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A checkpoint kept outside the ledger (`checkpoint --out`): the log must extend it.",
)
@click.option(
    "--deep",
    is_flag=True,
    help="Also recompute stored projections (every trial's timeline) from the raw events.",
)
@ledger_option
@busy_option
@json_option
def verify_cmd(
    pub_file: Path | None,
    checkpoint_file: Path | None,
    deep: bool,
    ledger_dir: Path | None,
    busy_timeout: float,
    as_json: bool,
) -> None:
    """Recompute every leaf hash and the tree; check checkpoints and segments. Exit 1 on the first problem.

    Also re-derives recorded admissions, re-verifies ingested verdict-core runs and checks
    replay/reconcile receipts; --deep also recomputes every stored trial timeline.

    With --pub, a checkpoint signed by that key must cover the whole log. With
    --checkpoint FILE (kept outside the ledger), the log at FILE's size must have FILE's
    root and today's log must extend it: this catches a rollback to an older copy or a
    truncation, which nothing inside the ledger can. Verify never writes a file.

    Example: vledger verify --pub ~/.vledger-key.pub --checkpoint ~/ledger-head.note --deep
    """
    verifier = _run(lambda: load_verifier(pub_file)) if pub_file is not None else None
    anchor = _run(lambda: read_outside_checkpoint(checkpoint_file)) if checkpoint_file else None
    # read-only: verify reports what it finds and changes nothing (not even an interrupted
    # seal; `vledger repair` finishes that, explicitly)
    with _open(ledger_dir, busy_timeout, read_only=True) as lg:
        report = _run(lambda: verify_ledger(lg, pub=verifier, deep=deep, anchor=anchor))
    if as_json:
        emit_json(report.to_json())
    else:
        for line in report.lines():
            click.echo(escape_controls(line))
    if not report.ok:
        first = report.problems[0]
        click.echo(escape_controls(f"Error: {first.where}: {first.what}"), err=True)
        sys.exit(1)


@main.command("repair")
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Make the changes (default: a dry run that only says what it would change).",
)
@ledger_option
@busy_option
@json_option
def repair_cmd(apply_: bool, ledger_dir: Path | None, busy_timeout: float, as_json: bool) -> None:
    """Finish an interrupted seal or restore a lost segment manifest; a dry run by default.

    Segment files already on disk are kept when they hold exactly the store's rows; a
    sealed segment that disagrees with the store is never overwritten (exit 1, nothing
    changed). Run `vledger verify` first: repair restores, it does not judge.

    Example: vledger repair            (say what would change)
             vledger repair --apply    (change it)
    """
    with _open(ledger_dir, busy_timeout, read_only=not apply_, recover=False) as lg:
        plan = _run(lambda: segments.plan_seal(lg))
        lines = repair_lines(plan, applied=apply_ and not plan.conflicts)
        made = _run(lambda: segments.apply_seal(lg, plan)) if apply_ and _repairable(plan) else []
    if as_json:
        emit_json(
            {
                "applied": apply_ and bool(made),
                "needed": plan.interrupted,
                "recorded_sealed_upto": plan.recorded,
                "manifest_sealed_upto": plan.start,
                "manifest_exists": plan.manifest_exists,
                "steps": [
                    {"file": st.file, "first_seq": st.first_seq, "last_seq": st.last_seq,
                     "action": st.action, "detail": st.detail}
                    for st in (plan.steps if plan.interrupted else ())
                ],
            }
        )
    else:
        for line in lines:
            click.echo(line)
    if plan.interrupted and plan.conflicts:
        bad = plan.conflicts[0]
        click.echo(
            f"Error: {segments.SEGMENT_DIR}/{bad.file}: {bad.detail}; refusing to overwrite a "
            "sealed segment that disagrees with the store, nothing changed",
            err=True,
        )
        sys.exit(1)


def _repairable(plan: segments.SealPlan) -> bool:
    """Only a seal the store recorded is repair's to finish; sealing new events is `seal`'s."""
    return plan.interrupted and not plan.conflicts


def repair_lines(plan: segments.SealPlan, *, applied: bool) -> list[str]:
    """What repair found and would do (or did), one line each."""
    if not plan.interrupted:
        return ["nothing to repair: the segment manifest lists everything the store records as sealed"]
    found = (
        f"segments/manifest.json is missing; the store records sealing up to seq {plan.recorded}"
        if not plan.manifest_exists
        else f"segments/manifest.json lists seq < {plan.start}; the store records sealing up to seq {plan.recorded}"
    )
    verb = {"write": "wrote" if applied else "would write", "keep": "kept" if applied else "would keep"}
    out = [found]
    for st in plan.steps:
        span = f"seq {st.first_seq}..{st.last_seq}"
        if st.action == "conflict":
            out.append(f"refusing: {st.file} ({span}) {st.detail}; it is never overwritten")
        elif st.action == "keep":
            out.append(f"{verb['keep']} {st.file} ({span}): it matches the store")
        else:
            out.append(f"{verb['write']} {st.file} ({span}) from the store")
    if plan.conflicts:
        out.append("nothing changed")
    elif applied:
        out.append(f"wrote segments/manifest.json listing {len(plan.steps)} new segment(s)")
    else:
        out.append(f"would write segments/manifest.json listing {len(plan.steps)} new segment(s)")
        out.append("dry run: nothing changed; run `vledger repair --apply` to make these changes")
    return out
