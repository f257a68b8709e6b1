"""The crash-and-freeze soak of `tests/crash/test_freeze_soak.py`, longer: three worker
processes on one database, SIGKILLed and restarted, SIGSTOPped past their lease and SIGCONTed,
starved of disk (injected ENOSPC, each window shorter than a third of the lease), while runs
arrive; then every page is put down to a kill or a freeze or else to a result in hand (which
must be 0), settled from the world's record, and the figures are printed (one line a round).

    python benchmarks/freeze_soak.py [--seconds 120] [--rounds 1] [--url sqlite|postgresql://...]
                                     [--seed N] [--keep DIR]

`--url sqlite` (the default) uses a fresh file per round; a PostgreSQL URL gets a fresh schema
per round, dropped afterwards unless `--keep` is given. `--seed` fixes the faults' choices
(their timing still varies); `--keep DIR` leaves each round's database, world and worker logs
in DIR (and its PostgreSQL schema, named in the output) to read after a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.pg_support import postgres  # noqa: E402
from support.pg_support import with_search_path  # noqa: E402

from tests.crash import test_freeze_soak as soak_test  # noqa: E402


async def one_round(url: str, seconds: float, tmp: Path, *, keep: bool) -> str:
    soak_test.CHAOS_SECONDS = seconds
    soak_test.SETTLE_WITHIN = max(40.0, seconds)
    if url == "sqlite":
        figures = await soak_test.soak(f"sqlite:///{tmp / 'signoff.db'}", tmp)
        soak_test.check(figures)
        return figures.line("sqlite")
    schema = f"signoff_soak_bench_{secrets.token_hex(3)}"
    if keep:
        print(f"schema {schema}, files in {tmp}", flush=True)
    await postgres(f"CREATE SCHEMA {schema}", url)
    try:
        figures = await soak_test.soak(with_search_path(url, schema), tmp)
    finally:
        if not keep:
            await postgres(f"DROP SCHEMA {schema} CASCADE", url)
    soak_test.check(figures)
    return figures.line("postgres")


async def rounds(args: argparse.Namespace) -> None:
    for n in range(args.rounds):
        if args.keep is None:
            with tempfile.TemporaryDirectory() as tmp:
                print(await one_round(args.url, args.seconds, Path(tmp), keep=False), flush=True)
            continue
        tmp = Path(args.keep) / f"round-{n + 1}"
        tmp.mkdir(parents=True, exist_ok=False)
        print(await one_round(args.url, args.seconds, tmp, keep=True), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--url", default="sqlite")
    parser.add_argument("--seed", type=int, help="the faults' seed (one round)")
    parser.add_argument("--keep", metavar="DIR", help="keep each round's files (and schema)")
    args = parser.parse_args()
    if args.seed is not None:
        os.environ[soak_test.SEED_ENV] = str(args.seed)
    asyncio.run(rounds(args))


if __name__ == "__main__":
    main()
