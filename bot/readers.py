"""Who may read a run outside the HTTP API (whose tokens carry `runs:read`): in Slack's
`/runs` and in the console of `signoff dev`. One rule, in one place:

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
from dataclasses import dataclass, field

from runtime import Runtime
from runtime.approvals.policy import Policy, may_decide
from runtime.records import Run

CHANNEL_PREFIXES = ("C", "G")


@dataclass(frozen=True)
class Readers:
    configured: frozenset[str] = frozenset()
    """User, user-group and channel ids that may read every run."""
    resolvers: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, configured: Iterable[str], resolvers: Iterable[str] = ()) -> Readers:
        return cls(frozenset(configured), frozenset(resolvers))

    @property
    def channels(self) -> frozenset[str]:
        return frozenset(i for i in self.configured if i.startswith(CHANNEL_PREFIXES))

    async def may_read(
        self, rt: Runtime, run: Run, user: str, *, channel: str | None = None
    ) -> bool:
        if user == run.requested_by or user in self.resolvers or user in self.configured:
            return True
        if channel is not None and channel in self.channels:
            return True
        if await self._in_group(rt, user):
            return True
        for policy in await _policies(rt, run):
            if await may_decide(policy, user, rt.directory, escalated=True):
                return True
        return False

    async def _in_group(self, rt: Runtime, user: str) -> bool:
        for group in (i for i in self.configured if i.startswith("S")):
            if user in await rt.directory.members(group):
                return True
        return False

    async def readable(
        self, rt: Runtime, runs: Iterable[Run], user: str, *, channel: str | None = None
    ) -> list[Run]:
        return [r for r in runs if await self.may_read(rt, r, user, channel=channel)]


async def _policies(rt: Runtime, run: Run) -> list[Policy]:
    """The policies the run's approvals were asked under, or the default before any."""
    approvals = await rt.approvals(run.id)
    return [rt.policy_of(a) for a in approvals] or [rt.policies.default]


def not_a_reader(run_id: str) -> str:
    return (
        f"You may not read run {run_id}: it is shown to its requester, its approvers and "
        "on-call, and the readers set in SIGNOFF_SLACK_READERS."
    )
