"""A receipt verifies only as signed: any field changed, other arguments, another key or a
replay under another idempotency key fails, and a rotated key's receipts still verify."""

from __future__ import annotations

import copy
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.records import an_approval

from runtime.approvals import receipts
from runtime.errors import SigningKeyError
from runtime.signing import Signer
from runtime.signing import create_key
from runtime.signing import load_private_key
from runtime.signing import load_public_key
from runtime.signing import public_pem
from signoff.receipts import BadReceipt
from signoff.receipts import verify
from store import Approval
from store import ApprovalState
from store.digest import args_digest

ARGS = {"order_id": "4471", "amount_cents": 2500, "restocking_fee_cents": 0}


def decided(**changes: Any) -> Approval:
    """Approval "apr_123" (see `support.records`), approved by U0BOB."""
    fields: dict[str, Any] = {
        "args": ARGS,
        "idempotency_key": "refund:4471:0",
        "state": ApprovalState.APPROVED,
        "decided_by": "U0BOB",
        "decided_at": datetime(2026, 11, 29, 9, 5, tzinfo=UTC),
    }
    return an_approval(**(fields | changes))


@pytest.fixture
def signer() -> Signer:
    return Signer(Ed25519PrivateKey.generate())


def signed(signer: Signer, approval: Approval | None = None) -> dict[str, Any]:
    return signer.sign(receipts.document(approval or decided(), []))


def test_a_receipt_verifies_for_the_call_it_approves(signer: Signer) -> None:
    receipt = signed(signer)

    assert verify(receipt, signer.jwks(), args=ARGS, idempotency_key="refund:4471:0") == receipt
    assert receipt["decision"] == "approved"
    assert receipt["deciders"] == ["U0BOB"]
    assert receipt["decided_at"] == "2026-11-29T09:05:00Z"
    assert receipt["policy"]["name"] == "refunds"  # its authority, when it has one
    assert receipt["signature"]["kid"] == signer.kid


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decision", "declined"),
        ("decided_by", "U0MALLORY"),
        ("decided_at", "2026-11-29T09:06:00Z"),
        ("args_digest", "sha256:" + "0" * 64),
        ("card_digest", "sha256:" + "1" * 64),
        ("idempotency_key", "refund:9999:0"),
        ("approval_id", "ap_2"),
        ("policy", {"name": "default", "required_approvals": 1}),
        ("deciders", ["U0BOB", "U0EVE"]),
    ],
)
def test_any_field_changed_fails(signer: Signer, field: str, value: Any) -> None:
    receipt = signed(signer)
    tampered = {**copy.deepcopy(receipt), field: value}

    with pytest.raises(BadReceipt, match="does not match its content"):
        verify(tampered, signer.jwks(), approved=False)


def test_a_receipt_for_other_arguments_fails(signer: Signer) -> None:
    receipt = signed(signer)

    with pytest.raises(BadReceipt, match="other arguments"):
        verify(receipt, signer.jwks(), args={**ARGS, "amount_cents": 4000})


def test_a_receipt_replayed_under_another_key_fails(signer: Signer) -> None:
    with pytest.raises(BadReceipt, match="under key"):
        verify(signed(signer), signer.jwks(), args=ARGS, idempotency_key="refund:4471:1")


def test_another_signing_key_fails(signer: Signer) -> None:
    forged = Signer(Ed25519PrivateKey.generate()).sign(receipts.document(decided(), []))

    with pytest.raises(BadReceipt, match="not among the keys"):
        verify(forged, signer.jwks())
    # the forger naming our key id does not help: the signature is checked with our key
    forged["signature"]["kid"] = signer.kid
    with pytest.raises(BadReceipt, match="does not match"):
        verify(forged, signer.jwks())


def test_a_declined_receipt_is_no_approval(signer: Signer) -> None:
    receipt = signed(signer, decided(state=ApprovalState.DECLINED, reason="too much"))

    assert verify(receipt, signer.jwks(), approved=False)["decision"] == "declined"
    with pytest.raises(BadReceipt, match="not approved"):
        verify(receipt, signer.jwks())


def test_receipts_of_a_rotated_key_still_verify(tmp_path: Path) -> None:
    old = create_key(tmp_path / "old.pem")
    before = Signer(old).sign(receipts.document(decided(), []))
    (tmp_path / "old.pub").write_text(public_pem(old.public_key()))
    rotated = Signer(create_key(tmp_path / "new.pem"), (load_public_key(tmp_path / "old.pub"),))

    after = rotated.sign(receipts.document(decided(), []))
    assert verify(before, rotated.jwks())["signature"]["kid"] != after["signature"]["kid"]
    assert verify(after, rotated.jwks())
    assert [k["kid"] for k in rotated.jwks()["keys"]] == [rotated.kid, Signer(old).kid]


def test_signing_is_deterministic_so_a_receipt_signed_again_is_the_same(signer: Signer) -> None:
    assert signed(signer) == signed(signer)


def test_an_edit_is_what_the_receipt_approves(signer: Signer) -> None:
    edited = {**ARGS, "restocking_fee_cents": 500}
    receipt = signed(signer, decided(approved_args=edited, approved_digest=args_digest(edited)))

    assert verify(receipt, signer.jwks(), args=edited)
    with pytest.raises(BadReceipt, match="other arguments"):
        verify(receipt, signer.jwks(), args=ARGS)


def test_a_key_file_that_cannot_be_used_says_which(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(SigningKeyError, match=str(bad)):
        load_private_key(bad)
    with pytest.raises(SigningKeyError, match="cannot read"):
        load_private_key(tmp_path / "missing.pem")
    create_key(tmp_path / "k.pem")
    with pytest.raises(SigningKeyError, match="not replaced"):
        create_key(tmp_path / "k.pem")
    assert (tmp_path / "k.pem").stat().st_mode & 0o077 == 0
