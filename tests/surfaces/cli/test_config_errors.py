"""A configuration mistake, as a real user makes it, through every command that starts
something (`signoff dev`, `signoff serve`, `signoff policy check`, `signoff runs start`), each
a real process: one line naming the file, the line and the fix it is near ("did you mean"),
the same line and the same exit code (2) from each, and nothing created. A policy named for
a tool within a typo of a loaded tool's stops them all; one that says `external = true` (its
tool is asked for only over the HTTP API) does not, and one near no loaded tool is a
warning."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from support.helpers import SIGNOFF
from support.helpers import clean_env

AGENT = """
from runtime import Agent, ScriptedModel, tool, tool_call


@tool(description="Delete a customer.", effect="irreversible")
async def delete_customer(customer_id: str) -> dict:
    return {"deleted": customer_id}


@tool(description="Look a customer up.", effect="read")
async def find_customer(email: str) -> dict:
    return {"customer_id": "c1"}


agent = Agent(
    "crm-agent",
    model=ScriptedModel([tool_call("delete_customer", {"customer_id": "c1"}), "Done."]),
    tools=[delete_customer, find_customer],
)
"""

HEAD = """\
agents = ["crm:agent"]

[policies.default]
approvers = ["U0BOB"]
"""

COMMANDS = {
    "dev": ["dev", "--port", "0"],
    "serve": ["serve"],
    "policy check": ["policy", "check", "delete_customer", '{"customer_id": "c1"}'],
    "runs start": ["runs", "start", "crm-agent", "Delete customer c1"],
}


def _project(folder: Path, config: str) -> None:
    (folder / "crm.py").write_text(AGENT, "utf-8")
    (folder / "signoff.toml").write_text(textwrap.dedent(config), "utf-8")


def _env() -> dict[str, str]:
    # serve without Slack, so that nothing but the file can stop it; port 0: any free one
    return clean_env("SIGNOFF_", "SLACK_") | {"SIGNOFF_API_ONLY": "1", "SIGNOFF_PORT": "0"}


def _each(folder: Path, commands: list[str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every command at once (each a real `signoff` process), to its end."""
    started = {
        name: subprocess.Popen(
            [SIGNOFF, *COMMANDS[name]],
            cwd=folder,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in commands
    }
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    for name, process in started.items():
        try:
            out, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return done


def _refused_alike(folder: Path, commands: list[str]) -> str:
    """The one line every command refuses with (exit 2, nothing on stdout but dev's)."""
    done = _each(folder, commands)
    lines = {name: d.stderr for name, d in done.items()}
    assert {d.returncode for d in done.values()} == {2}, lines
    assert len(set(lines.values())) == 1, lines
    [line] = set(lines.values())
    assert line.count("\n") == 1, line
    assert not [p.name for p in folder.iterdir() if p.suffix == ".db" or "signoff-dev" in p.name]
    return line.removeprefix("error: ").rstrip("\n")


ALL = list(COMMANDS)


def test_a_policy_for_a_tool_within_a_typo_of_a_loaded_one_stops_every_command(
    tmp_path: Path,
) -> None:
    _project(tmp_path, HEAD + "\n[policies.tools.delete_custmer]\nrequired_approvals = 2\n")

    line = _refused_alike(tmp_path, ALL)

    assert line == (
        "signoff.toml:6: policies.tools.delete_custmer: no loaded agent has a tool "
        "'delete_custmer'; did you mean `delete_customer`? (a policy for a tool asked for only "
        "over the HTTP API says external = true)"
    )


def test_a_policy_marked_external_is_meant_and_one_near_no_tool_is_a_warning(
    tmp_path: Path,
) -> None:
    external = "\n[policies.tools.delete_customers]\nexternal = true\nrequired_approvals = 2\n"
    elsewhere = "\n[policies.tools.wire_transfer]\nrequired_approvals = 3\n"
    _project(tmp_path, HEAD + external + elsewhere)

    [done] = _each(tmp_path, ["policy check"]).values()

    assert done.returncode == 0, done.stderr
    assert "would: ask U0BOB for 1 approval(s)" in done.stdout
    assert done.stderr == (
        "warning: signoff.toml:10: policies.tools.wire_transfer: no loaded agent has a tool "
        "'wire_transfer'; if only the HTTP API asks for it, say external = true (else this "
        "policy guards nothing)\n"
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(
            'agents = ["crm:agent"]\n\n[policy.default]\napprovers = ["U0BOB"]\n',
            "signoff.toml:3: policy: unknown setting; did you mean `policies`?",
            id="policy",
        ),
        pytest.param(
            HEAD + '\n[policies.tools.delete_customer]\naprovers = ["U0ANN"]\n',
            "signoff.toml:7: policies.tools.delete_customer.aprovers: unknown setting; did you "
            "mean `approvers`?",
            id="aprovers",
        ),
        pytest.param(
            HEAD.replace("crm:agent", "crm:agnet"),
            "signoff.toml:1: agents: 'crm:agnet': crm has no attribute agnet; did you mean "
            "`agent`?",
            id="agnet",
        ),
    ],
)
def test_a_mistyped_setting_names_its_line_and_what_it_is_near_in_every_command(
    tmp_path: Path, config: str, expected: str
) -> None:
    _project(tmp_path, config)

    assert _refused_alike(tmp_path, ALL) == expected


def test_dev_refuses_a_channel_given_by_name_at_its_line_as_serve_does(tmp_path: Path) -> None:
    _project(tmp_path, HEAD + '\n[policies.tools.delete_customer]\nchannel = "#customers"\n')

    line = _refused_alike(tmp_path, ["dev", "policy check"])

    assert line == (
        "signoff.toml:7: policies.tools.delete_customer.channel '#customers' is a channel "
        "name; Signoff needs the channel's id (C…, in Slack: the channel's details, at the "
        "bottom), as `signoff serve` does"
    )


def test_a_cool_off_on_a_tool_nothing_can_undo_stops_every_command(tmp_path: Path) -> None:
    _project(tmp_path, HEAD + '\n[policies.tools.delete_customer]\ncool_off = "5m"\n')

    line = _refused_alike(tmp_path, ALL)

    assert line == (
        "signoff.toml:7: policies.tools.delete_customer.cool_off: delete_customer has no "
        "compensator (a reversible tool names one with compensate=), so nothing could undo it"
    )


@pytest.mark.parametrize("duration", ['"5 minutes"', '"-5m"'])
def test_a_bad_cool_off_or_undo_window_names_its_line(tmp_path: Path, duration: str) -> None:
    _project(tmp_path, HEAD + f"undo_for = {duration}\n")

    line = _refused_alike(tmp_path, ["serve", "policy check"])

    assert line.startswith("signoff.toml:5: policies.default.undo_for: "), line
