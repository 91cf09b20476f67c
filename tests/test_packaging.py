"""Install story: pyproject.toml is the one list of dependencies, environment.yml agrees with it, the README
gives exactly two set-up commands, and CI runs the README's test command."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up (two commands)", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_environment_yml_installs_this_project_with_pip_and_nothing_else():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert env["channels"][0] == "conda-forge"
    deps = env["dependencies"]
    conda = [d for d in deps if isinstance(d, str)]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert "pip" in conda and any(d.startswith("python=") for d in conda)
    assert set(conda) - {"pip"} == {d for d in conda if d.startswith("python=")}, \
        "conda lists only python and pip: the dependencies come from pyproject.toml"
    assert pip == ["--editable ."]
    # the pinned Python satisfies the project's requires-python
    version = next(d for d in conda if d.startswith("python=")).split("=")[1]
    low = re.search(r">=\s*(\d+\.\d+)", pyproject()["project"]["requires-python"]).group(1)
    assert tuple(map(int, version.split("."))) >= tuple(map(int, low.split(".")))


def test_dependencies_named_by_the_design_are_declared():
    proj = pyproject()["project"]
    names = {re.split(r"[<>=!;\[ ]", d)[0].lower() for d in proj["dependencies"]}
    assert {"jupyterlab", "jax", "nbgrader", "matplotlib", "numba", "numba-cuda", "jupytext"} <= names
    extras = proj["optional-dependencies"]
    test_names = {re.split(r"[<>=!;\[ ]", d)[0].lower() for d in extras["test"]}
    assert {"pytest", "nbval"} <= test_names
    assert any(d.startswith("cupy-cuda12x") for d in extras["gpu"]), "CuPy is the GPU extra"
    assert all("platform_system" in d for d in extras["toolchain"]), "NVIDIA toolchain wheels are Linux/Windows only"


def test_readme_has_two_setup_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2, f"the README's set-up section has exactly two commands, found {commands}"
    open_cmd, test_cmd = commands
    assert "gpucourse lab" in open_cmd and "pip install" in open_cmd
    assert "pytest" in test_cmd and '".[test]"' in test_cmd
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci.splitlines(), ".ci/run must call the README's test command verbatim"


def test_readme_lists_every_course_notebook():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for nb in sorted((ROOT / "course").glob("*.ipynb")):
        assert f"course/{nb.name}" in text, f"README's section table misses {nb.name}"


def test_launcher_sets_nbgrader_config_and_path(monkeypatch):
    from gpucourse.__main__ import course_root, jupyter_env

    root = course_root()
    assert root == ROOT
    env = jupyter_env(root)
    assert env["JUPYTER_CONFIG_PATH"].split(":")[0] == str(ROOT / "grader")
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def test_nbgrader_config_points_at_solutions_and_labs():
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "grader")).load_config()
    assert cfg.CourseDirectory.root == str(ROOT)
    assert cfg.CourseDirectory.source_directory == "solutions"
    assert cfg.CourseDirectory.release_directory == "labs"
    assert "*.py" in cfg.CourseDirectory.ignore, "py:percent twins (with solutions) never reach labs/"
    assert "nbgrader.preprocessors.ClearHiddenTests" in cfg.GenerateFeedback.preprocessors


def test_every_package_folder_is_installed():
    """setuptools installs only the packages pyproject.toml lists: a new subpackage left out works in an editable
    checkout and is missing from the wheel (Colab, the student edition, the hub's image)."""
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("gpucourse", "grader")
             for p in (ROOT / top).rglob("__init__.py") if "__pycache__" not in p.parts}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
