#!/usr/bin/python3
"""./locus lint's own rules, on made-up sources: an include that points up
the core's layers is found (and one that points down is not), a public
header that declares in namespace detail, declares a process-wide
variable, names MPI_Win or includes yaml-cpp is found (a detail/ header
is not), and a function's length counts its wrapped signature and functions defined
inside a class."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import lint  # noqa: E402


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def check_layers():
    with tempfile.TemporaryDirectory() as root:
        write(root, "core/CMakeLists.txt", "set(LOCUS_LAYERS low mid high)\n")
        write(root, "core/low/include/locus/a.hpp", "#pragma once\n")
        write(root, "core/mid/b.hpp", "#pragma once\n#include \"locus/a.hpp\"\n")
        write(root, "core/high/include/locus/c.hpp", "#pragma once\n#include \"mid/b.hpp\"\n")
        write(root, "core/mid/b.cpp", "#include \"mid/b.hpp\"\n#include <vector>\n\n#include \"locus/c.hpp\"\n")
        write(root, "core/low/a.cpp", "#include \"locus/a.hpp\"\n#include \"mid/b.hpp\"\n")
        found = sorted((f, line) for f, line, _ in lint.upward_includes(root))
        expect = [("core/low/a.cpp", 2), ("core/mid/b.cpp", 4)]
        assert found == expect, "upward includes %s, expected %s" % (found, expect)
        write(root, "core/mid/include/locus/a.hpp", "#pragma once\n")
        try:
            lint.upward_includes(root)
        except lint.UserError as e:
            assert "locus/a.hpp is also in core/low" in str(e), e
        else:
            raise AssertionError("a public header in two layers was not refused")


def check_public_headers():
    with tempfile.TemporaryDirectory() as root:
        write(root, "core/CMakeLists.txt", "set(LOCUS_LAYERS low high)\n")
        write(root, "core/low/include/locus/a.hpp",
              "#pragma once\n#include <yaml-cpp/yaml.h>\n// namespace detail in a comment is fine\n"
              "namespace locus {\nnamespace detail {\nextern int g;\n}\nextern \"C\" void f();\n"
              "struct S { MPI_Win w; };\ninline thread_local int t;\n}\n")
        write(root, "core/low/include/locus/detail/a.hpp",
              "#pragma once\nnamespace locus::detail {\nextern int g;\n}\n")
        write(root, "core/high/include/locus/b.hpp", "#pragma once\n#include \"locus/a.hpp\"\n")
        found = sorted((f, line) for f, line, _ in lint.public_header_problems(root))
        a = "core/low/include/locus/a.hpp"
        expect = [(a, 2), (a, 5), (a, 6), (a, 9), (a, 10)]
        assert found == expect, "public header problems %s, expected %s" % (found, expect)


def check_lengths():
    body = ["  x += 1;"] * 10
    text = "\n".join(
        ["namespace n {", "", "int wrapped(int a,", "            int b) {"] + body + ["}", "",
         "class K {", " public:", "  int inside(int a) const {"] + ["  " + b for b in body] + ["  }",
         "  int one_line() const { return 1; }", "};", "",
         "K::K(int a)", "    : a_(a),", "      b_(a) {"] + body + ["}", "", "}  // namespace n", ""])
    found = {name: length for _, length, name in lint.cpp_functions(text.split("\n"))}
    expect = {"wrapped": 13, "inside": 12, "K::K": 14}
    assert found == expect, "functions %s, expected %s" % (found, expect)


check_layers()
check_public_headers()
check_lengths()
print("PASS")
