"""Shared helpers for locus's Python tools (study, validate, config_ref).

Run with Debian's /usr/bin/python3 (numpy, h5py, matplotlib, PyYAML).
"""
import hashlib
import os
import subprocess
import sys
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit 2."""


def build_dir():
    return os.environ.get("LOCUS_BUILD_DIR", os.path.join(ROOT, "build"))


def find_file(path, base):
    """A path given in a study or case file: relative to that file's
    directory `base`, the repository, or the current directory (in that
    order). The absolute path, or None when it exists in none of them."""
    for b in (base, ROOT, os.getcwd()):
        p = os.path.join(b, path)
        if os.path.exists(p):
            return os.path.abspath(p)
    return None


def app_binary(app):
    path = os.path.join(build_dir(), "apps", app, app)
    if not os.path.exists(path):
        raise UserError("no built app '%s' (looked for %s; run ./locus build)" % (app, path))
    return path


def mpiexec():
    return os.environ.get("LOCUS_MPIEXEC", "mpiexec")


def closest(word, candidates):
    """The candidate nearest to word (edit distance), or None."""
    def dist(a, b):
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]
    best = min(candidates, key=lambda c: dist(word, c), default=None)
    if best is not None and dist(word, best) <= max(2, len(word) // 3):
        return best
    return None


class Located:
    """A YAML document loaded with the line of every mapping key, so that
    errors can name file:line."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise UserError("%s: cannot read (%s)" % (path, e.strerror))
        try:
            node = yaml.compose(text)
            self.data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = "%s:%d" % (path, mark.line + 1) if mark else path
            raise UserError("%s: YAML syntax error: %s" % (where, getattr(e, "problem", e)))
        self.lines = {}
        if node is not None:
            self._walk(node, "")

    def _walk(self, node, prefix):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = prefix + str(k.value)
                self.lines[key] = k.start_mark.line + 1
                self._walk(v, key + "/")

    def where(self, key_path):
        """file:line for a key path like 'sweep/comm.halo'."""
        line = self.lines.get(key_path)
        return "%s:%d" % (self.path, line) if line else self.path


def app_keys(app):
    """Every deck key of an app, from its schema (--print-schema)."""
    p = subprocess.run([app_binary(app), "--print-schema"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise UserError("%s --print-schema failed: %s" % (app, p.stderr.strip()))
    return yaml.safe_load(p.stdout)["keys"]


def effective_config(app, deck, sets):
    """The app's effective configuration (dict) for a deck and overrides, or
    raises UserError with the app's own message."""
    cmd = [app_binary(app), deck, "--print-config"]
    for k, v in sets:
        cmd += ["--set", "%s=%s" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise UserError(p.stderr.strip() or "%s: --print-config failed" % app)
    return yaml.safe_load(p.stdout)


def config_hash(config, extra=""):
    """A short stable hash of an effective config (output.* and name left
    out: they name where a run writes, not what it computes)."""
    c = dict(config)
    c.pop("output", None)
    c.pop("name", None)
    text = yaml.safe_dump(c, sort_keys=True) + extra
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def yaml_value(v):
    """A Python value as the text --set expects."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(yaml_value(x) for x in v) + "]"
    return str(v)


def run_app(app, deck, ranks, sets, timeout, log_prefix=None, env=None):
    """Runs an app under mpiexec. Returns (returncode, stdout, stderr, seconds)."""
    cmd = [mpiexec(), "-n", str(ranks), app_binary(app), deck, "--quiet"]
    for k, v in sets:
        cmd += ["--set", "%s=%s" % (k, v)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = -1
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = "timed out after %d s" % timeout
    secs = time.monotonic() - t0
    if log_prefix:
        with open(log_prefix + ".cmd", "w") as f:
            f.write(" ".join(cmd) + "\n")
        with open(log_prefix + ".stdout", "w") as f:
            f.write(out)
        with open(log_prefix + ".stderr", "w") as f:
            f.write(err)
    return rc, out, err, secs


def parse_summary(stdout):
    """The locus_summary document at the end of an app's stdout, or None."""
    i = stdout.find("locus_summary:")
    if i < 0:
        return None
    try:
        return yaml.safe_load(stdout[i:])["locus_summary"]
    except yaml.YAMLError:
        return None


def dig(tree, dotted):
    """tree['a']['b'] for 'a.b'; None when absent."""
    cur = tree
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit():
            idx = int(part)
            if -len(cur) <= idx < len(cur):
                cur = cur[idx]
            else:
                return None
        else:
            return None
    return cur


def fail(msg, code=2):
    print("locus: error: " + msg, file=sys.stderr)
    sys.exit(code)
