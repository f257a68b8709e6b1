"""Who lives in the dev workspace: the people the page lets you be, and its channels."""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

TEAM = "T0SIGNOFF"
APP = "A0SIGNOFF"
APPROVALS = "C0APPROVALS"
ONCALL = "C0ONCALL"
CHANNEL_NAMES = {APPROVALS: "approvals", ONCALL: "oncall"}
REQUESTER, APPROVER, OUTSIDER = "U0RILEY", "U0BOB", "U0EVE"
PEOPLE = [
    {"id": REQUESTER, "name": "riley", "role": "requester"},
    {"id": APPROVER, "name": "bob", "role": "approver"},
    {"id": OUTSIDER, "name": "eve", "role": "outsider"},
]
NAMES = {person["id"]: person["name"] for person in PEOPLE}


def name(user: str) -> str:
    return NAMES.get(user, user.lower())


def check(user: object) -> str:
    """One of the workspace's people; anything else is a 400 that changes nothing."""
    if not isinstance(user, str) or user not in NAMES:
        raise web.HTTPBadRequest(text=f"user: one of {', '.join(NAMES)}")
    return user


def join(users: Iterable[str]) -> None:
    """The people a project's policies name (approvers, on-call, rule writers), each one
    someone the page can play, by their id."""
    for user in users:
        if user not in NAMES:
            PEOPLE.append({"id": user, "name": user.lower(), "role": "named in signoff.toml"})
            NAMES[user] = user.lower()
