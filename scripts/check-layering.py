#!/usr/bin/env python3
"""Checks the layering of src/ against the layers CMakeLists.txt declares (docs/architecture.md, "Layers").

Usage: check-layering.py LAYERS_FILE [SOURCE_DIR]

LAYERS_FILE is written by CMake at configure time (cmake/warden.cmake, warden_write_layer_graph): one line
per layer, "layer NAME PURE|IO DEP...", one per layer whose tests link more, "test_deps NAME DEP...", and
one per folder ("room") of a layer split into rooms, lowest first, "room LAYER ROOM DEP..." ("." is the
layer's top level).
The declarations in CMakeLists.txt stay the one source of truth; this script only reads what CMake saw.

It fails (exit 1) on:
  - an `#include "X/..."` in src/NAME/ where X is another folder of src/ that NAME does not declare as a
    direct dependency: a layer names every layer it includes, so the graph is exact;
  - a declared dependency that src/NAME/ never includes (an edge that is not used);
  - an `#include "X/..."` in tests/NAME/ where X is neither NAME, `support`, nor a layer that NAME or its
    test dependencies reach (directly or not: the test binary links all of them);
  - a declared test dependency that tests/NAME/ never includes, or that NAME reaches already;
  - in a pure layer's src/ (comments and string literals aside): a header or a name of threads, locks,
    atomics, sockets, Asio/Beast, the databases, or a read of a clock or of the random device
    (PURE_HEADERS and PURE_NAMES below);
  - in a layer split into rooms: a file in a folder that is not a declared room, an `#include "LAYER/..."`
    of a room the including room does not declare, a declared room edge that is never included, and a
    room that declares a room declared after it (an arrow running back up);
  - in every folder of every layer (its top level, and each folder below it: a room, or a folder within
    one): files (a header and its sources as one) or folders that include each other, directly or through
    others (an arrow running back up at that scale). At the top level of a layer split into rooms only its
    files count (the rooms' order is checked as above).
It prints the include graph between the folders of src/ that it found, ready for docs/architecture.md.
"""

import pathlib
import re
import sys

SOURCE_SUFFIXES = {".cpp", ".hpp", ".h"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)

# Headers a pure layer may not include: threads and synchronisation, signals and POSIX I/O, sockets,
# Asio and Beast, the databases and logging (they write to the world).
PURE_HEADERS = re.compile(
    r"^(thread|mutex|shared_mutex|condition_variable|future|atomic|stop_token|semaphore|latch|barrier"
    r"|csignal|signal\.h|pthread\.h|unistd\.h|poll\.h|netdb\.h|sys/.*|netinet/.*|arpa/.*"
    r"|boost/asio.*|boost/beast.*|boost/thread.*|boost/process.*|hiredis/.*|sqlite3\.h|spdlog/.*)$"
)
# Names a pure layer may not use: a clock read (a time_point type as a parameter is fine: time is passed
# in), sleeping, threads, atomics, the random device, sockets.
PURE_NAMES = re.compile(
    r"\b(?:system_clock|steady_clock|high_resolution_clock|utc_clock|tai_clock|gps_clock|file_clock)"
    r"\s*::\s*now\b"
    r"|\b(?:clock_gettime|gettimeofday|timespec_get)\s*\("
    r"|\bstd::(?:time|clock)\s*\(|(?<![\w.>:])time\s*\(\s*(?:nullptr|NULL|0)\s*\)"
    r"|\bstd::(?:this_thread|thread|jthread|atomic\w*|mutex|random_device)\b"
    r"|\b(?:socket|connect|accept|sleep|usleep|nanosleep)\s*\("
)
# Comments, then string and character literals, blanked so they neither match nor hide a match.
COMMENT_OR_LITERAL = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"(?P<d>[^(\s]*)\(.*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
    re.DOTALL,
)


def read_layers(path):
    layers, kinds, test_deps, rooms = {}, {}, {}, {}
    for line in pathlib.Path(path).read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "layer":
            layers[words[1]] = set(words[3:])
            kinds[words[1]] = words[2]
        elif words[0] == "test_deps":
            test_deps[words[1]] = set(words[2:])
        elif words[0] == "room":
            rooms.setdefault(words[1], {})[words[2]] = set(words[3:])  # dicts keep the declared order
    return layers, kinds, test_deps, rooms


