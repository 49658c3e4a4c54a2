"""The layers depend one way: engine <- graphql_schema <- rest.

engine/ is the domain and must stay importable without any web server, web framework or
GraphQL library; graphql_schema/ may use Strawberry but no web framework. Two views of
the same rule: every import statement written in the package (static, so a module that is
never imported in a test run is still checked), and every module actually loaded when each
of the package's modules is imported (so a dependency pulled in indirectly is caught).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]

WEB_SERVERS = {"uvicorn", "httptools", "uvloop", "h11", "websockets", "watchfiles", "gunicorn", "hypercorn"}
WEB_FRAMEWORKS = {"fastapi", "starlette"}
GRAPHQL = {"strawberry", "graphql", "graphql_schema"}
FORBIDDEN = {
    "engine": WEB_SERVERS | WEB_FRAMEWORKS | GRAPHQL | {"rest"},
    "graphql_schema": WEB_SERVERS | WEB_FRAMEWORKS | {"rest"},
}

IMPORT_PROBE = textwrap.dedent(
    """\
    import importlib, json, pkgutil, sys
    package = importlib.import_module(sys.argv[1])
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
    print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
    """
)


def written_imports(package: str) -> dict[str, set[str]]:
    """Top-level names of every absolute import in the package's files, by file."""
    imports: dict[str, set[str]] = {}
    for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        imports[str(path.relative_to(PROJECT_ROOT))] = names
    return imports


def loaded_after_importing(package: str) -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, package],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(completed.stdout))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_statement_reaches_a_higher_floor(package: str) -> None:
    imports = written_imports(package)
    assert len(imports) > 5, "the walk found the package's files"
    offending = {path: sorted(names & FORBIDDEN[package]) for path, names in imports.items()}
    assert {path: names for path, names in offending.items() if names} == {}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_every_module_loads_no_higher_floor(package: str) -> None:
    loaded = loaded_after_importing(package)
    assert {"sqlalchemy", package} <= loaded, "the probe imported the package"
    assert loaded & FORBIDDEN[package] == set()


def test_graphql_schema_is_built_on_strawberry() -> None:
    assert "strawberry" in loaded_after_importing("graphql_schema")


def test_the_console_script_lives_on_the_top_floor() -> None:
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"campaign-api": "rest.cli:main"}
