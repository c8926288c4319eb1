#!/usr/bin/env python3
"""Every example in README.md and docs/ is what the program prints now (scripts/update-examples
--check), and the check does catch a stale one, of either kind, planted in a copy.

Usage: test_examples.py AGENT_BIN SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

AGENT = ""
ROOT = ""


def check(root):
    return subprocess.run([os.path.join(ROOT, "scripts", "update-examples"), "--check", "--agent",
                           AGENT, "--root", root], capture_output=True, text=True, timeout=600)


class Examples(unittest.TestCase):
    def test_every_example_is_what_the_program_prints(self):
        done = check(ROOT)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def planted(self, text):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        for name in ("fixtures", "scripts"):
            os.symlink(os.path.join(ROOT, name), os.path.join(folder.name, name))
        with open(os.path.join(folder.name, "README.md"), "w") as readme:
            readme.write(text)
        return folder.name

    def test_a_stale_output_is_caught(self):
        root = self.planted(
            "<!-- example: nvsmi-agent snapshot --format legacy --fixture "
            "fixtures/xml/gtx1080ti-2gpu-v10-nodoctype.xml -->\n```json\n{\"temp\":[]}\n```\n")
        done = check(root)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("README.md:1: stale example: nvsmi-agent snapshot --format legacy", done.stdout)
        self.assertIn('-{"temp":[]}', done.stdout)

    def test_a_stale_session_is_caught_and_the_rewrite_is_then_current(self):
        root = self.planted("<!-- example session -->\n```\n$ nvsmi-agent pick --fixture "
                            "fixtures/xml/h100-8gpu-states-v12.xml --lock-dir .\n5\n```\n")
        done = check(root)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("+0\n", done.stdout)
        rewrite = subprocess.run([os.path.join(ROOT, "scripts", "update-examples"), "--agent",
                                  AGENT, "--root", root], capture_output=True, text=True,
                                 timeout=600)
        self.assertEqual(rewrite.returncode, 0, rewrite.stderr)
        with open(os.path.join(root, "README.md")) as readme:
            self.assertIn("--lock-dir .\n0\n```", readme.read())
        self.assertEqual(check(root).returncode, 0)

    def test_a_marker_without_its_block_is_refused(self):
        done = check(self.planted("<!-- example: true -->\nno block\n"))
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("must be followed by a fenced block", done.stderr)


if __name__ == "__main__":
    AGENT, ROOT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
