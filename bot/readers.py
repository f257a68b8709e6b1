"""Who may read a run in Slack's `/runs` and in the console when it reads as a person: the
permission table's `read` row (`runtime.permissions`, configured from
`SIGNOFF_SLACK_READERS` and `SIGNOFF_PAGE_RESOLVERS`):

- the run's requester;
- whoever may decide its approvals: the approvers of the policies they were asked under (the
  default policy before it asked for any), user groups through the directory, and the
  policy's on-call (`escalate_to`), who is asked when nobody answers;
- the people who settle pages (`SIGNOFF_PAGE_RESOLVERS`);
- the configured readers (`SIGNOFF_SLACK_READERS`): user ids, user-group ids (S…), and
  channel ids (C…/G…) in which anyone asking is answered (the answer is shown there only to
  the person who asked, yet the channel is one whose members may read runs).

A policy that names no approvers lets anyone decide, so it lets anyone read. Whoever may not
read gets one line, and nothing of the run.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime import Actor
from runtime import Permission
from runtime import Runtime
from runtime.records import Run


async def may_read(rt: Runtime, run: Run, user: str, *, channel: str | None = None) -> bool:
    return await rt.may(Actor.of_person(user, channel=channel), Permission.READ, run)


async def readable(
    rt: Runtime, runs: Iterable[Run], user: str, *, channel: str | None = None
) -> list[Run]:
    return await rt.permitted(Actor.of_person(user, channel=channel), Permission.READ, runs)


def not_a_reader(run_id: str) -> str:
    return (
        f"You may not read run {run_id}: it is shown to its requester, its approvers and "
        "on-call, and the readers set in SIGNOFF_SLACK_READERS."
    )
