#!/usr/bin/python3
"""locus lint: which C++ sources the repository's .clang-format would change, which functions are too long, and which includes point up the core's layers.

Runs Debian's clang-format (clang-format-14, package clang-format) in
dry-run mode with --Werror over the C++ sources git tracks (*.cpp, *.hpp,
*.h, *.cc), or over the files named, and reports every file that is not
formatted, with the first lines clang-format would change. Nothing is
rewritten: `clang-format -i FILE` does that.
It also lists every function longer than --max-lines (80) lines in the
C++ and Python sources of apps/, bench/, core/ and tools/: a C++
definition (at namespace scope or inside a class) runs from the first line
of its signature, which may wrap onto several lines, to the "}" at the
signature's indentation (clang-format puts it there); a Python function
from its "def" to its last line.
And it checks the core's layers (core/CMakeLists.txt, LOCUS_LAYERS): no
file of core/<layer>/ includes a header of a later layer, public
(<layer>/include/locus/x.hpp, included as "locus/x.hpp") or internal
("<layer>/x.hpp").
And that the core's public headers (<layer>/include/locus/x.hpp) declare
nothing in namespace detail, no process-wide variable (extern,
thread_local) and no MPI_Win, and include neither yaml-cpp nor HDF5: what
the inline code of a public header needs from the library is in
<layer>/include/locus/detail/ (docs/design.md, "Public headers").

Exit 0 when every file is formatted, no function is too long, no include
points up and the public headers keep their rules, 1 when some do not, 2 when clang-format is missing or a file cannot be read.
"""
import ast
import re
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


def tracked_files():
    """The files git tracks, relative to the repository."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise UserError("cannot list the repository's files with git (%s): name the files instead" % e)
    return sorted(p for p in out.split("\0") if p)


# Where the function-length rule applies.
LENGTH_DIRS = ("apps/", "bench/", "core/", "tools/")
# Lines that open something other than a function definition.
NOT_A_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|else|do|return|case|namespace|struct|class|enum|"
                            r"union|template|typedef|using|static_assert|#)\b")
FUNCTION_START = re.compile(r"^( *)[A-Za-z_~]")


def cpp_functions(lines):
    """(first line index, line count, name) of every C++ function defined in
    LINES: at namespace scope or inside a class, its signature on one line or
    several (up to 8), from the signature's first line to the "}" at the
    signature's indentation (clang-format puts it there)."""
    i, n = 0, len(lines)
    while i < n:
        m = FUNCTION_START.match(lines[i])
        head = lines[i].split("(")[0]
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        prev = prev.split("//")[0].strip()  # comments say nothing
        starts_statement = not prev or prev.endswith((";", "{", "}", ":")) or prev.startswith(("#", "template"))
        if (not m or "(" not in lines[i] or NOT_A_FUNCTION.match(lines[i]) or " = " in head or not starts_statement):
            i += 1
            continue
        j = i
        while j < min(n, i + 8) and not lines[j].rstrip().endswith(("{", ";", "}")):
            j += 1
        if j >= n or not lines[j].rstrip().endswith("{"):
            i += 1
            continue
        indent = m.group(1)
        end = None
        for k in range(j + 1, n):
            if lines[k] == indent + "}":
                end = k
                break
            if lines[k].strip() and not lines[k].startswith(indent + " ") and not lines[k].startswith("#"):
                break  # the enclosing scope ended first: not a definition
        if end is None:
            i += 1
            continue
        yield i, end - i + 1, head.split()[-1] if head.split() else "?"
        i = end + 1


