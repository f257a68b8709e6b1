"""What every command shares: its group, common options, output, and the one refusal.

Only typer is imported here: the database, the runtime, rich tables and the HTTP API's request
models load inside the commands that use them, so `signoff --help` starts fast.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console
    from rich.console import RenderableType


REFUSED = 1
"""The exit code of a refused command: it changed nothing."""
CONFIG_ERROR = 2
"""The exit code of a configuration that cannot be used (signoff.toml, the environment, the
agents it names), in every command: nothing started and nothing changed. Also the code of
a command line that cannot be parsed."""


class Failure(Exception):
    """A one-line reason to exit non-zero (`code`)."""

    def __init__(self, message: str, *, code: int = REFUSED) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Options:
    """What comes before the command: `signoff [--config PATH] [-v] ...`."""

    config: str | None = None
    verbose: bool = False


class LogFormatChoice(StrEnum):
    """`--log-format`: `bot.logs`' formats as a command-line choice (that module, and
    logging with it, loads only when a command runs)."""

    human = "human"
    json = "json"


def options(ctx: typer.Context) -> Options:
    return ctx.obj if isinstance(ctx.obj, Options) else Options()


def group(help: str) -> typer.Typer:
    """A command group. Plain help (no rich markup mode): flags show no `<bool>` type."""
    return typer.Typer(
        help=help,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
YesFlag = Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")]
CompensateShared = Annotated[
    bool,
    typer.Option(
        "--compensate-shared",
        help="Undo effects other runs rely on too (they are paged for and noted).",
    ),
]
RunId = Annotated[str, typer.Argument(metavar="RUN", help="The run's id.", show_default=False)]


@cache
def console() -> Console:
    """Standard output for people. What it prints may hold what an agent wrote, so nothing
    is read as markup or emoji codes; piped, it keeps whole lines (rich would squeeze tables
    to 80 columns)."""
    from rich.console import Console

    width = None if sys.stdout.isatty() else 200
    return Console(width=width, markup=False, emoji=False, highlight=False)


REWRITTEN_BY_RICH = re.compile(r"[\t\a\b\v\f\r]")
"""What rich changes in plain text: tabs (expanded by cell width) and the control codes it
drops."""


def say(renderable: RenderableType) -> None:
    if isinstance(renderable, str) and not REWRITTEN_BY_RICH.search(renderable):
        # as `console()` prints it (no markup, emoji or highlighting; soft wrap: no wrapping),
        # without loading rich: about 100M instructions of a command that prints only text
        sys.stdout.write(f"{renderable}\n")
        sys.stdout.flush()
        return
    console().print(renderable, soft_wrap=True)


def show(value: Any, *, as_json: bool, table: RenderableType | None = None) -> None:
    """`value` as JSON for scripts, or `table` (else the value itself) for people."""
    if as_json:
        from bot.views import as_json as json_text

        typer.echo(json_text(value))
    else:
        say(table if table is not None else value)


def dumped(records: Sequence[BaseModel]) -> list[dict[str, Any]]:
    """Records as JSON; approvals and effects with their sensitive arguments masked."""
    return [_shown(record).model_dump(mode="json") for record in records]


def _shown(record: BaseModel) -> BaseModel:
    shown = getattr(record, "shown", None)
    return shown() if callable(shown) else record


def checked_as_api(model: type[BaseModel], flags: Mapping[str, str], **values: Any) -> None:
    """Refuse what the HTTP API would refuse in the same fields (`bot.requests`' models:
    lengths, user ids), naming the command-line option (`flags`: field -> option)."""
    from bot.requests import refusal

    refused = refusal(model, **values)
    if refused is not None:
        field, why = refused
        raise Failure(f"{flags.get(field, field)}: {why}")


def check_user_id(flag: str, user: str) -> None:
    """A person, named as the HTTP API names one: a Slack user id (as in its decisions), no
    longer than it accepts for a requester."""
    from bot.policy_ids import SLACK_USER_ID
    from runtime.limits import MAX_REQUESTER  # the API's limit, without its request models

    if len(user) > MAX_REQUESTER:
        raise Failure(f"{flag}: at most {MAX_REQUESTER} characters, not {len(user):,}")
    if not re.fullmatch(SLACK_USER_ID, user):
        raise Failure(f"{flag}: {user!r} is not a Slack user id (U… or W…)")


def positive_age(flag: str, text: str, *, what: str = "duration", also: str = "") -> timedelta:
    """`text` as a positive duration with its unit (30d), or a Failure naming `flag`; `also`:
    the other form the flag takes, which the refusal names too."""
    from runtime.approvals import parse_duration

    try:
        age: timedelta = parse_duration(text, unit_required=True)
    except ValueError as exc:
        raise Failure(f"{flag}: {exc}" + (f" (or give {also})" if also else "")) from None
    if age <= timedelta(0):
        raise Failure(
            f"{flag} must be a positive {what} such as 30d" + (f", or {also}" if also else "")
        )
    return age


def edited_args(text: str | None, flag: str = "--edit") -> dict[str, Any] | None:
    """The JSON object given to `flag`, as strict as the HTTP API's JSON (no NaN, Infinity)."""
    if text is None:
        return None
    from runtime.limits import MAX_DEPTH
    from runtime.limits import plain_reason

    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise Failure(f"{flag}: not valid JSON: {exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise Failure(f"{flag}: nested deeper than the limit of {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise Failure(f"{flag}: {plain_reason(exc)}") from None
    if not isinstance(value, dict):
        raise Failure(
            f"{flag}: give a JSON object of the tool's arguments, e.g. '{{\"amount\": 5}}'"
        )
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"{literal[:40]} is too large for a number")
    return value
