"""Who a signed-in person is: the `[people]` table maps an e-mail address to the person id
policies name (a Slack user id); a person the table does not list is their address, which
a policy may name as an approver (someone outside Slack). The approvals page signs people
in by it and the e-mail channel finds their addresses by it, so it belongs to neither."""

from __future__ import annotations

from collections.abc import Mapping


class People:
    def __init__(self, table: Mapping[str, str] | None = None) -> None:
        self._ids = {address.lower(): person for address, person in (table or {}).items()}
        self._addresses = {person: address for address, person in self._ids.items()}

    def person_of(self, email: str) -> str:
        """The person id an e-mail address signs in as."""
        address = email.strip().lower()
        return self._ids.get(address, address)

    def address_of(self, person: str) -> str | None:
        """Where a person is reached by e-mail: their address (an id that is one, or the
        table's), else None."""
        if is_address(person):
            return person.lower()
        return self._addresses.get(person)


def is_address(person: str) -> bool:
    """Whether a person id is an e-mail address (someone outside Slack)."""
    return "@" in person
