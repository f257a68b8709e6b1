"""Each check of `test_layers` and `test_ports` finds what breaks it in a small synthetic
tree (their `BROKEN` rows): a check that found nothing anywhere would pass on the real tree
too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from . import test_layers
from . import test_ports


@pytest.mark.parametrize(("check", "files", "found"), test_layers.BROKEN + test_ports.BROKEN)
def test_a_check_finds_what_breaks_it(
    tmp_path: Path, check: Callable[[Path], object], files: dict[str, str], found: object
) -> None:
    assert check(test_layers._tree(tmp_path, files)) == found
