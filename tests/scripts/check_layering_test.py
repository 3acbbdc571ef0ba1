#!/usr/bin/env python3
"""Tests of scripts/check-layering.py: it passes a tree whose includes run one way and fails a deliberate
back include, between layers, between rooms and between the files of any folder of src/.

Usage: check_layering_test.py LAYERS_FILE SOURCE_DIR

Small trees are written to a temporary folder; the real tree (SOURCE_DIR's src/ and tests/, with the
build's LAYERS_FILE) is copied there and given back includes one at a time, so the check is proven on the
code it guards.
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

LAYERS_FILE = None
SOURCE_DIR = None
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-layering.py"

TINY_LAYERS = """layer base PURE
layer report PURE base
layer gateway IO base
room gateway config
room gateway runtime config
room gateway . runtime
"""


def run_check(root, layers_file):
    done = subprocess.run([sys.executable, str(SCRIPT), str(layers_file), str(root)], capture_output=True,
                          text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def write(root, files):
    for path, text in files.items():
        f = root / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def include(*targets):
    return "".join(f'#include "{t}"\n' for t in targets)


# Every layer of TINY_LAYERS with its declared edges used and its files including each other one way.
TINY_TREE = {
    "src/base/result.hpp": "",
    "src/report/row.hpp": include("base/result.hpp"),
    "src/report/row.cpp": include("report/row.hpp"),
    "src/report/svg.hpp": include("report/row.hpp"),
    "src/report/svg.cpp": include("report/svg.hpp"),
    "src/gateway/config/config.hpp": include("base/result.hpp"),
    "src/gateway/runtime/runtime.hpp": include("gateway/config/config.hpp"),
    "src/gateway/gateway.hpp": include("gateway/runtime/runtime.hpp"),
}


class TinyTree(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.dir.name)
        self.layers = self.root / "layers.txt"
        self.layers.write_text(TINY_LAYERS)
        write(self.root, TINY_TREE)

    def tearDown(self):
        self.dir.cleanup()

    def check(self):
        return run_check(self.root, self.layers)

    def test_one_way_tree_passes(self):
        code, out = self.check()
        self.assertEqual(code, 0, out)
        self.assertIn("layering ok", out)

    def test_two_files_of_a_layer_without_rooms_that_include_each_other_fail(self):
        write(self.root, {"src/report/row.cpp": include("report/row.hpp", "report/svg.hpp")})
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("src/report: row, svg include each other", out)
        self.assertIn("row -> svg (src/report/row.cpp:2)", out)
        self.assertIn("svg -> row (src/report/svg.hpp:1)", out)

    def test_a_cycle_through_a_third_file_fails(self):
        write(self.root, {
            "src/report/timeline.hpp": include("report/svg.hpp"),
            "src/report/row.cpp": include("report/row.hpp", "report/timeline.hpp"),
        })
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("src/report: row, svg, timeline include each other", out)

    def test_folders_of_a_layer_without_rooms_that_include_each_other_fail(self):
        write(self.root, {
            "src/report/a/one.hpp": include("report/b/two.hpp"),
            "src/report/b/two.hpp": include("base/result.hpp"),
        })
        self.assertEqual(self.check()[0], 0)
        write(self.root, {"src/report/b/two.cpp": include("report/a/one.hpp")})
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("src/report: a/, b/ include each other", out)

    def test_files_inside_a_room_that_include_each_other_fail(self):
        write(self.root, {
            "src/gateway/runtime/outliers.hpp": include("gateway/config/config.hpp"),
            "src/gateway/runtime/outliers.cpp": include("gateway/runtime/outliers.hpp", "gateway/runtime/runtime.hpp"),
            "src/gateway/runtime/runtime.cpp": include("gateway/runtime/runtime.hpp", "gateway/runtime/outliers.hpp"),
        })
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("src/gateway/runtime: outliers, runtime include each other", out)

    def test_a_room_including_a_room_above_it_fails(self):
        write(self.root, {"src/gateway/config/config.cpp": include("gateway/runtime/runtime.hpp")})
        code, out = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn("room gateway/config includes gateway/runtime/runtime.hpp, but does not declare room runtime",
                      out)


# Back includes into the real tree: (file, include added, what the check must print: the folder's cycle
# and the arrow back, or the layer edge).
CYCLE = "include each other (an arrow running back up inside the folder"
BACK_INCLUDES = [
    ("src/report/svg.hpp", "report/report.hpp", ["src/report: ", CYCLE, "svg -> report (src/report/svg.hpp:"]),
    ("src/report/grid.hpp", "report/timeline.hpp", ["src/report: ", CYCLE, "grid -> timeline (src/report/grid.hpp:"]),
    ("src/whatif/sim_types.hpp", "whatif/driver.hpp",
     ["src/whatif: ", CYCLE, "sim_types -> driver (src/whatif/sim_types.hpp:"]),
    ("src/whatif/fleet.cpp", "whatif/warden.hpp", ["src/whatif: ", CYCLE, "fleet -> warden (src/whatif/fleet.cpp:"]),
    ("src/workload/conversation.hpp", "workload/tools.hpp",
     ["src/workload: ", CYCLE, "conversation -> tools (src/workload/conversation.hpp:"]),
    ("src/workload/loop.hpp", "workload/make_loop.hpp",
     ["src/workload: ", CYCLE, "loop -> make_loop (src/workload/loop.hpp:"]),
    ("src/base/result.hpp", "core/types.hpp", ["base includes core/types.hpp, but warden_base does not declare"]),
]


class RealTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.root = pathlib.Path(cls.dir.name)
        for part in ("src", "tests"):
            shutil.copytree(SOURCE_DIR / part, cls.root / part, symlinks=True)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_the_tree_as_it_is_passes(self):
        code, out = run_check(self.root, LAYERS_FILE)
        self.assertEqual(code, 0, out)

    def test_each_back_include_fails(self):
        for path, target, expected in BACK_INCLUDES:
            with self.subTest(path=path, include=target):
                f = self.root / path
                original = f.read_text()
                try:
                    f.write_text(original.replace("#pragma once\n", "#pragma once\n" + include(target), 1)
                                 if "#pragma once\n" in original else include(target) + original)
                    code, out = run_check(self.root, LAYERS_FILE)
                finally:
                    f.write_text(original)
                self.assertEqual(code, 1, out)
                for text in expected:
                    self.assertIn(text, out)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        sys.exit(2)
    LAYERS_FILE, SOURCE_DIR = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