def long_functions(path, limit):
    """(first line, lines, name) of every function of PATH longer than LIMIT lines."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    found = []
    if path.endswith(".py"):
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            raise UserError("%s:%s: cannot parse: %s" % (path, e.lineno, e.msg))
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = n.end_lineno - n.lineno + 1
                if length > limit:
                    found.append((n.lineno, length, n.name))
        return found
    for first, length, name in cpp_functions(text.split("\n")):
        if length > limit:
            found.append((first + 1, length, name))
    return found


INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def core_layers(root=ROOT):
    """The layers, lowest first, as core/CMakeLists.txt declares them."""
    path = os.path.join(root, "core", "CMakeLists.txt")
    with open(path, encoding="utf-8") as f:
        m = re.search(r"set\(LOCUS_LAYERS ([a-z ]+)\)", f.read())
    if not m:
        raise UserError("%s: no set(LOCUS_LAYERS ...) line: the core's layers are declared there" % path)
    return m.group(1).split()


def header_layers(layers, root=ROOT):
    """Which layer each core header belongs to: "locus/x.hpp" (public) and
    "<layer>/x.hpp" (internal)."""
    owner = {}
    for layer in layers:
        top = os.path.join(root, "core", layer)
        for dirpath, _, names in os.walk(top):
            for n in names:
                if n.endswith(".hpp"):
                    rel = os.path.relpath(os.path.join(dirpath, n), top)
                    key = rel[len("include/"):] if rel.startswith("include/") else layer + "/" + rel
                    if key in owner:
                        raise UserError("core/%s/%s: %s is also in core/%s" % (layer, rel, key, owner[key]))
                    owner[key] = layer
    return owner


def upward_includes(root=ROOT):
    """(file, line, text) of every include in ROOT/core that points to a later layer."""
    layers = core_layers(root)
    rank = {name: i for i, name in enumerate(layers)}
    owner = header_layers(layers, root)
    found = []
    for layer in layers:
        for dirpath, _, names in os.walk(os.path.join(root, "core", layer)):
            for n in sorted(names):
                if not n.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, n)
                with open(path, encoding="utf-8") as f:
                    for i, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        target = owner.get(m.group(1)) if m else None
                        if target and rank[target] > rank[layer]:
                            found.append((os.path.relpath(path, root), i, "includes %s (layer %d, %s) from layer %d, %s"
                                          % (m.group(1), rank[target] + 1, target, rank[layer] + 1, layer)))
    return found


# What a public header of the core may not hold (code, not comments).
PUBLIC_RULES = (
    (re.compile(r"^\s*namespace\s+(locus::)?detail\b"), "declares in namespace detail (put it in locus/detail/)"),
    (re.compile(r"^\s*(extern\b(?!\s*\"C\")|.*\bthread_local\b)"), "declares a process-wide variable"),
    (re.compile(r"\bMPI_Win\b"), "names MPI_Win"),
    (re.compile(r"^\s*#\s*include\s*<(yaml-cpp/|hdf5)"), "includes yaml-cpp or HDF5"),
)


def public_header_problems(root=ROOT):
    """(file, line, text) of every line of a public core header
    (core/<layer>/include/locus/*.hpp, not detail/) that breaks PUBLIC_RULES."""
    found = []
    for layer in core_layers(root):
        top = os.path.join(root, "core", layer, "include", "locus")
        if not os.path.isdir(top):
            continue
        for n in sorted(os.listdir(top)):
            path = os.path.join(top, n)
            if not n.endswith(".hpp") or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                for i, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    for rule, what in PUBLIC_RULES:
                        if rule.search(code):
                            found.append((os.path.relpath(path, root), i, "public header " + what))
    return found


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
    p.add_argument("--max-lines", type=int, default=80, metavar="N",
                   help="longest function allowed in apps/, bench/, core/ and tools/ (default 80)")
    a = p.parse_args(argv)
    try:
        prog = clang_format(a.prog)
        tracked = [] if a.files else tracked_files()
        files = [os.path.abspath(f) for f in a.files] or [p for p in tracked if p.endswith(SUFFIXES)]
        bad = []
        for f in files:
            complaints = check(prog, f)
            if complaints:
                bad.append(f)
                if a.list:
                    print(os.path.relpath(os.path.join(ROOT, f), ROOT))
                else:
                    report(f, complaints, SHOWN)
        long_ones = []
        for f in files:
            rel = os.path.relpath(f, ROOT)
            if rel.startswith(LENGTH_DIRS) and rel.endswith(SUFFIXES + (".py",)):
                long_ones += [(rel,) + x for x in long_functions(rel, a.max_lines)]
        if not a.files:  # the Python tools too
            long_ones += [(rel,) + x for rel in tracked if rel.endswith(".py") and rel.startswith(LENGTH_DIRS)
                          for x in long_functions(rel, a.max_lines)]
        for rel, line, length, name in long_ones:
            print("%s:%d: %s is %d lines (at most %d)" % (rel, line, name, length, a.max_lines))
        upward = [] if a.files else upward_includes()
        public = [] if a.files else public_header_problems()
        for rel, line, text in upward + public:
            print("%s:%d: %s" % (rel, line, text))
    except UserError as e:
        fail(str(e))
    if not a.list:
        print("lint: %d of %d file%s not formatted (%s); %d function%s over %d lines; %d upward include%s; "
              "%d public header problem%s"
              % (len(bad), len(files), "" if len(files) == 1 else "s", os.path.basename(prog), len(long_ones),
                 "" if len(long_ones) == 1 else "s", a.max_lines, len(upward),
                 "" if len(upward) == 1 else "s", len(public), "" if len(public) == 1 else "s"), file=sys.stderr)
    return 1 if bad or long_ones or upward or public else 0


if __name__ == "__main__":
    sys.exit(main())
