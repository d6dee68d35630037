"""The import graph of a Python package, read from its source (nothing is imported), and its cycles.

A module is named as check_source.py's LAYERS name it: errors.py is "errors", export/__init__.py is
"export", the package's own __init__.py is "__init__". Every import that runs counts, relative or
absolute, at the top of a file or inside a function; `from x import y` is an import of the submodule
x.y where there is one, else of x. Imports under `if TYPE_CHECKING:` never run and do not count.
"""
import ast

ROOT_MODULE = "__init__"


def package_modules(package_dir):
    """Each module's name -> its file."""
    modules = {}
    for p in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        parts = list(p.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts) or ROOT_MODULE] = p
    return modules


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
           (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree):
    """(line, dotted name, names imported from it or None, relative level) of every import that runs."""
    found = []

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:  # the body is for type checkers only
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, None, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "", [a.name for a in node.names], node.level))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(name, modules):
    """The module a dotted name within the package (without the package's name; "" is the package)
    stands for: itself, else its longest prefix that is a module (a name imported from a module)."""
    parts = name.split(".") if name else []
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return ROOT_MODULE if ROOT_MODULE in modules else None


def import_graph(package_dir):
    """(modules, graph): each module's file, and module -> {module of the package it imports: the line
    of its first import of it}."""
    package = package_dir.name
    modules = package_modules(package_dir)
    graph = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        # The package a relative import starts from: a module's own package, or a package's __init__ itself.
        here = [] if module == ROOT_MODULE else module.split(".")
        if path.name != "__init__.py":
            here = here[:-1]
        for line, name, names, level in _imports(ast.parse(path.read_text(), str(path))):
            if level:
                if level - 1 > len(here):
                    continue  # above the package: not one of its modules
                base = ".".join(here[:len(here) - (level - 1)] + ([name] if name else []))
            elif name == package or name.startswith(package + "."):
                base = name[len(package) + 1:]
            else:
                continue
            for n in names or [""]:
                target = _resolve(".".join(filter(None, [base, n])), modules)
                if target is not None and target != module:
                    edges.setdefault(target, line)
    return modules, graph


def _components(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while v not in component:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return components


def _shortest_cycle(graph, component, start):
    """A shortest path start -> ... -> start inside the component (breadth first)."""
    paths, frontier = {start: [start]}, [start]
    while True:
        for v in frontier:
            if start in graph[v]:
                return paths[v] + [start]
        next_frontier = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w in component and w not in paths:
                    paths[w] = paths[v] + [w]
                    next_frontier.append(w)
        frontier = next_frontier


def import_cycles(graph):
    """A shortest cycle through each module that is on one, each cycle once, as a path a -> ... -> a
    starting at its smallest module name."""
    cycles = set()
    for component in _components(graph):
        for start in component:
            cycle = _shortest_cycle(graph, component, start)[:-1]
            i = cycle.index(min(cycle))
            cycles.add(tuple(cycle[i:] + cycle[:i] + [cycle[i]]))
    return sorted(cycles)
