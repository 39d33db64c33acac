"""docs/config.md lists every deck key the apps accept (from APP --help)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, app_path, check  # noqa: E402

doc = open(os.path.join(SOURCE, "docs", "config.md")).read()
for app in sys.argv[1:]:
    p = subprocess.run([app_path(app), "--help"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "%s --help failed" % app)
    keys = re.findall(r"^  (\S+)  ", p.stdout.split("keys:\n", 1)[1], re.M)
    check(len(keys) > 10, "%s --help lists its keys" % app)
    missing = [k for k in keys if "`%s`" % k not in doc]
    check(not missing, "docs/config.md misses %s keys: %s" % (app, ", ".join(missing)))
    print("%s: %d keys documented" % (app, len(keys)))
