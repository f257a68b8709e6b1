"""Any Python function, gated: `python -m examples.stacks.decorator` (see the package doc)."""

from __future__ import annotations

from signoff import Declined, TimedOut, requires_signoff


@requires_signoff(timeout=600)
def refund_order(order_id: str, amount_cents: int) -> str:
    return f"refunded {amount_cents} cents on order {order_id}"


def main() -> None:
    print("asking Signoff: refund_order(4471, 2500); approve it in signoff dev", flush=True)
    try:
        print(refund_order("4471", 2500))
    except Declined as declined:
        print(f"not refunded: declined by {declined.decided_by}: {declined.reason}")
    except TimedOut:
        print("not refunded: nobody decided in time")


if __name__ == "__main__":
    main()
