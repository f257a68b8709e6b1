"""Tools: the `@tool` decorator, argument validation from type hints, and timed execution."""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import pydantic
from pydantic_core import to_jsonable_python

from runtime.display import Display
from runtime.errors import DefinitionError
from store import Effect
from store import Reversibility

if TYPE_CHECKING:
    from runtime.facts import FactStore

EffectKind = Literal["read", "reversible", "irreversible"]
DEFAULT_TIMEOUT = 60.0
DEFAULT_CONTEXT_TIMEOUT = 5.0


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's parameters."""


class ToolTimeout(TimeoutError):
    """The tool did not finish within its timeout."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool knows about the call it serves."""

    run_id: str
    call_id: str
    step: int
    idempotency_key: str
    lineage_id: str
    deadline: datetime | None = None
    attempt: int = 1
    facts: FactStore | None = None
    original: Effect | None = None
    """For a compensating call: the effect being undone (its args and result)."""
    approval_receipt: dict[str, Any] | None = None
    """For an approved call: the signed receipt of its approval, to hand to the provider
    (`signoff.receipts.verify` checks it); None when nothing was approved or signed."""

    @classmethod
    def of(
        cls,
        effect: Effect,
        *,
        facts: FactStore | None,
        deadline: datetime | None = None,
        attempt: int = 1,
        original: Effect | None = None,
        approval_receipt: dict[str, Any] | None = None,
    ) -> ToolContext:
        """The context of the call `effect` records."""
        return cls(
            run_id=effect.run_id,
            call_id=effect.call_id,
            step=effect.step,
            idempotency_key=effect.idempotency_key,
            lineage_id=effect.lineage_id,
            deadline=deadline,
            attempt=attempt,
            facts=facts,
            original=original,
            approval_receipt=approval_receipt,
        )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How a tool is described to a model."""

    name: str
    description: str
    parameters: dict[str, Any]


class Tool:
    """A function an agent may call, with its classification and limits."""

    def __init__(  # noqa: PLR0913 - one keyword per part of a tool's definition
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effect: EffectKind | None = None,
        compensate: str | None = None,
        requires_approval: bool | None = None,
        idempotent: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT,
        idempotency_key: Callable[[dict[str, Any]], str] | None = None,
        sensitive: Sequence[str] = (),
        blocking: bool = True,
        display: Display | None = None,
        context: Callable[..., Any] | None = None,
        context_timeout: float = DEFAULT_CONTEXT_TIMEOUT,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or inspect.getdoc(fn) or self.name
        if effect is not None and effect not in ("read", "reversible", "irreversible"):
            raise DefinitionError(
                f"tool {self.name!r}: effect must be 'read', 'reversible' or 'irreversible', "
                f"not {effect!r}"
            )
        self.effect = Reversibility(effect) if effect else None
        if compensate and self.effect != Reversibility.REVERSIBLE:
            raise DefinitionError(f"tool {self.name!r}: only a reversible tool has a compensator")
        self.compensate = compensate
        if requires_approval and self.effect == Reversibility.READ:
            raise DefinitionError(f"tool {self.name!r}: a read tool never needs approval")
        self.approval_waived = requires_approval is False and self.effect == "irreversible"
        if requires_approval is None:
            requires_approval = self.effect == Reversibility.IRREVERSIBLE
        self.requires_approval = requires_approval
        self.idempotent = idempotent or self.effect == Reversibility.READ
        if timeout is not None and timeout <= 0:
            raise DefinitionError(f"tool {self.name!r}: timeout must be positive")
        self.timeout = timeout
        self.business_key = idempotency_key
        self.is_async = inspect.iscoroutinefunction(fn)
        if not blocking and self.is_async:
            raise DefinitionError(
                f"tool {self.name!r}: blocking=False is for a fast `def` tool; an async tool "
                "never blocks the event loop"
            )
        if not blocking and timeout not in (None, DEFAULT_TIMEOUT):
            raise DefinitionError(
                f"tool {self.name!r}: blocking=False runs the `def` tool on the event loop, "
                "where no timeout can stop it: drop the timeout, or let it run in a thread"
            )
        self.on_loop = not blocking
        if self.on_loop:
            self.timeout = None  # nothing enforces one, so the tool is told of none
        self.takes_ctx, self.args_model = _arguments_model(fn, self.name)
        self.sensitive = _sensitive(self.name, sensitive, self.parameter_names)
        if display is not None:
            display.check(self.name, self.parameter_names)
        self.display = display
        if context is not None and not callable(context):
            raise DefinitionError(f"tool {self.name!r}: context must be a function")
        if context_timeout <= 0:
            raise DefinitionError(f"tool {self.name!r}: context_timeout must be positive")
        self.context = context
        """Reads what an approver needs (`runtime.approvals.context`), from the arguments."""
        self.context_timeout = context_timeout

    def __repr__(self) -> str:
        return f"<Tool {self.name} effect={self.effect and self.effect.value}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def mutating(self) -> bool:
        return self.effect != Reversibility.READ

    @property
    def parameter_names(self) -> frozenset[str]:
        return frozenset(self.args_model.model_fields)

    def spec(self) -> ToolSpec:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(self.name, self.description, schema)

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Validated arguments in canonical form, or ToolArgumentError saying what is wrong."""
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"arguments must be an object, got {type(arguments).__name__}")
        try:
            model = self.args_model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ToolArgumentError(f"invalid arguments for {self.name}: {problems}") from None
        return model.model_dump(mode="json")

    def business_id(self, args: dict[str, Any]) -> str | None:
        return None if self.business_key is None else str(self.business_key(args))

    async def invoke(self, args: dict[str, Any], ctx: ToolContext | None) -> Any:
        """Run the tool within its timeout; sync tools run in a worker thread, unless they
        said they do not block (`blocking=False`): then they run on the loop, no timeout.
        `ctx` may be None only for a tool that does not take one (`takes_ctx`)."""
        if self.takes_ctx and ctx is None:
            raise ValueError(f"tool {self.name!r} takes a context and was given none")
        kwargs = dict(args, ctx=ctx) if self.takes_ctx else args
        if self.on_loop:
            return to_jsonable_python(self.fn(**kwargs), fallback=repr)
        limit = asyncio.timeout(self.timeout)
        try:
            async with limit:
                if self.is_async:
                    result = await self.fn(**kwargs)
                else:
                    result = await asyncio.to_thread(self.fn, **kwargs)
        except TimeoutError:
            if not limit.expired():
                raise  # the tool's own timeout error: a failure, not ours to judge in doubt
            raise ToolTimeout(f"{self.name} did not finish within {self.timeout:g}s") from None
        # The tool has acted: a result that is not JSON must not turn a done effect into a
        # failed one (which a re-issued call would repeat), so it is kept as text.
        return to_jsonable_python(result, fallback=repr)


