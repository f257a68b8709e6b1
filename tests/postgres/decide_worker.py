"""One of many processes deciding the same approval at once.

    python decide_worker.py <url> <approval-id> <user>

Opens the store, says `ready`, waits for a line on stdin, decides; prints `won` or `lost <error>`.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC
from datetime import datetime

from store import ApprovalState
from store import errors
from store import open_store
from store.base import Ruling


async def main(url: str, approval_id: str, user: str) -> None:
    store = await open_store(url, migrate=False, pool_size=1)
    try:
        await store.get_approval(approval_id)  # connected and warm before the start
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        try:
            await store.decide_approval(
                approval_id, Ruling(ApprovalState.APPROVED, by=user, at=datetime.now(UTC))
            )
        except errors.Conflict as exc:
            print(f"lost {type(exc).__name__}", flush=True)
        else:
            print("won", flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
