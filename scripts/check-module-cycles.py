#!/usr/bin/env python3
"""Fails when two modules of a crate import each other (`use crate::a` in b and `crate::b` in a,
or the same through `super::`). A module's imports point one way only; a parent that declares
its children is not counted as importing them. Run by `make lint`."""
import itertools
import os
import re
import sys

CRATES = ["crates/answers", "crates/engine", "crates/jobs", "crates/openai", "crates/server", "crates/cli",
          "crates/testkit", "src-tauri"]


def module_name(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


def imports(src, module):
    # Unit tests may reach anywhere in their crate.
    src = re.split(r"#\[cfg\(test\)\]\s*mod \w+", src)[0]
    # Comments and doc links are not imports.
    src = re.sub(r"//.*", "", src)
    found = set(re.findall(r"crate::([a-z_0-9:]+)", src))
    parent = module.rsplit("::", 1)[0] if "::" in module else ""
    for name in re.findall(r"super::([a-z_0-9]+)", src):
        found.add(f"{parent}::{name}" if parent else name)
    return found


def main():
    cycles = []
    for crate in CRATES:
        root = os.path.join(crate, "src")
        deps = {}
        for folder, _, files in os.walk(root):
            for f in files:
                if f.endswith(".rs"):
                    path = os.path.join(folder, f)
                    m = module_name(root, path)
                    with open(path, encoding="utf-8") as fh:
                        deps[m] = imports(fh.read(), m)

        def resolve(path):
            parts = path.split("::")
            for i in range(len(parts), 0, -1):
                if "::".join(parts[:i]) in deps:
                    return "::".join(parts[:i])
            return None

        edges = {m: {resolve(d) for d in ds} - {None, m, ""} for m, ds in deps.items()}
        for a, b in itertools.combinations(sorted(m for m in deps if m), 2):
            if b in edges[a] and a in edges[b]:
                cycles.append(f"{crate}: {a} <-> {b}")
    for c in cycles:
        print(f"modules import each other: {c}")
    print(f"module imports: {len(cycles)} cycles" if cycles else "module imports: one way only")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
