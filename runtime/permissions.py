"""Who may do what: one table of (actor, permission, subject), asked by every door (Slack,
the HTTP API, the console, the CLI, the dev page) through `Runtime.may` and `Runtime.check`.

An actor is a person (a Slack user id, or a people id), an API token (its audit name and
scopes), or a token acting for a person (the console reading as someone, a decision sent
with `by`): each part present must be allowed. A person may:

    read      a run        its requester, whoever may decide its approvals (on-call too),
                           the page resolvers, the configured readers (ids, user groups, or
                           a channel asked in)
    decide    an approval  an approver under the authority it was asked with (escalation
                           adds `escalate_to`), never its requester unless self-approval is
                           allowed (a requester who is an approver may still decline)
    fork, roll back, resume, cancel
              a run        whoever may approve its actions (the policies its approvals were
                           asked under, or the default policy before it asked)
    acknowledge, settle
              a page       the page resolvers; where none are configured, whoever may cancel
                           the page's run
    withdraw  an approval  nobody: only the token that asked for it
    cancel_cool_off, undo
              an approval  an approver it was asked of (as a decline: the requester too if
                           they are one); a person's act, so a token alone never may
    set away  a person     that person only ("away until …, delegate to …", and back), from
                           Slack's Home or the approvals page (`may_set_away`)

A token may do what its scope allows (`SCOPE`); a decision is always a person's, so a
token alone never decides. The CLI is the operator: it holds the database, so it acts as a
token with every scope (`OPERATOR`), for the person it names with `--by`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from datetime import datetime
from enum import StrEnum

from runtime.approvals import Directory
from runtime.approvals import Policy
from runtime.approvals import delegated_for
from runtime.approvals import may_decide
from runtime.approvals import overdue
from store import Approval
from store import Page
from store import Run
from store.records import Away

Subject = Run | Approval | Page


class Permission(StrEnum):
    READ = "read"
    DECIDE = "decide"
    SETTLE = "settle"
    ACKNOWLEDGE = "acknowledge"
    FORK = "fork"
    ROLLBACK = "rollback"
    RESUME = "resume"
    CANCEL = "cancel"
    WITHDRAW = "withdraw"
    CANCEL_COOL_OFF = "cancel_cool_off"
    UNDO = "undo"


SCOPE: dict[Permission, str] = {
    Permission.READ: "runs:read",
    Permission.DECIDE: "approvals:decide",
    Permission.SETTLE: "runs:write",
    Permission.ACKNOWLEDGE: "runs:write",
    Permission.FORK: "runs:write",
    Permission.ROLLBACK: "runs:write",
    Permission.RESUME: "runs:write",
    Permission.CANCEL: "runs:write",
    Permission.WITHDRAW: "approvals:request",
    Permission.CANCEL_COOL_OFF: "approvals:decide",
    Permission.UNDO: "approvals:decide",
}
"""The API scope a token needs for each permission."""

OPERATES = frozenset({Permission.FORK, Permission.ROLLBACK, Permission.RESUME, Permission.CANCEL})
ON_PAGES = frozenset({Permission.SETTLE, Permission.ACKNOWLEDGE})
PERSONS_ONLY = frozenset({Permission.DECIDE, Permission.CANCEL_COOL_OFF, Permission.UNDO})
"""A person's judgement on an approval: a token alone never makes it."""
AFTER_APPROVAL = frozenset({Permission.CANCEL_COOL_OFF, Permission.UNDO})
"""Taking back what an approval let through (issue 42.6): its approvers, as a decline."""
CHANNEL_PREFIXES = ("C", "G")


@dataclass(frozen=True)
class Actor:
    """Who acts: a person, a token, or a token for a person (each part must be allowed)."""

    person: str | None = None
    token: str | None = None
    """The token's audit name (`token:<name>`, or `cli`)."""
    scopes: frozenset[str] = frozenset()
    channel: str | None = None
    """Where the person asks (a Slack channel): a configured reader channel lets them read."""

    @classmethod
    def of_person(cls, person: str, *, channel: str | None = None) -> Actor:
        return cls(person=person, channel=channel)

    def acting_for(self, person: str | None) -> Actor:
        """This token acting for `person` (itself alone when None)."""
        return replace(self, person=person or None)

    @property
    def name(self) -> str:
        return self.person or self.token or "nobody"


