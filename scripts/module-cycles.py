#!/usr/bin/env python3
"""Print import cycles between the modules of each crate (`use crate::a::b`, `super::x`,
`crate::a::f(...)` paths in every module file); exit 1 if any. A module importing its own
child or parent counts too: "No two modules of a crate import each other"."""
import re
import sys
from pathlib import Path

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\buse\s+(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\}", re.S)


def module_of(src: Path, root: Path) -> tuple:
    parts = list(src.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def resolve(module: tuple, is_dir_module: bool, kind: str, names: list, known: set) -> tuple:
    base = () if kind == "crate" else module[: len(module) - (0 if is_dir_module else 1)]
    path = list(base)
    for name in names:
        if name == "super":
            path = path[:-1]
            continue
        if tuple(path + [name]) not in known:
            break
        path.append(name)
    return tuple(path)


def strip_comments_and_tests(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+tests\s*\{", text)
    return text[: cut.start()] if cut else text


def edges(root: Path) -> dict:
    files = {module_of(f, root): f for f in root.rglob("*.rs")}
    known = set(files)
    graph = {m: set() for m in files}
    for module, file in files.items():
        is_dir_module = file.stem in ("mod", "lib", "main")
        text = strip_comments_and_tests(file.read_text())
        paths = [(k, p) for k, p in PATH.findall(text)]
        for kind, prefix, inner in GROUP.findall(text):
            for item in re.split(r",", inner):
                item = item.strip().split(" as ")[0].strip()
                if item and item not in ("self", "*"):
                    paths.append((kind, prefix + "::" + item.split("::{")[0]))
        for kind, rest in paths:
            names = [n for n in rest.split("::") if n]
            target = resolve(module, is_dir_module, kind, names, known)
            if target != module and target in known:
                graph[module].add(target)
    return graph


def cycles(graph: dict) -> list:
    found = []
    for a in graph:
        for b in graph[a]:
            if a < b and a in graph.get(b, ()):
                found.append((a, b))
    return found


def main() -> int:
    bad = 0
    for lib in sorted(Path("crates").glob("*/src")):
        crate = lib.parent.name
        for a, b in cycles(edges(lib)):
            print(f"{crate}: {'::'.join(a) or 'lib'} <-> {'::'.join(b) or 'lib'}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
