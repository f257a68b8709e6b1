"""A ruling, what the store records of a decision, is approved or declined, never pending:
refused where it is made, so no store is ever asked to record one."""

from __future__ import annotations

import dataclasses
from datetime import UTC
from datetime import datetime

import pytest

from store import ApprovalState
from store.base import Ruling

AT = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


def test_a_ruling_is_approved_or_declined_never_pending() -> None:
    with pytest.raises(ValueError, match="never pending"):
        Ruling(ApprovalState.PENDING, by="U1", at=AT)
    approved = Ruling(ApprovalState.APPROVED, by="U1", at=AT)
    with pytest.raises(ValueError, match="never pending"):
        dataclasses.replace(approved, state=ApprovalState.PENDING)
    assert Ruling(ApprovalState.DECLINED, by="U1", at=AT).state == ApprovalState.DECLINED
