"""``vledger init | append | log | keygen | checkpoint | prove | seal | verify | repair``.

Each command parses, calls one API function through the lazy namespace (``ledger.append``…,
so ``--help`` loads no store) and prints (as sqlite-utils's CLI does). A LedgerError becomes
``Error: …`` on stderr and its exit code in the group (ledger/cli/__init__.py); usage
errors exit 2 via click.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

import ledger
from ledger.cli import main
from ledger.cli.options import (
    busy_option,
    emit_json,
    emitted,
    json_option,
    ledger_option,
    nl_option,
    resolve_ledger,
)
from ledger.cli.output import error, escape_controls, write_json_rows

if TYPE_CHECKING:
    from ledger import RepairResult


@main.command("init")
@ledger_option
@json_option
def init_cmd(ledger_dir: Path | None, as_json: bool) -> None:
    """Create an empty ledger directory.

    Example: vledger init --ledger ./.vledger
    """
    path = resolve_ledger(ledger_dir)
    lg = ledger.init(path)
    origin = lg.origin
    lg.close()
    if as_json:
        emit_json({"ledger": str(path), "origin": origin})
        return
    click.echo(f"initialised ledger {path} (origin {origin})")


@main.command("append")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True,
                                        path_type=Path))
@ledger_option
@busy_option
@json_option
def append_cmd(file: Path, ledger_dir: Path | None, busy_timeout: float, as_json: bool) -> None:
    """Append every event of FILE.jsonl as one atomic batch; print the seq range.

    FILE may be - (standard input), a named pipe, or a process substitution <(cmd).

    Each line: {"stream", "type", "payload", "event_id"?, "expected_version"?}. Built-in
    types are validated against their schema; your own types use the ext. prefix.

    Example: vledger append events.jsonl
    """
    res = ledger.append(file, ledger=resolve_ledger(ledger_dir), busy_timeout=busy_timeout)
    if emitted(as_json, res):
        return
    if res.appended:
        click.echo(f"appended {res.appended} events: seq {res.first_seq}..{res.last_seq}")
    else:
        click.echo("appended 0 events")
    if res.duplicates:
        click.echo(f"{len(res.duplicates)} already present (same event_id and content), skipped")


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
    stream: str | None, type_: str | None, from_seq: int | None, to_seq: int | None,
    limit: int | None, ledger_dir: Path | None, busy_timeout: float, as_json: bool, as_nl: bool,
) -> None:  # fmt: skip
    """Print events in seq order.

    --json prints one JSON array; --nl one JSON object per line.

    Example: vledger log --stream run/r1 --from 10 --limit 20 --json
    """
    kw = {"stream": stream, "type": type_, "from_seq": from_seq, "to_seq": to_seq, "limit": limit}
    where = resolve_ledger(ledger_dir)
    read = ledger.events(ledger=where, busy_timeout=busy_timeout, lazy=True, **kw)
    with read:  # the rows are read as they are printed, while the store is open
        if as_json or as_nl:
            write_json_rows(read.json_rows(), nl=as_nl)
            return
        for e in read.events:
            payload = e.payload.decode()
            if len(payload) > 120:
                payload = payload[:117] + "..."
            # escaped: a stream name or type holding a newline must not print as two records
            stream, type_text, payload = map(escape_controls, (e.stream, e.type, payload))
            click.echo(f"{e.seq}\t{stream}@{e.stream_version}\t{type_text}\t{payload}")


@main.command("keygen")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Private key file to write (public key goes to FILE.pub).")
@click.option("--name", default=ledger.DEFAULT_KEY_NAME, show_default=True,
              help="Key name shown in signature lines.")  # fmt: skip
@ledger_option
@json_option
def keygen_cmd(out: Path, name: str, ledger_dir: Path | None, as_json: bool) -> None:
    """Create an Ed25519 checkpoint key OUTSIDE the ledger directory.

    Example: vledger keygen --out ~/.vledger-key
    """
    res = ledger.keygen(out, name=name, ledger=resolve_ledger(ledger_dir))
    if emitted(as_json, res):
        return
    click.echo(f"private key: {res.private_key} (keep it outside the ledger)")
    click.echo(f"public key:  {res.public_key}")
    click.echo(res.verifier)


@main.command("checkpoint")
@click.option("--key", "key_file", envvar="VLEDGER_KEY", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Private key from `vledger keygen` (default: $VLEDGER_KEY).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the signed note to FILE, kept OUTSIDE the ledger "
                   "(verify --checkpoint FILE).")  # fmt: skip
@ledger_option
@busy_option
@json_option
def checkpoint_cmd(
    key_file: Path | None, out: Path | None, ledger_dir: Path | None, busy_timeout: float,
    as_json: bool,
) -> None:  # fmt: skip
    """Sign the current tree head (C2SP checkpoint), store it in the ledger and print it.

    With --out, also write it to FILE: a copy kept where whoever can rewrite the ledger
    cannot reach it is what lets `vledger verify --checkpoint FILE` catch a rollback.

    Example: vledger checkpoint --key ~/.vledger-key --out ~/ledger-head.note
    """
    res = ledger.checkpoint(
        ledger=resolve_ledger(ledger_dir), key=key_file, out=out, busy_timeout=busy_timeout
    )
    if not emitted(as_json, res):
        click.echo(res.note, nl=False)


@main.command("prove")
@click.argument("seq", type=int)
@click.option("--size", type=int, default=None,
              help="Tree size of a stored checkpoint (default: the latest).")  # fmt: skip
@ledger_option
@busy_option
@json_option
def prove_cmd(
    seq: int, size: int | None, ledger_dir: Path | None, busy_timeout: float, as_json: bool
) -> None:
    """Print a C2SP tlog-proof: the inclusion proof of SEQ plus the signed checkpoint.

    Example: vledger prove 42 --size 100
    """
    res = ledger.prove(seq, ledger=resolve_ledger(ledger_dir), size=size, busy_timeout=busy_timeout)
    if not emitted(as_json, res):
        click.echo(res.tlog_proof, nl=False)


@main.command("verify")
@click.option("--pub", "pub_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Public key (.pub) to check checkpoint signatures with.")
@click.option("--checkpoint", "checkpoint_file", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A checkpoint kept outside the ledger (`checkpoint --out`): the log must "
                   "extend it.")
@click.option("--deep", is_flag=True, help="Also recompute stored projections (every trial's "
              "timeline) from the raw events.")  # fmt: skip
@ledger_option
@busy_option
@json_option
def verify_cmd(
    pub_file: Path | None, checkpoint_file: Path | None, deep: bool, ledger_dir: Path | None,
    busy_timeout: float, as_json: bool,
) -> None:  # fmt: skip
    """Recompute every leaf hash and the tree; check checkpoints and segments. Exit 1 on the first problem.

    Also re-derives recorded admissions, re-verifies ingested verdict-core runs and checks
    replay/reconcile receipts; --deep also recomputes every stored trial timeline.

    With --pub, a checkpoint signed by that key must cover the whole log. With
    --checkpoint FILE (kept outside the ledger), the log at FILE's size must have FILE's
    root and today's log must extend it: this catches a rollback to an older copy or a
    truncation, which nothing inside the ledger can. Verify never writes a file.

    Example: vledger verify --pub ~/.vledger-key.pub --checkpoint ~/ledger-head.note --deep
    """
    res = ledger.verify(ledger=resolve_ledger(ledger_dir), pub=pub_file, checkpoint=checkpoint_file,
                        deep=deep, busy_timeout=busy_timeout)  # fmt: skip
    if not emitted(as_json, res):
        for line in res.report.lines():
            click.echo(escape_controls(line))
    if not res.ok:
        first = res.problems[0]
        error(f"{first.where}: {first.what}")
    sys.exit(res.exit_code)


@main.command("seal")
@click.option("--max-rows", type=click.IntRange(min=1), default=ledger.DEFAULT_MAX_ROWS,
              show_default=True, help="Rows per segment (a longer trial still stays whole).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Target bytes per segment (default 32 MiB; a longer trial still stays "
                   "whole).")  # fmt: skip
@ledger_option
@busy_option
@json_option
def seal_cmd(
    max_rows: int, max_bytes: int | None, ledger_dir: Path | None, busy_timeout: float,
    as_json: bool,
) -> None:  # fmt: skip
    """Seal unsealed events into immutable Parquet segments (trial streams never split).

    A sealed trial stream takes no further events (exit 4, StreamSealed).

    Example: vledger seal --max-rows 100000
    """
    res = ledger.seal(ledger=resolve_ledger(ledger_dir), max_rows=max_rows, max_bytes=max_bytes,
                      busy_timeout=busy_timeout)  # fmt: skip
    if emitted(as_json, res):
        return
    if not res.segments:
        click.echo("nothing to seal")
    for m in res.segments:
        click.echo(
            f"sealed {m.file}: seq {m.first_seq}..{m.last_seq}, {m.rows} rows, root {m.root}"
        )


@main.command("repair")
@click.option("--apply", "apply_", is_flag=True,
              help="Make the changes (default: a dry run that only says what it would "
                   "change).")  # fmt: skip
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
    res = ledger.repair(ledger=resolve_ledger(ledger_dir), apply=apply_, busy_timeout=busy_timeout)
    if not emitted(as_json, res):
        for line in repair_lines(res, applied=apply_ and not res.conflicts):
            click.echo(line)
    if res.refusal:
        error(res.refusal)
    sys.exit(res.exit_code)


def repair_lines(res: RepairResult, *, applied: bool) -> list[str]:
    """What repair found and would do (or did), one line each."""
    if not res.needed:
        return [
            "nothing to repair: the segment manifest lists everything the store records as sealed"
        ]
    upto = f"the store records sealing up to seq {res.recorded_sealed_upto}"
    found = (
        f"segments/manifest.json lists seq < {res.manifest_sealed_upto}; {upto}"
        if res.manifest_exists
        else f"segments/manifest.json is missing; {upto}"
    )
    wrote, kept = ("wrote", "kept") if applied else ("would write", "would keep")
    out = [found]
    for st in res.steps:
        span = f"seq {st.first_seq}..{st.last_seq}"
        if st.action == "conflict":
            out.append(f"refusing: {st.file} ({span}) {st.detail}; it is never overwritten")
        elif st.action == "keep":
            out.append(f"{kept} {st.file} ({span}): it matches the store")
        else:
            out.append(f"{wrote} {st.file} ({span}) from the store")
    if res.conflicts:
        return [*out, "nothing changed"]
    out.append(f"{wrote} segments/manifest.json listing {len(res.steps)} new segment(s)")
    if not applied:
        out.append("dry run: nothing changed; run `vledger repair --apply` to make these changes")
    return out
