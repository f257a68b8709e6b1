"""`signoff receipts verify|show|keys|new-key`: signed receipts of decisions, checked offline.

`verify FILE` checks a receipt (JSON) against the configured key's JWKS, or a JWKS file
(`--keys`, e.g. one saved from `/v1/keys`), and, when given, the arguments and idempotency
key it must approve: exit 0 and the key id that signed it, or exit 1 and why not. It needs
no server and no database.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

from bot.cli.base import Failure
from bot.cli.base import group
from bot.cli.base import options
from bot.cli.session import refusals
from bot.cli.session import with_process

if TYPE_CHECKING:
    from bot.wiring import Process

receipts = group("Signed receipts of decisions: verify one, show one, the public keys.")


def read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise Failure(f"{what}: cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Failure(f"{what}: {path} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Failure(f"{what}: {path} is not a JSON object")
    return value


def configured_keys(ctx: typer.Context) -> dict[str, Any]:
    """The JWKS of the configured signing key (none: a refusal saying what to give)."""
    from bot.settings import load_settings
    from bot.signing_keys import load_signer

    with refusals():
        signer = load_signer(load_settings(options(ctx).config))
    if signer is None:
        raise Failure("no signing key is configured here: give the public keys with --keys FILE")
    return signer.jwks()


@receipts.command("verify")
def verify(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The receipt (JSON).")],
    keys: Annotated[
        Path | None, typer.Option("--keys", help="A JWKS file (default: the configured key).")
    ] = None,
    args: Annotated[
        str | None, typer.Option("--args", help="The arguments it must approve (JSON object).")
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="The idempotency key it must approve.")
    ] = None,
) -> None:
    """Check a receipt's signature, and the call it approves."""
    from signoff.receipts import BadReceipt
    from signoff.receipts import check_signature
    from signoff.receipts import verify as check

    receipt = read_json(file, "FILE")
    jwks = read_json(keys, "--keys") if keys is not None else configured_keys(ctx)
    call_args = None
    if args is not None:
        try:
            call_args = json.loads(args)
        except json.JSONDecodeError as exc:
            raise Failure(f"--args: not JSON: {exc}") from None
        if not isinstance(call_args, dict):
            raise Failure("--args: not a JSON object")
    try:
        check(receipt, jwks, args=call_args, idempotency_key=key, approved=False)
    except BadReceipt as exc:
        raise Failure(f"{file}: not a valid receipt: {exc}") from None
    kid = check_signature(receipt, jwks)
    typer.echo(f"valid: {receipt.get('decision')} {receipt.get('approval_id')}, signed by {kid}")


@receipts.command("show")
def show(
    ctx: typer.Context, approval_id: Annotated[str, typer.Argument(help="The approval.")]
) -> None:
    """A decided approval's receipt, as JSON (to save and hand on)."""

    async def work(process: "Process") -> dict[str, Any] | None:
        return await process.runtime.queries.receipt(approval_id)

    found = with_process(ctx, work, agents=False)
    if found is None:
        raise Failure(f"approval {approval_id} is not decided, or no signing key is configured")
    typer.echo(json.dumps(found, indent=2, sort_keys=True))


@receipts.command("keys")
def keys(ctx: typer.Context) -> None:
    """The public keys receipts are signed with, as a JWKS (what /v1/keys serves)."""
    typer.echo(json.dumps(configured_keys(ctx), indent=2))


@receipts.command("new-key")
def new_key(
    file: Annotated[Path, typer.Argument(help="Where to write it (must not exist).")],
) -> None:
    """Make a new Ed25519 signing key (to rotate: point signing_key_file at it and list the
    old file in retired_signing_keys)."""
    from runtime.errors import SigningKeyError
    from runtime.signing import create_key
    from runtime.signing import key_id

    try:
        made = create_key(file)
    except SigningKeyError as exc:
        raise Failure(str(exc)) from None
    typer.echo(f"wrote a new signing key to {file} (key id {key_id(made.public_key())})")
