"""docs/core-api.md quotes examples/consumer/api_example.cpp (which CTest builds
and runs) verbatim, so the page cannot drift from working code."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from locus_testlib import SOURCE, check  # noqa: E402

src = open(os.path.join(SOURCE, "examples", "consumer", "api_example.cpp")).read()
code = src.split("// --- docs/core-api.md begins\n", 1)[1].split("// --- docs/core-api.md ends", 1)[0]
doc = open(os.path.join(SOURCE, "docs", "core-api.md")).read()
check("```cpp\n" + code + "```" in doc, "docs/core-api.md does not quote api_example.cpp's example verbatim")
print("docs/core-api.md example matches examples/consumer/api_example.cpp")
