"""The layers stack one way, with no cycles and no imports hidden inside functions.

claimgraph_site → faces (console, api) and the demo loader (demo) → notifications → domain
(admissions above memories, accounts beside them) → memories/core. These
tests read every application module's imports with ``ast`` (every import
statement, including those under ``if TYPE_CHECKING:``, which name a
dependency just the same) and hold them to that picture.
"""

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "memories",
    "admissions",
    "accounts",
    "notifications",
    "api",
    "console",
    "demo",
    "claimgraph_site",
)

# Imports inside a function that are genuinely lazy, each with why.
LAZY_IMPORTS: dict[tuple[str, str], str] = {}

# Known edges that break the picture, each with why it is still there. An
# entry that no longer matches anything fails the tests, so the list shrinks.
ALLOWED_EDGES: dict[tuple[str, str], str] = {}

# What each layer must not import: a module of the key's package (by prefix)
# may import nothing whose name starts with one of the values.
FORBIDDEN = {
    "memories": (
        "admissions",
        "accounts",
        "notifications",
        "console",
        "api",
        "demo",
        "claimgraph_site",
    ),
    "admissions": ("accounts", "notifications", "console", "api", "demo", "claimgraph_site"),
    "accounts": ("admissions", "notifications", "console", "api", "demo", "claimgraph_site"),
    # Above the domain, below the faces: the faces show and set what it sends.
    "notifications": ("console", "api", "demo", "claimgraph_site"),
    "console": ("api", "demo", "claimgraph_site"),
    "api": ("console", "demo", "claimgraph_site"),
    # The demo loader writes through both domain apps, as the faces do.
    "demo": ("console", "api", "claimgraph_site"),
}

# Inside memories, the subpackages stack one way too: store/ at the bottom (the
# models, the one apply, what every writer shares), reads/ and write/ above
# it, maintenance/ and portability/ above those. A module of the key's
# subpackage may import nothing of the values'.
SUBPACKAGES_FORBIDDEN = {
    "memories.store": (
        "memories.write",
        "memories.maintenance",
        "memories.reads",
        "memories.portability",
    ),
    "memories.reads": ("memories.write", "memories.maintenance"),
    "memories.write": ("memories.maintenance",),
}

# A folder of application code past this many modules is asking to be split by concern.
MOST_MODULES_IN_A_FOLDER = 15


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[ast.stmt, str]]:
    """Each import statement of the module, with every dotted name it imports."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            for alias in node.names:
                yield node, f"{module}.{alias.name}"


def _application_module(dotted: str) -> str | None:
    """The application module that importing ``dotted`` loads, if it is one of ours."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        targets = {_application_module(dotted) for _, dotted in _imports(name, path)}
        graph[name] = {target for target in targets if target and target != name}
    return graph


GRAPH = _graph()


def _edges() -> Iterator[tuple[str, str]]:
    for source, targets in GRAPH.items():
        for target in targets:
            if (source, target) not in ALLOWED_EDGES:
                yield source, target


def _is_migration(name: str) -> bool:
    return ".migrations." in f"{name}."


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_application_module_imports(name):
    importlib.import_module(name)


def test_no_import_inside_a_function():
    hidden = set()
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.module:
                    imported = [node.module]
                elif isinstance(node, ast.Import | ast.ImportFrom):
                    imported = [alias.name for alias in node.names]
                else:
                    continue
                hidden |= {
                    f"{name}:{node.lineno} imports {module}"
                    for module in imported
                    if (name, module) not in LAZY_IMPORTS
                }
    assert hidden == set()


def test_the_pure_core_imports_no_django_and_nothing_of_the_project_above_it():
    outside = []
    for name, path in MODULES.items():
        if not name.startswith("memories.core"):
            continue
        for node, dotted in _imports(name, path):
            top = dotted.split(".")[0]
            ours = _application_module(dotted)
            if top == "django" or (ours and not ours.startswith("memories.core")):
                outside.append(f"{name}:{node.lineno} imports {dotted}")
    assert outside == []


def test_lower_layers_import_nothing_above_them():
    upward = [
        f"{source} imports {target}"
        for source, target in _edges()
        for package, above in FORBIDDEN.items()
        if source.split(".")[0] == package
        and target.startswith(above)
        and not (_is_migration(source) and target.startswith("claimgraph_site.lib."))
    ]
    assert upward == []


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_the_memories_subpackages_import_nothing_above_them():
    upward = [
        f"{source} imports {target}"
        for source, target in _edges()
        for package, above in SUBPACKAGES_FORBIDDEN.items()
        if _in(source, package) and any(_in(target, other) for other in above)
    ]
    assert upward == []


def test_no_folder_of_application_code_holds_more_than_fifteen_modules():
    crowded = {}
    for package in PACKAGES:
        for folder in [ROOT / package, *(ROOT / package).rglob("*/")]:
            if "migrations" in folder.parts or "__pycache__" in folder.parts:
                continue
            modules = [path for path in folder.glob("*.py") if path.name != "__init__.py"]
            if len(modules) > MOST_MODULES_IN_A_FOLDER:
                crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}


def test_memories_top_level_holds_only_its_subpackages_and_the_app_files():
    modules = {path.name for path in (ROOT / "memories").glob("*.py")}
    assert modules == {"__init__.py", "apps.py", "admin.py"}


def test_the_site_is_imported_by_itself_and_its_lib_only_by_settings_and_migrations():
    wrong = []
    for source, target in _edges():
        if not target.startswith("claimgraph_site"):
            continue
        if target.startswith("claimgraph_site.lib"):
            allowed = (
                source == "claimgraph_site.settings"
                or source.startswith("claimgraph_site.lib")
                or _is_migration(source)
            )
        else:
            allowed = source.startswith("claimgraph_site")
        if not allowed:
            wrong.append(f"{source} imports {target}")
    assert wrong == []


def test_application_modules_import_each_other_without_a_cycle():
    graph = {source: set() for source in GRAPH}
    for source, target in _edges():
        graph[source].add(target)
    # Depth-first search; a module met again while still on the path closes a cycle.
    state: dict[str, str] = {}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                cycles.append(" → ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_every_allowed_exception_still_exists():
    """An exception that was fixed must leave the lists, so they only ever shrink."""
    imports = {
        (name, node.module if isinstance(node, ast.ImportFrom) and node.module else dotted)
        for name, path in MODULES.items()
        for node, dotted in _imports(name, path)
    }
    assert {key for key in LAZY_IMPORTS if key not in imports} == set()
    edges = {(source, target) for source, targets in GRAPH.items() for target in targets}
    assert {edge for edge in ALLOWED_EDGES if edge not in edges} == set()