OPERATOR = Actor(token="cli", scopes=frozenset(SCOPE.values()))
"""The CLI: whoever holds the database may do what any token may."""


@dataclass(frozen=True)
class Access:
    """Who reads and who handles pages, beyond what policies say (`signoff.toml`)."""

    readers: frozenset[str] = frozenset()
    """User, user-group (S…) and channel (C…/G…) ids that may read every run."""
    resolvers: frozenset[str] = field(default_factory=frozenset)
    """The people who acknowledge and settle pages (on-call)."""

    @classmethod
    def of(cls, readers: Iterable[str] = (), resolvers: Iterable[str] = ()) -> Access:
        return cls(frozenset(readers), frozenset(resolvers))


@dataclass(frozen=True)
class Permissions:
    """The table, over what it must look up: a run's approvals and their policies."""

    access: Access
    directory: Directory
    default: Callable[[], Policy]
    policy_of: Callable[[Approval], Policy]
    approvals_of: Callable[[str], Awaitable[list[Approval]]]
    find_run: Callable[[str | None], Awaitable[Run | None]]
    clock: Callable[[], datetime]
    away: Callable[[], Awaitable[list[Away]]] | None = None
    """Who is away now (`runtime.approvals.delegation`): their delegates decide for them."""

    async def may(self, actor: Actor, permission: Permission, subject: Subject) -> bool:
        if actor.person is None and actor.token is None:
            return False
        if actor.token is not None and not self._token_may(actor, permission, subject):
            return False
        if actor.person is None:
            return permission not in PERSONS_ONLY  # a decision is a person's
        return await self._person_may(actor, permission, subject)

    def _token_may(self, actor: Actor, permission: Permission, subject: Subject) -> bool:
        if SCOPE[permission] not in actor.scopes:
            return False
        if permission == Permission.WITHDRAW:
            return isinstance(subject, Approval) and asked_by(subject, actor.token)
        return True

    async def _person_may(self, actor: Actor, permission: Permission, subject: Subject) -> bool:
        person = actor.person or ""
        if permission == Permission.WITHDRAW:
            return False
        if permission == Permission.DECIDE:
            return isinstance(subject, Approval) and await self.decides(subject, person)
        if permission in AFTER_APPROVAL:
            return isinstance(subject, Approval) and await self.decides(
                subject, person, approving=False
            )
        if permission in ON_PAGES:
            return isinstance(subject, Page) and await self._handles(subject, person)
        run = await self._run_of(subject)
        if permission in OPERATES:
            return run is not None and await self._operates(run, person)
        if run is None:  # reading an approval asked over the API, with no run
            return isinstance(subject, Approval) and await self._reads_approval(subject, person)
        return await self._reads(run, actor)

    # the rows

    async def decides(self, approval: Approval, person: str, *, approving: bool = True) -> bool:
        """Whether `person` may decide (approve, or with `approving=False` decline) this
        approval under its recorded authority, themselves or as an away person's delegate."""
        policy = self.policy_of(approval)
        if approving and approval.requested_by == person and not policy.allow_self_approval:
            return False
        if await self.names_approver(approval, policy, person):
            return True
        if self.away is None:
            return False
        due = policy.on_timeout == "escalate" and overdue(approval, self.clock())
        escalated = approval.escalated or due
        absent = delegated_for(await self.away(), policy, person, escalated=escalated)
        if absent is None or (approving and approval.requested_by == person):
            return False  # a delegate never approves their own request
        return await self.decides(approval, absent, approving=approving)

    async def names_approver(self, approval: Approval, policy: Policy, person: str) -> bool:
        return await approver(approval, policy, person, self.directory, self.clock())

    async def _operates(self, run: Run, person: str) -> bool:
        for policy in await self._policies(run):
            if await may_decide(policy, person, self.directory, escalated=False):
                return True
        return False

    async def _handles(self, page: Page, person: str) -> bool:
        if self.access.resolvers:
            return person in self.access.resolvers
        run = await self._run_of(page)
        if run is None:
            return await may_decide(self.default(), person, self.directory, escalated=False)
        return await self._operates(run, person)

    async def _reads(self, run: Run, actor: Actor) -> bool:
        person = actor.person or ""
        readers = self.access.readers
        if person in (run.requested_by, *self.access.resolvers, *readers):
            return True
        channel = actor.channel or ""
        if channel.startswith(CHANNEL_PREFIXES) and channel in readers:
            return True
        if await self._in_reader_group(person):
            return True
        for policy in await self._policies(run):
            if await may_decide(policy, person, self.directory, escalated=True):
                return True
        return False

    async def _reads_approval(self, approval: Approval, person: str) -> bool:
        if person == approval.requested_by or person in self.access.readers:
            return True
        policy = self.policy_of(approval)
        return await may_decide(policy, person, self.directory, escalated=True)

    async def _in_reader_group(self, person: str) -> bool:
        for group in (i for i in self.access.readers if i.startswith("S")):
            if person in await self.directory.members(group):
                return True
        return False

    async def _policies(self, run: Run) -> list[Policy]:
        """The policies the run's approvals were asked under, or the default before any."""
        return [self.policy_of(a) for a in await self.approvals_of(run.id)] or [self.default()]

    async def _run_of(self, subject: Subject) -> Run | None:
        if isinstance(subject, Run):
            return subject
        return await self.find_run(subject.run_id) if subject.run_id else None


