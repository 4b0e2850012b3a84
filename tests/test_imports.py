"""The import graph: `import mechdyn` and loading a model for forward dynamics import only what they use. scipy's
optimizers, pandas and matplotlib cost more to import than mechdyn itself; the commands and functions that use
them import them where they do. Read from a fresh interpreter's sys.modules, not by timing."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy.optimize", "pandas", "matplotlib", "pyarrow", "dask", "sympy")


def imported(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in {h.split(".")[0] for h in HEAVY}
                  and any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("code", [
    "import mechdyn",
    # forward dynamics of a tree and of a loop model, from the cache (the module is built first, in the test's
    # own process, so the interpreter below only loads it)
    "import mechdyn, numpy as np\nd = mechdyn.load('elbow')\nd.forward(d.model.q0(), np.zeros(d.nv), np.zeros(d.nv))",
    "import mechdyn, numpy as np\nd = mechdyn.load('fourbar')\nd.forward(d.model.q0(), np.zeros(d.nv), np.zeros(d.nv))",
    "import mechdyn.cli",
])
def test_no_heavy_import(code):
    import mechdyn

    for name in ("elbow", "fourbar"):
        mechdyn.load(name)  # compiled here if the cache is cold: the interpreter below must only load
    found = heavy(imported(code))
    print(code.splitlines()[-1], "->", found or "none of", HEAVY)
    assert not found


def test_the_check_sees_a_heavy_import():
    """The same check on code that does import them: each is reported (the test above can fail)."""
    found = heavy(imported("import mechdyn\nimport scipy.optimize, pandas, matplotlib"))
    assert {"scipy.optimize", "pandas", "matplotlib"} <= set(found)