def sources(folder):
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def folder_includes(files, folders):
    """(file, line, folder, target) for every quoted include of `folder/...` where folder is in `folders`."""
    found = []
    for f in files:
        text = f.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            if m.group(1) != '"' or "/" not in m.group(2):
                continue
            top = m.group(2).split("/", 1)[0]
            if top in folders:
                found.append((f, line_of(text, m.start()), top, m.group(2)))
    return found


def reach(layers, start):
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(layers.get(name, ()))
    return seen


def blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))


def pure_violations(name, files, root):
    out = []
    for f in files:
        raw = f.read_text(errors="replace")
        for m in INCLUDE.finditer(raw):
            if PURE_HEADERS.match(m.group(2)):
                out.append(f"{f.relative_to(root)}:{line_of(raw, m.start())}: pure layer {name} includes "
                           f"<{m.group(2)}> (threads, sockets, I/O libraries)")
        code = COMMENT_OR_LITERAL.sub(blank, INCLUDE.sub(blank, raw))
        for m in PURE_NAMES.finditer(code):
            out.append(f"{f.relative_to(root)}:{line_of(code, m.start())}: pure layer {name} uses "
                       f"'{m.group(0).strip()}' (a clock, thread, atomic, socket or device: pass it in)")
    return out


def scan_includes(files, folders, allowed, root, complaint):
    """The folders of `folders` that `files` include, and an error for each include outside `allowed`."""
    used, errors = set(), []
    for f, line, top, target in folder_includes(files, folders):
        used.add(top)
        if top not in allowed:
            errors.append(f"{f.relative_to(root)}:{line}: {complaint(target, top)}")
    return used, errors


def check_sources(layers, kinds, root, graph):
    errors = []
    for name, deps in layers.items():
        files = sources(root / "src" / name)
        used, found = scan_includes(
            files, layers.keys(), deps | {name}, root,
            lambda target, top: f"{name} includes {target}, but warden_{name} does not declare warden_{top} "
                                f"(CMakeLists.txt)")
        used.discard(name)
        errors.extend(found)
        for dep in sorted(deps - used):
            errors.append(f"CMakeLists.txt: warden_{name} declares warden_{dep}, but src/{name}/ never "
                          f"includes {dep}/ (drop the edge)")
        graph[name] = used
        if kinds[name] == "PURE":
            errors.extend(pure_violations(name, files, root))
    return errors


def check_tests(layers, test_deps, root):
    errors = []
    for name in layers:
        extra = test_deps.get(name, set())
        used, found = scan_includes(
            sources(root / "tests" / name), set(layers) | {"support"},
            reach(layers, {name} | extra) | {"support"}, root,
            lambda target, top: f"tests of {name} include {target}, but warden_{name}_tests links neither "
                                f"warden_{top} nor a layer that reaches it")
        errors.extend(found)
        for dep in sorted(extra - used):
            errors.append(f"CMakeLists.txt: WARDEN_TEST_DEPS_{name} names warden_{dep}, but tests/{name}/ "
                          f"never includes {dep}/ (drop it)")
        for dep in sorted(extra & reach(layers, {name})):
            errors.append(f"CMakeLists.txt: WARDEN_TEST_DEPS_{name} names warden_{dep}, which warden_{name} "
                          f"links already (drop it)")
    return errors


def room_of(layer_dir, path):
    """The room of a file under src/LAYER/ (its first folder, "." at the top level)."""
    parts = path.relative_to(layer_dir).parts
    return parts[0] if len(parts) > 1 else "."


