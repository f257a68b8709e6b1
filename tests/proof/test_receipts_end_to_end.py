"""The refund example's provider pays only with Signoff's receipt of that refund: a decision
yields a signed receipt, stored with the approval, handed to the tool as
`ctx.approval_receipt`, checked by the fake provider before it pays."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.refunds import park_refund

from examples import world as example_world
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from runtime.approvals.policy import Policies
from runtime.approvals.policy import Policy
from runtime.signing import Signer
from signoff.receipts import verify

ORDER = "1004"  # no restocking fee in the example world


@pytest.fixture
def signer() -> Signer:
    return Signer(Ed25519PrivateKey.generate())


@pytest.fixture
def provider_trusts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Signer], None]:
    """Tell the example world's payment provider whose keys to trust (a saved JWKS)."""

    def trust(signer: Signer) -> None:
        path = tmp_path / "jwks.json"
        path.write_text(json.dumps(signer.jwks()))
        monkeypatch.setenv("SIGNOFF_WORLD_JWKS", str(path))

    return trust


@pytest.fixture
def trusted_signer(
    world: Path, signer: Signer, provider_trusts: Callable[[Signer], None]
) -> Signer:
    """A signer whose keys the example world's payment provider trusts."""
    provider_trusts(signer)
    return signer


async def test_the_provider_verifies_the_receipt_before_paying(
    make_runtime: Callable[..., Runtime], trusted_signer: Signer
) -> None:
    rt = make_runtime([refund_agent], signer=trusted_signer)
    run_id, approval = await park_refund(rt, ORDER)

    await rt.decide(approval.id, "approved", by="U0BOB")

    assert (await rt.get(run_id)).status == "done"
    assert [p[0] for p in example_world.payments()] == ["refund"]
    stored = await rt.queries.approval(approval.id)
    assert stored.receipt is not None
    assert verify(stored.receipt, trusted_signer.jwks(), args=approval.args)
    assert stored.receipt["idempotency_key"] == example_world.payments()[0][3]
    assert await rt.queries.receipt(approval.id) == stored.receipt


async def test_a_receipt_signed_by_another_key_is_refused_and_nothing_is_paid(
    make_runtime: Callable[..., Runtime],
    world: Path,
    signer: Signer,
    provider_trusts: Callable[[Signer], None],
) -> None:
    provider_trusts(Signer(Ed25519PrivateKey.generate()))  # the provider knows another key
    rt = make_runtime([refund_agent], signer=signer)
    run_id, approval = await park_refund(rt, ORDER)

    await rt.decide(approval.id, "approved", by="U0BOB")

    assert example_world.payments() == []
    [effect] = [e for e in await rt.queries.effects(run_id) if e.tool == "issue_refund"]
    assert effect.status == "failed"
    assert "ReceiptRefused" in (effect.error or "")


async def test_without_a_receipt_the_trusting_provider_pays_nothing(
    make_runtime: Callable[..., Runtime], trusted_signer: Signer
) -> None:
    rt = make_runtime([refund_agent])  # a runtime that signs nothing
    _, approval = await park_refund(rt, ORDER)

    await rt.decide(approval.id, "approved", by="U0BOB")

    assert example_world.payments() == []


async def test_a_quorum_receipt_names_every_approver(
    make_runtime: Callable[..., Runtime], world: Path, signer: Signer
) -> None:
    two = Policies(tools={"issue_refund": Policy(required_approvals=2)})
    rt = make_runtime([refund_agent], signer=signer, policies=two)
    _, approval = await park_refund(rt, ORDER)

    await rt.decide(approval.id, "approved", by="U0BOB")
    assert await rt.queries.receipt(approval.id) is None  # still pending: nothing to sign
    await rt.decide(approval.id, "approved", by="U0CAROL")

    receipt = await rt.queries.receipt(approval.id)
    assert receipt is not None
    assert receipt["deciders"] == ["U0BOB", "U0CAROL"]
    assert receipt["policy"]["required_approvals"] == 2
    authority = (await rt.queries.approval(approval.id)).authority
    assert authority is not None  # the record the approval was asked under, issue 39's
    assert receipt["policy"]["digest"] == authority.digest
    assert receipt["policy"]["settings"] == authority.model_dump(mode="json")["settings"]
