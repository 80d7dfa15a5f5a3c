#!/usr/bin/env python3
"""Tests of scripts/check_layers.py (ctest `check_layers_test`): it passes on
the repository and fails, with one line naming the file and line, on each kind
of violation planted in a copy of the tree, so it cannot pass silently."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECKER = os.path.join(ROOT, "scripts", "check_layers.py")
COPIED = ["cmake", "docs", "src", "include", "tests/support", "cli", "examples", "tools", "bench"]


def run(root):
    p = subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout.splitlines()


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_layers_test.")
        for d in COPIED:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(self.tmp, d),
                            ignore=shutil.ignore_patterns("*.md") if d != "docs" else None)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, rel, text, after_line=1):
        """Inserts `text` after line `after_line` of rel; returns its line number."""
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        lines.insert(after_line, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return after_line + 1

    def replace(self, rel, old, new):
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))

    def expect_only(self, line):
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertEqual(out, [line])

    def test_repository_is_clean(self):
        self.assertEqual(run(ROOT), (0, []))
        self.assertEqual(run(self.tmp), (0, []))

    def test_upward_public_include(self):
        n = self.plant("src/session/writer.cc", '#include "compactor/runtime.h"')
        self.expect_only(f'src/session/writer.cc:{n}: module session includes runtime\'s header '
                         f'"compactor/runtime.h", runtime is not in its USES')

    def test_upward_private_include(self):
        n = self.plant("src/session/session.cc", '#include "tokens/estimate_internal.h"')
        self.expect_only(f'src/session/session.cc:{n}: module session includes tokens\'s header '
                         f'"tokens/estimate_internal.h", tokens is not in its USES')

    def test_unexported_private_header(self):
        n = self.plant("src/compact/engine.cc", '#include "tokens/bpe.h"')
        self.expect_only(f'src/compact/engine.cc:{n}: module compact includes tokens\'s private '
                         f'header "tokens/bpe.h" (tokens does not export it)')

    def test_program_private_header(self):
        n = self.plant("cli/main.cc", '#include "util/utf8.h"')
        self.expect_only(f'cli/main.cc:{n}: program cli includes util\'s private header '
                         f'"util/utf8.h" (util does not export it)')

    def test_program_without_library(self):
        n = self.plant("examples/agent/agent.cc", '#include "compactor/eval.h"')
        self.expect_only(f'examples/agent/agent.cc:{n}: program examples includes eval\'s header '
                         f'"compactor/eval.h", whose library compactor_eval it does not use')

    def test_public_header_includes_private(self):
        n = self.plant("include/compactor/context.h", '#include "util/utf8.h"')
        self.expect_only(f'include/compactor/context.h:{n}: public header of context includes '
                         f'util\'s private header "util/utf8.h"')

    def test_cycle_in_table(self):
        self.replace("cmake/modules.cmake", "  USES status env util\n  EXPORTS message_observer.h",
                     "  USES status env util compact\n  EXPORTS message_observer.h")
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1)
        self.assertTrue(any("module session uses compact, which is declared below it" in l
                            for l in out), out)

    def test_unowned_folder_and_header(self):
        os.mkdir(os.path.join(self.tmp, "src/newmod"))
        with open(os.path.join(self.tmp, "src/newmod/a.cc"), "w") as f:
            f.write('#include "compactor/status.h"\n')
        with open(os.path.join(self.tmp, "include/compactor/new.h"), "w") as f:
            f.write("\n")
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1)
        self.assertIn("src/newmod: a folder no module in cmake/modules.cmake declares", out)
        self.assertIn("include/compactor/new.h: a public header no module in "
                      "cmake/modules.cmake owns (HEADERS)", out)

    def test_doc_graph_differs(self):
        self.replace("docs/architecture.md", "| compactor | status, env |",
                     "| compactor | status |")
        rc, out = run(self.tmp)
        self.assertEqual(rc, 1)
        self.assertEqual(len(out), 1)
        self.assertRegex(out[0], r"^docs/architecture.md:\d+: the module graph differs")


if __name__ == "__main__":
    unittest.main()