def check_rooms(layer, rooms, root, room_graph):
    """The includes between the rooms of src/LAYER/ against their declared edges and order."""
    errors, order = [], list(rooms)
    for name, deps in rooms.items():
        for dep in sorted(deps):
            if dep not in rooms or order.index(dep) >= order.index(name):
                errors.append(f"CMakeLists.txt: room {layer}/{name} declares {dep}, which is not a room declared "
                              f"before it (an arrow running back up)")
    layer_dir = root / "src" / layer
    used = {name: set() for name in rooms}
    include = re.compile(rf'^[ \t]*#[ \t]*include\s*"{re.escape(layer)}/([^"]+)"', re.MULTILINE)
    for f in sources(layer_dir):
        room = room_of(layer_dir, f)
        if room not in rooms:
            errors.append(f"{f.relative_to(root)}: src/{layer}/{room}/ is not a room of {layer} (CMakeLists.txt, "
                          f"warden_rooms)")
            continue
        text = f.read_text(errors="replace")
        for m in include.finditer(text):
            target = m.group(1).split("/")
            to = target[0] if len(target) > 1 else "."
            if to == room:
                continue
            used[room].add(to)
            if to not in rooms[room]:
                errors.append(f"{f.relative_to(root)}:{line_of(text, m.start())}: room {layer}/{room} includes "
                              f"{layer}/{m.group(1)}, but does not declare room {to} (CMakeLists.txt, warden_rooms)")
    for name, deps in rooms.items():
        for dep in sorted(deps - used[name]):
            errors.append(f"CMakeLists.txt: room {layer}/{name} declares {dep}, but never includes it (drop the "
                          f"edge)")
    room_graph[layer] = (order, used)
    return errors


def unit_of(folder, path):
    """What `path` is at the scale of `folder`: a sub-folder ("name/"), or a file's stem (a header and its
    sources are one unit)."""
    parts = path.relative_to(folder).parts
    if len(parts) > 1:
        return parts[0] + "/"
    return path.name.split(".", 1)[0]


def cycles(edges):
    """The strongly connected components of more than one node of a graph {node: {node: example}}."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def check_folders(layer, rooms, root):
    """In every folder of src/LAYER/ (its top level and each folder below it), the includes between what it
    holds (its files, a header and its sources as one, and its folders) run one way: a cycle is an arrow
    back up at that scale (two files, or two folders, that include each other, directly or through others).
    At the top level of a layer split into rooms (`rooms` names more than ".") only its files count: the
    rooms' order is check_rooms'."""
    errors, src, layer_dir = [], root / "src", root / "src" / layer
    texts = {f: f.read_text(errors="replace") for f in sources(layer_dir)}
    split = any(room != "." for room in rooms)
    folders = {layer_dir} | {d for f in texts for d in f.parents if layer_dir in d.parents}
    for folder in sorted(folders):
        edges = {}
        for f, text in texts.items():
            if folder not in f.parents:
                continue
            unit = unit_of(folder, f)
            for m in INCLUDE.finditer(text):
                target = src / m.group(2)
                if m.group(1) != '"' or folder not in target.parents:
                    continue
                to = unit_of(folder, target)
                if to != unit and not (split and folder == layer_dir and (unit.endswith("/") or to.endswith("/"))):
                    edges.setdefault(unit, {}).setdefault(to, f"{f.relative_to(root)}:{line_of(text, m.start())}")
        for component in cycles(edges):
            where = "; ".join(
                f"{a} -> {b} ({edges[a][b]})" for a in component for b in component if b in edges.get(a, {}))
            errors.append(f"src/{folder.relative_to(src)}: {', '.join(component)} include each other (an arrow "
                          f"running back up inside the folder; move what they share into a lower file of its "
                          f"own): {where}")
    return errors


def print_graph(layers, kinds, graph):
    print("include graph of src/ (folder -> folders it includes; * = pure):")
    width = max(len(n) for n in layers) + 1
    for name in layers:
        mark = "*" if kinds[name] == "PURE" else " "
        deps = ", ".join(d for d in layers if d in graph.get(name, ())) or "-"
        print(f"  {name + mark:<{width}} -> {deps}")


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = pathlib.Path(argv[2] if len(argv) == 3 else pathlib.Path(__file__).resolve().parent.parent)
    layers, kinds, test_deps, rooms = read_layers(argv[1])
    graph, room_graph = {}, {}
    errors = check_sources(layers, kinds, root, graph) + check_tests(layers, test_deps, root)
    for layer, declared in rooms.items():
        errors += check_rooms(layer, declared, root, room_graph)
    for layer in layers:
        errors += check_folders(layer, rooms.get(layer, {".": set()}), root)
    print_graph(layers, kinds, graph)
    for layer, (order, used) in room_graph.items():
        print(f"include graph of the rooms of src/{layer}/ (lowest first; . = its top level):")
        width = max(len(r) for r in order)
        for room in order:
            print(f"  {room:<{width}} -> {', '.join(r for r in order if r in used[room]) or '-'}")
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layering violation(s)")
        return 1
    print("layering ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