AWAY_SCOPE = "runs:write"
"""The scope a token needs to say someone is away (the CLI's operator has it)."""


def may_set_away(actor: Actor, person: str) -> bool:
    """Whether `actor` may say `person` is away (or back): a person, only for themselves;
    a token with `AWAY_SCOPE` (the CLI), for anyone, or only for the person it acts for."""
    if actor.token is not None:
        return AWAY_SCOPE in actor.scopes and actor.person in (None, person)
    return actor.person is not None and actor.person == person


def away_refusal(actor: Actor, person: str) -> str:
    return f"{actor.name} may not say whether {person} is away: only they may; nothing changed."


def asked_by(approval: Approval, token: str | None) -> bool:
    """Whether `token` (an API token's audit name) asked for this approval: the one that may
    withdraw it."""
    return approval.requester_token is not None and approval.requester_token == token


async def approver(
    approval: Approval, policy: Policy, person: str, directory: Directory, now: datetime
) -> bool:
    """An approver under `policy`, the approval's recorded authority; past an escalating
    deadline its `escalate_to` is one too, whether or not a scheduler has run since (the
    server may be down while someone decides from the CLI)."""
    due = policy.on_timeout == "escalate" and overdue(approval, now)
    escalated = approval.escalated or due
    return await may_decide(policy, person, directory, escalated=escalated)


def refusal(actor: Actor, permission: Permission, subject: Subject) -> str:
    """Why `actor` may not, in one line that says nothing about the subject beyond its id."""
    kind = {Run: "run", Approval: "approval", Page: "page"}[type(subject)]
    scope = SCOPE[permission]
    if actor.token is not None and scope not in actor.scopes:
        who = f": {actor.token} does not have the scope {scope}"
    else:
        who = WHO[permission]
    verb = permission.value.replace("rollback", "roll back").replace("_", " ")
    return f"{actor.name} may not {verb} {kind} {subject.id}{who}; nothing changed."


WHO: dict[Permission, str] = {
    Permission.READ: (
        ": it is shown to its requester, its approvers and on-call, and the configured readers"
    ),
    Permission.DECIDE: ": only an approver it was asked of may (never its requester)",
    Permission.SETTLE: ": only on-call (page_resolvers) may",
    Permission.ACKNOWLEDGE: ": only on-call (page_resolvers) may",
    Permission.FORK: ": only an approver of its actions may",
    Permission.ROLLBACK: ": only an approver of its actions may",
    Permission.RESUME: ": only an approver of its actions may",
    Permission.CANCEL: ": only an approver of its actions may",
    Permission.WITHDRAW: ": only the token that asked for it may",
    Permission.CANCEL_COOL_OFF: ": only an approver it was asked of may",
    Permission.UNDO: ": only an approver it was asked of may",
}
