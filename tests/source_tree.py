"""The test suite writes only under the build tree: the files git sees in
the source tree (`git status --porcelain --ignored --untracked-files=all`,
build directories left out) after the suite are those it saw before.

    source_tree.py snapshot FILE   (ctest runs it before any test: CTestCustom.cmake)
    source_tree.py check FILE      (the test locus.source_tree_clean, after every other test)

Without git or outside a git checkout the check says so and passes."""
import os
import subprocess
import sys


def status(source, build):
    """The source tree's entries outside the build directories, as git
    prints them (modified, untracked and ignored files)."""
    try:
        p = subprocess.run(["git", "-C", source, "status", "--porcelain", "--ignored", "--untracked-files=all"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    rel_build = os.path.relpath(os.path.realpath(build), os.path.realpath(source))
    out = set()
    for line in p.stdout.splitlines():
        path = line[3:].strip('"')
        top = path.split("/")[0]
        if top == "build" or top.startswith("build-") or "__pycache__" in path.split("/"):
            continue
        if not rel_build.startswith("..") and (path == rel_build or path.startswith(rel_build + "/")):
            continue
        out.add(line)
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("snapshot", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    source = os.environ.get("LOCUS_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    build = os.environ.get("LOCUS_BUILD_DIR", os.path.join(source, "build"))
    now = status(source, build)
    path = sys.argv[2]
    if sys.argv[1] == "snapshot":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(sorted(now or [])) + "\n")
        return 0
    if now is None:
        print("source tree: not a git checkout (or no git): not checked")
        return 0
    if not os.path.exists(path):
        print("source tree: no snapshot %s (ctest runs CTestCustom.cmake's pre-test command): not checked" % path)
        return 0
    with open(path) as f:
        before = set(l for l in f.read().splitlines() if l)
    new = sorted(now - before)
    if new:
        print("FAIL: the suite left files outside the build tree (git status --porcelain --ignored):")
        for line in new:
            print("  " + line)
        return 1
    print("source tree: nothing new outside the build tree (%d entries before and after)" % len(now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
