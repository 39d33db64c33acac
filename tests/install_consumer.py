"""A user's own app builds against the installed locus (find_package) and
runs: `cmake --install` of this build into a scratch prefix, then
examples/consumer configured with locus_ROOT=prefix, built and run at 2
ranks, on a real node and on emulated nodes of one rank."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locus_testlib import BUILD, MPIEXEC, SOURCE, check  # noqa: E402

scratch = os.path.join(BUILD, "scratch", "install_consumer")
shutil.rmtree(scratch, ignore_errors=True)
prefix = os.path.join(scratch, "prefix")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    check(p.returncode == 0, "%s failed (exit %d):\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:],
                                                               p.stderr[-3000:]))
    return p


run(["cmake", "--install", BUILD, "--prefix", prefix])
for f in ("lib/cmake/locus/locusConfig.cmake", "lib/cmake/locus/locusTargets.cmake", "include/locus/rma.hpp",
          "bin/heat3d", "share/locus/inputs/heat3d/default.yaml"):
    check(os.path.exists(os.path.join(prefix, f)), "not installed: %s" % f)
cfg = run(["cmake", "-S", os.path.join(SOURCE, "examples", "consumer"), "-B", os.path.join(scratch, "b"),
           "-Dlocus_ROOT=" + prefix, "-DCMAKE_BUILD_TYPE=Release"])
run(["cmake", "--build", os.path.join(scratch, "b"), "-j", "2"])
exe = os.path.join(scratch, "b", "api_example")
deck = os.path.join(prefix, "share", "locus", "inputs", "examples", "empty.yaml")
# the package found is the installed one, not the build tree's
cache = open(os.path.join(scratch, "b", "CMakeCache.txt")).read()
check("locus_DIR:PATH=%s/lib/cmake/locus" % prefix in cache, "find_package(locus) did not find the installed tree")
link = open(os.path.join(scratch, "b", "CMakeFiles", "api_example.dir", "link.txt")).read()
check(prefix + "/lib/liblocus.a" in link, "the consumer does not link the installed liblocus.a:\n" + link)
for env_extra in ({}, {"LOCUS_NODE_SIZE": "1"}):
    env = dict(os.environ, **env_extra)
    p = run([MPIEXEC, "-n", "2", exe, deck, "--set", "output.dir=" + os.path.join(scratch, "out")], env=env)
print("installed into %s; examples/consumer built with find_package(locus) and ran at 2 ranks (real and emulated nodes)"
      % prefix)
