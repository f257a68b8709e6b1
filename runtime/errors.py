"""Errors raised by the runtime, on top of the store's.

SignoffRuntimeError
 ├── DefinitionError     a tool or agent is defined wrongly (refused when the agent is built)
 │    └── RuleError       an approval rule names an unknown argument or compares wrong types
 ├── UnknownAgent        a run names an agent this runtime was not given
 ├── InvalidRequest      an argument to a Runtime method is wrong (a bad step, decision, budget)
 │    ├── RunFinished      the run is done or cancelled already, so it cannot be stopped
 │    ├── EffectInDoubt    an effect that may not run twice is in doubt: a human resolves it
 │    ├── SharedEffect     an effect to compensate is relied on by other runs: undone only
 │    │                    when the operator says so (compensate_shared)
 │    ├── TooLate          an approved call's cool-off is over (no cancel), or its undo window
 │    │                    closed or it was undone already (no undo)
 │    └── ModelChanged     the run started on another model than this process is configured with
 ├── RunNotFound         no run with this id
 ├── ApprovalNotFound    no approval with this id
 ├── PageNotFound        no page with this id
 ├── AlreadyAcknowledged the page was acknowledged already (by `page.acknowledged_by`)
 ├── DecisionRefused     a decision that may not be made
 │    ├── AlreadyDecided   the approval is no longer pending; a decision never changes
 │    │    └── ApprovalExpired  its deadline passed and it was declined as expired
 │    ├── NotAnApprover    the user is not an approver under the policy
 │    ├── SelfApproval     the requester may not approve their own action
 │    ├── StepUpRequired   the policy wants a passkey's confirmation (the approvals page)
 │    ├── LinkUsed         an e-mailed decision link was used already (it decides once)
 │    ├── EditRefused      the policy forbids edits, or the edited arguments are invalid
 │    ├── KeyConflict      the call's key was used with other arguments: decline, or approve
 │    │                    it as a separate effect
 │    └── NotTheAsker      only whoever asked for an approval may withdraw it
 ├── NotPermitted        the permission table refuses this actor this (`runtime.permissions`)
 ├── RunBusy             another worker holds the run's lease
 └── SigningKeyError     a signing key file cannot be read, is malformed, or is in the way
"""

from __future__ import annotations

from collections.abc import Sequence

from store.errors import DetailedError


class SignoffRuntimeError(DetailedError):
    """The runtime refused or failed."""


class DefinitionError(SignoffRuntimeError):
    """A tool or agent is defined wrongly."""


Loc = tuple[str, ...]
"""Where in the configuration a problem is: the names leading to it."""


class RuleError(DefinitionError):
    """An approval rule cannot work for the tools it applies to.

    `problems` holds each as (where in the configuration, what is wrong)."""

    @classmethod
    def of(cls, problems: Sequence[tuple[Loc, str]]) -> RuleError:
        """The error that says the first problem (and how many more), holding them all."""
        (loc, first), more = problems[0], len(problems) - 1
        also = f" (and {more} more)" if more else ""
        return cls(f"{'.'.join(loc)}: {first}{also}", problems=problems)


class UnknownAgent(SignoffRuntimeError):
    """No agent with this name is registered."""


class InvalidRequest(SignoffRuntimeError):
    """The request is invalid."""


class ModelChanged(InvalidRequest):
    """The run started on another model than the one this process is configured with."""


class RunFinished(InvalidRequest):
    """The run is done or cancelled already."""


class SharedEffect(InvalidRequest):
    """An effect to compensate is relied on by other runs: compensating it undoes what they
    were told happened, so it is done only when the operator says so (`compensate_shared`).

    Carries `run_id` and `shared`: by call id, the runs (and their calls) relying on it."""

    run_id: str
    shared: dict[str, list[tuple[str, str]]]


class TooLate(InvalidRequest):
    """The approved call can no longer be cancelled or undone; nothing changed."""


class EffectInDoubt(InvalidRequest):
    """An effect that may not run twice is in doubt; a human resolves it first.

    Carries `run_id`, `call_id` and `tool`; each surface says how to resolve it."""

    run_id: str
    call_id: str
    tool: str


class RunNotFound(SignoffRuntimeError):
    """No such run."""


class ApprovalNotFound(SignoffRuntimeError):
    """No such approval."""


class PageNotFound(SignoffRuntimeError):
    """No such page."""


class AlreadyAcknowledged(SignoffRuntimeError):
    """The page was already acknowledged."""


class DecisionRefused(SignoffRuntimeError):
    """This decision may not be made."""


class AlreadyDecided(DecisionRefused):
    """The approval was already decided."""


class ApprovalExpired(AlreadyDecided):
    """The approval's deadline passed; it was declined as expired."""


class AlreadyVoted(DecisionRefused):
    """This approver already approved; the quorum waits for others."""


class NotAnApprover(DecisionRefused):
    """This user may not decide this approval."""


class SelfApproval(DecisionRefused):
    """The requester may not approve their own action."""


class LinkUsed(DecisionRefused):
    """This e-mailed decision link was used already: each link decides once."""


class StepUpRequired(DecisionRefused):
    """This approval counts only once the approver confirms it with a passkey, on the
    approvals page (the policy's `step_up = "passkey"`)."""


class EditRefused(DecisionRefused):
    """The arguments may not be edited this way."""


class KeyConflict(DecisionRefused):
    """An earlier effect used this call's key with other arguments: decline the call, or
    approve it as a separate effect.

    Carries the earlier effect (`conflict`), the arguments this decision asked (`asked`,
    masked) and the `approval`, so each surface can say what its person may do next."""


class NotTheAsker(DecisionRefused):
    """Only whoever asked for an approval may withdraw it."""


class NotPermitted(SignoffRuntimeError):
    """This actor may not do this (`runtime.permissions`); nothing changed."""


class RunBusy(SignoffRuntimeError):
    """Another worker is driving this run."""


class SigningKeyError(SignoffRuntimeError):
    """A signing key cannot be used: unreadable, malformed, not Ed25519, or in the way."""
