"""Receipts over the HTTP API: the public JWKS, a decision's receipt, a receipt checked by
the server (valid, tampered, for other arguments)."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.helpers import AUTH
from support.helpers import Api

from runtime.signing import Signer
from signoff.receipts import verify


async def test_keys_receipt_and_verify(make_api: Callable[..., Awaitable[Api]]) -> None:
    signer = Signer(Ed25519PrivateKey.generate())
    api = await make_api(signer=signer)
    client = api.client

    keys = await client.get("/v1/keys")  # no token: public keys are public
    assert keys.status == 200
    jwks = await keys.json()
    assert jwks == signer.jwks()

    asked = await client.post(
        "/v1/approvals",
        json={"tool": "issue_refund", "args": {"order_id": "9", "amount_cents": 5}},
        headers=AUTH,
    )
    approval = await asked.json()
    pending = await client.get(f"/v1/approvals/{approval['id']}/receipt", headers=AUTH)
    assert pending.status == 400
    await client.post(
        f"/v1/approvals/{approval['id']}/decision",
        json={"decision": "approved", "by": "U0BOB"},
        headers=AUTH,
    )
    got = await client.get(f"/v1/approvals/{approval['id']}/receipt", headers=AUTH)
    assert got.status == 200
    receipt = await got.json()
    assert verify(receipt, jwks, args={"order_id": "9", "amount_cents": 5})

    async def check(body: dict[str, object]) -> dict[str, object]:
        answer = await client.post("/v1/receipts/verify", json=body, headers=AUTH)
        assert answer.status == 200
        return dict(await answer.json())

    assert await check({"receipt": receipt}) == {"valid": True, "kid": signer.kid}
    tampered = await check({"receipt": {**receipt, "decided_by": "U0EVE"}})
    assert tampered["valid"] is False
    assert "field was changed" in str(tampered["why"])
    other = await check({"receipt": receipt, "args": {"order_id": "9", "amount_cents": 6}})
    assert other["valid"] is False
    assert "other arguments" in str(other["why"])
    assert (await client.post("/v1/receipts/verify", json={"receipt": receipt})).status == 401
