#!/usr/bin/env python3
"""Checks that every repository path README.md and docs/*.md name exists.

Usage: check-doc-paths.py [SOURCE_DIR]

A path is a file or folder named in `code` or as a relative Markdown link. Code spans are read when their
first part is a folder the repository has (docs/, scripts/, tests/, ...), a layer of src/ (`core/...`),
a folder of tests/ (`support/...`) or a room of src/gateway/ (`runtime/...`): docs name source files from
any of those roots. Spans with placeholders (<layer>, {name}, *, ...), URLs, absolute paths and what a build
writes (build/, build-asan/, node_modules/) are not paths of the repository and are skipped. A trailing
`:LINE` and a link's #anchor are dropped. Links are resolved from the document's own folder.

Prints each missing path with the document and line that names it, and exits 1 if there is any.
"""

import pathlib
import re
import sys

CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PLACEHOLDER = re.compile(r"[<>{}*$|\\ ]|\.\.\.|\[")
GENERATED = ("build", "build-asan", "build-fuzz", "node_modules", "state")


def roots(source):
    """The folders a code span may start from: the repository's, then src/'s, tests/', src/gateway/'s."""
    out = [source]
    for sub in ("src", "tests", "src/gateway"):
        out.append(source / sub)
    return out


def first_parts(source):
    parts = set()
    for root in roots(source):
        parts.update(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    # Top-level files a doc may name with a folder part ("docs/config.md" is a folder part already).
    return parts - set(GENERATED)


def candidate(text):
    text = text.strip()
    text = re.sub(r":\d+(-\d+)?$", "", text)  # driver.cpp:1040
    if not text or "/" not in text or "://" in text or text.startswith(("/", "~", "-", ".")):
        return None
    if PLACEHOLDER.search(text) or "=" in text or "(" in text or ":" in text:
        return None
    return text


def exists(source, path, base=None):
    bases = ([base] if base else []) + roots(source)
    return any((b / path).exists() for b in bases)


def check(source):
    docs = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
    known = first_parts(source)
    missing = []
    for doc in docs:
        lines = doc.read_text().splitlines()
        fenced = False
        for number, line in enumerate(lines, start=1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in CODE.finditer(line):
                path = candidate(m.group(1))
                if path and path.split("/", 1)[0] in known and not exists(source, path):
                    missing.append((doc, number, path))
            for m in LINK.finditer(line):
                target = m.group(1).split("#", 1)[0]
                if not target or "://" in target or target.startswith("mailto:"):
                    continue
                if not (doc.parent / target).exists():
                    missing.append((doc, number, target))
    return missing


def main():
    source = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    missing = check(source.resolve())
    for doc, number, path in missing:
        print(f"{doc.relative_to(source.resolve())}:{number}: {path} does not exist")
    if missing:
        print(f"{len(missing)} path(s) named in the docs do not exist")
        return 1
    print("every path the docs name exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
