"""The callback notifier became a dataclass; its repr, which a log line may carry, must not
carry the signing secret."""

from __future__ import annotations

from typing import Any
from typing import cast

from bot.callbacks import CallbackNotifier


def test_the_notifiers_repr_leaves_the_signing_secret_out() -> None:
    notifier = CallbackNotifier(cast(Any, None), "s3cret-signing-key", cast(Any, None))

    assert "s3cret-signing-key" not in repr(notifier)
    assert notifier.secret == "s3cret-signing-key"
