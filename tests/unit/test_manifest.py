"""manifest.yml is a valid Slack app manifest (schema version 1, checked offline)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).parent.parent.parent
SCHEMA = Path(__file__).parent.parent / "fixtures" / "slack" / "manifest.schema.json"


def test_manifest_validates_against_slacks_schema() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text("utf-8"))
    schema = json.loads(SCHEMA.read_text("utf-8"))

    jsonschema.validate(manifest, schema)
    assert manifest["display_information"]["name"] == "Signoff"


def test_an_invalid_manifest_is_refused() -> None:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    broken = {"display_information": {"name": ""}, "settings": {"not_a_setting": True}}

    errors = list(jsonschema.Draft7Validator(schema).iter_errors(broken))

    assert errors
