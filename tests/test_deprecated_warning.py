"""The deprecation warning of a moved module points at the import that loaded it (rankbridge._deprecated)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rankbridge._deprecated import warn_moved

IMPORTER = (
    "import warnings\n"
    "warnings.simplefilter('always')\n"
    "with warnings.catch_warnings(record=True) as caught:\n"
    "    import rankbridge.adapters.callable\n"  # line 4: the package's warning and the module's
    "    import rankbridge.compare\n"  # line 5
    "    import rankbridge.callbacks\n"  # line 6
    "    import rankbridge.callbacks\n"  # cached: no second warning
    "for w in caught:\n"
    "    print(w.category.__name__, w.filename, w.lineno, str(w.message).split(' ')[0])\n"
)


def test_the_warning_points_at_the_importing_line_once_per_module() -> None:
    out = subprocess.run([sys.executable, "-c", IMPORTER], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "DeprecationWarning <string> 4 rankbridge.adapters",
        "DeprecationWarning <string> 4 rankbridge.adapters.callable",
        "DeprecationWarning <string> 5 rankbridge.compare",
        "DeprecationWarning <string> 6 rankbridge.callbacks",
    ]


@pytest.mark.parametrize(
    ("also_called", "message"),
    [
        (False, "rankbridge.old is deprecated: import from rankbridge.new instead (same names)"),
        (
            True,
            "rankbridge.old is deprecated as a module: import from rankbridge.new instead (same names), "
            "or call rankbridge.old(...)",
        ),
    ],
)
def test_the_message_names_both_paths(also_called: bool, message: str) -> None:
    def alias_module_body() -> None:  # stands for the alias module's top level
        warn_moved("rankbridge.old", "rankbridge.new", also_called=also_called)

    with pytest.warns(DeprecationWarning) as caught:
        alias_module_body()  # the "import" line: the warning points here
    assert [str(w.message) for w in caught] == [message]
    source = Path(__file__).read_text().splitlines()
    assert caught[0].filename == __file__
    assert source[caught[0].lineno - 1].strip().startswith("alias_module_body()  # the")