def tool(  # noqa: PLR0913 - one keyword per part of a tool's definition
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: EffectKind | None = None,
    compensate: str | None = None,
    requires_approval: bool | None = None,
    idempotent: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    idempotency_key: Callable[[dict[str, Any]], str] | None = None,
    sensitive: Sequence[str] = (),
    blocking: bool = True,
    display: Display | None = None,
    context: Callable[..., Any] | None = None,
    context_timeout: float = DEFAULT_CONTEXT_TIMEOUT,
) -> Any:
    """Declare a tool. `effect` classifies it; irreversible tools need approval by default.
    Arguments named in `sensitive` are masked wherever the call is shown (Slack, the CLI, the
    API, logs, the audit trail); the tool receives them whole.

    A `def` tool runs in a worker thread, since it may block (a request, a query) and would
    stall every run, approval and Slack acknowledgement meanwhile; `blocking=False` says it
    does not (it computes, or reads memory) and runs it on the event loop, saving the thread
    hop, without a timeout (nothing can stop a `def` running on the loop).

    `display` (a `Display`) says how the arguments read to a person: money with its
    currency, a link for an id, a short title.

    `context` is called with the call's arguments (as the tool is, without `ctx`) when an
    approval is asked, and again right before the approved call runs; it returns the facts
    an approver needs, by name (`{"order_total": "$25.00"}`). If they changed in between,
    the call is asked again instead of run. Past `context_timeout` seconds, or failing, the
    card says "context unavailable" and the ask goes on."""

    def wrap(function: Callable[..., Any]) -> Tool:
        return Tool(
            function,
            name=name,
            description=description,
            effect=effect,
            compensate=compensate,
            requires_approval=requires_approval,
            idempotent=idempotent,
            timeout=timeout,
            idempotency_key=idempotency_key,
            sensitive=sensitive,
            blocking=blocking,
            display=display,
            context=context,
            context_timeout=context_timeout,
        )

    return wrap(fn) if fn is not None else wrap


def _sensitive(name: str, sensitive: Sequence[str], parameters: frozenset[str]) -> tuple[str, ...]:
    if isinstance(sensitive, str):
        raise DefinitionError(f"tool {name!r}: sensitive is a list of argument names")
    unknown = sorted(set(sensitive) - parameters)
    if unknown:
        raise DefinitionError(
            f"tool {name!r}: sensitive names no parameter of the tool: {', '.join(unknown)}"
        )
    return tuple(dict.fromkeys(sensitive))


def _arguments_model(fn: Callable[..., Any], name: str) -> tuple[bool, type[pydantic.BaseModel]]:
    hints = _type_hints(fn, name)
    fields: dict[str, Any] = {}
    takes_ctx = False
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx" or hints.get(param.name) is ToolContext:
            if param.name != "ctx":
                raise DefinitionError(f"tool {name!r}: the ToolContext parameter must be `ctx`")
            takes_ctx = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise DefinitionError(f"tool {name!r}: *args and **kwargs cannot be described")
        if param.name not in hints:
            raise DefinitionError(f"tool {name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    config = pydantic.ConfigDict(extra="forbid")
    return takes_ctx, pydantic.create_model(f"{name}_arguments", __config__=config, **fields)


def _type_hints(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    """The function's resolved type hints, or a DefinitionError naming what cannot resolve."""
    try:
        return typing.get_type_hints(fn)
    except NameError as exc:
        missing = exc.name or str(exc)
        raise DefinitionError(
            f"tool {name!r}: cannot resolve {_hint_naming(fn, missing)}: {exc}. Type hints "
            "are looked up in the module's global namespace (under `from __future__ import "
            "annotations` they are strings), so a type defined inside a function is not "
            f"found: define {missing!r} at module level, or import it there."
        ) from exc
    except Exception as exc:
        raise DefinitionError(f"tool {name!r}: its type hints cannot be resolved: {exc}") from exc


def _hint_naming(fn: Callable[..., Any], missing: str) -> str:
    """`the type hint of parameter 'x' ('Order')`: the first one that mentions the name."""
    for param, hint in getattr(fn, "__annotations__", {}).items():
        text = hint if isinstance(hint, str) else repr(hint)
        if re.search(rf"\b{re.escape(missing)}\b", text):
            where = "the return type" if param == "return" else f"the type hint of {param!r}"
            return f"{where} ({text!r})"
    return f"the type hint {missing!r}"
