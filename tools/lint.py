#!/usr/bin/python3
"""locus lint: which C++ sources the repository's .clang-format would change.

    ./locus lint [FILE...] [--clang-format PROG] [--list]

Runs Debian's clang-format (clang-format-14, package clang-format) in
dry-run mode with --Werror over the C++ sources git tracks (*.cpp, *.hpp,
*.h, *.cc), or over the files named, and reports every file that is not
formatted, with the first lines clang-format would change. Nothing is
rewritten: `clang-format -i FILE` does that. Exit 0 when every file is
formatted, 1 when some are not, 2 when clang-format is missing or a file
cannot be read.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from locuslib import ROOT, UserError, fail  # noqa: E402

SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
# Debian's clang-format package points clang-format at the release's version.
CANDIDATES = ("clang-format-14", "clang-format")
# How many lines of clang-format's complaints a file shows.
SHOWN = 6


def clang_format(prog=None):
    """The clang-format to run: PROG, else the first of CANDIDATES on PATH."""
    for name in (prog,) if prog else CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    raise UserError("%s not found: ./locus setup installs Debian's clang-format package"
                    % (prog or " or ".join(CANDIDATES)))


def tracked_sources():
    """The C++ files git tracks, relative to the repository."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise UserError("cannot list the repository's files with git (%s): name the files instead" % e)
    return sorted(p for p in out.split("\0") if p.endswith(SUFFIXES))


def check(prog, path):
    """clang-format's complaints about one file ('' when it is formatted)."""
    cmd = [prog, "--dry-run", "--Werror", "--style=file", path]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0 and "error: code should be clang-formatted" not in r.stderr:
        raise UserError("%s: %s" % (path, (r.stderr.strip() or "clang-format exit %d" % r.returncode)))
    return r.stderr.strip() if r.returncode != 0 else ""


def report(path, complaints, show):
    """One file's entry: its name (relative to the repository), how many
    places, the first few."""
    path = os.path.relpath(os.path.join(ROOT, path), ROOT)
    lines = complaints.splitlines()
    places = sum(1 for line in lines if "code should be clang-formatted" in line)
    print("%s: not formatted (%d place%s)" % (path, places, "" if places == 1 else "s"))
    for line in lines[:show]:
        print("    " + line)


def main(argv=None):
    p = argparse.ArgumentParser(prog="./locus lint", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("files", nargs="*", help="files to check (default: the C++ sources git tracks)")
    p.add_argument("--clang-format", dest="prog", help="the clang-format to run (default: clang-format-14)")
    p.add_argument("--list", action="store_true", help="only the names of the files that are not formatted")
    a = p.parse_args(argv)
    try:
        prog = clang_format(a.prog)
        files = [os.path.abspath(f) for f in a.files] or tracked_sources()
        bad = []
        for f in files:
            complaints = check(prog, f)
            if complaints:
                bad.append(f)
                if a.list:
                    print(os.path.relpath(os.path.join(ROOT, f), ROOT))
                else:
                    report(f, complaints, SHOWN)
    except UserError as e:
        fail(str(e))
    if not a.list:
        print("lint: %d of %d file%s not formatted (%s)" % (len(bad), len(files), "" if len(files) == 1 else "s",
                                                          os.path.basename(prog)), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
