"""The layers of issue 17, enforced: lint-imports keeps the contracts in pyproject.toml ([tool.importlinter]),
and a planted import into a copy of the tree breaks the contract it should."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mechdyn", "crosscheck", "regression")  # the contracts' root packages


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """lint-imports on the tree at `root` with its pyproject.toml, that tree first on the path, no cache written."""
    script = Path(sys.executable).parent / "lint-imports"
    env = os.environ | {"PYTHONPATH": str(root), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([str(script) if script.exists() else "lint-imports", "--no-cache", "--no-logo",
                           str(root / "pyproject.toml")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_tree_keeps_every_layer_contract():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 6 kept, 0 broken." in r.stdout, r.stdout


@pytest.mark.parametrize("file, planted, contract, edge", [
    ("mechdyn/core/model.py", "import crosscheck", "mechdyn imports neither crosscheck nor regression",
     "mechdyn.core.model -> crosscheck"),
    ("mechdyn/dynamics.py", "from regression import history", "mechdyn imports neither crosscheck nor regression",
     "mechdyn.dynamics -> regression.history"),
    ("crosscheck/checks.py", "import regression.conftest", "crosscheck imports nothing of regression",
     "crosscheck.checks -> regression.conftest"),
    ("crosscheck/dense/crba.py", "from mechdyn.codegen import expr",
     "crosscheck.dense imports nothing of mechdyn.codegen", "crosscheck.dense.crba -> mechdyn.codegen.expr"),
    ("mechdyn/codegen/expr.py", "from crosscheck.dense import forward_crba",
     "mechdyn.codegen imports nothing of crosscheck.dense", "mechdyn.codegen.expr -> crosscheck.dense"),
    ("mechdyn/core/spatial.py", "from mechdyn.dynamics import Dynamics", "mechdyn.core imports none of its consumers",
     "mechdyn.core.spatial -> mechdyn.dynamics"),
    ("mechdyn/core/loops.py", "from mechdyn.linear import modes", "mechdyn.core imports none of its consumers",
     "mechdyn.core.loops -> mechdyn.linear"),
    ("crosscheck/contact.py", "from mechdyn.contact.params import band_params",
     "the NumPy contact route takes nothing of the product's contact code but its law constants",
     "crosscheck.contact -> mechdyn.contact.params"),
])
def test_a_planted_import_breaks_its_contract(tmp_path, file, planted, contract, edge):
    """A copy of the tree with one import added: lint-imports fails, naming the contract and the import. The first
    case is issue 17's: `import crosscheck` planted inside mechdyn/."""
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.npz"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert lint_imports(tmp_path).returncode == 0, "the unplanted copy must pass, or the failure proves nothing"
    target = tmp_path / file
    target.write_text(target.read_text() + f"\n{planted}  # planted by tests/test_layers.py\n")
    r = lint_imports(tmp_path)
    assert r.returncode != 0, r.stdout
    assert f"{contract} BROKEN" in r.stdout and edge in r.stdout, r.stdout  # (others may break too, indirectly)
