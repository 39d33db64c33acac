"""Shared helpers for locus's Python tools (study, validate, config_ref).

Run with Debian's /usr/bin/python3 (numpy, h5py, matplotlib, PyYAML).
"""
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import signal
import time

import yaml

# `./locus validate --list | head` ends quietly, not with a BrokenPipeError
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

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


# ---------------------------------------------------------------- launchers
#
# A launcher is a command line (shell quoting allowed) that starts the MPI
# ranks. Known launchers get the rank count, processes per node and binding
# in their own syntax; any other command names them with the placeholders
# {n} and {ppn}. Chosen by, first to last: --launcher (the driver exports
# LOCUS_LAUNCHER), the site file's `launcher:`, LOCUS_MPIEXEC (older name),
# the build's own mpiexec.

LAUNCHER_HELP = """launcher: 'mpiexec' (the build's MPI: mpiexec.mpich or mpiexec.openmpi),
'srun' (Slurm; --mpi=pmi2 for MPICH, pmix for Open MPI, unless given), any of them with options
('srun --mpi=pmi2 --cpu-bind=cores', "mpiexec -bind-to core"), or any
command with the placeholders {n} (ranks) and {ppn} (ranks per node),
e.g. 'mylauncher --np {n} --per-node {ppn} --'."""


def site_file():
    """The site file: LOCUS_SITE, else site.yaml in the repository, or None."""
    p = os.environ.get("LOCUS_SITE")
    if p:
        if not os.path.isfile(p):
            raise UserError("LOCUS_SITE=%s: no such file" % p)
        return os.path.abspath(p)
    p = os.path.join(ROOT, "site.yaml")
    return p if os.path.isfile(p) else None


SITE_KEYS = {
    "launcher": "how ranks are started (see ./locus run --help: --launcher)",
    "ppn": "ranks per node for the launcher (default: all on one node)",
    "bind": "core or none: binding of ranks for the known launchers",
    "slurm": "batch settings for ./locus study --scheduler slurm: account, partition, time, qos, "
             "constraint, modules (list), setup (list of shell lines), sbatch (list of extra #SBATCH options)",
}
SLURM_KEYS = ("account", "partition", "time", "qos", "constraint", "modules", "setup", "sbatch")


def site_config():
    """The site file's settings (a dict, checked), {} without one."""
    path = site_file()
    if not path:
        return {}
    doc = Located(path)
    d = doc.data or {}
    if not isinstance(d, dict):
        raise UserError("%s: a site file is a mapping of: %s" % (path, ", ".join(SITE_KEYS)))
    doc.check_keys(d, SITE_KEYS, "site")
    if "launcher" in d and (not isinstance(d["launcher"], str) or not d["launcher"].strip()):
        raise UserError("%s: launcher: must be a command line (text)" % doc.where("launcher"))
    if "ppn" in d and (not isinstance(d["ppn"], int) or isinstance(d["ppn"], bool) or d["ppn"] < 1):
        raise UserError("%s: ppn: must be a positive integer" % doc.where("ppn"))
    if "bind" in d and d["bind"] not in ("core", "none"):
        raise UserError("%s: bind: must be core or none" % doc.where("bind"))
    sl = d.get("slurm") or {}
    if not isinstance(sl, dict):
        raise UserError("%s: slurm: must be a mapping (%s)" % (doc.where("slurm"), ", ".join(SLURM_KEYS)))
    doc.check_keys(sl, SLURM_KEYS, "slurm", "slurm/", "slurm.")
    for k, v in sl.items():
        if k in ("modules", "setup", "sbatch"):
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise UserError("%s: slurm.%s: must be a list of text lines" % (doc.where("slurm/" + k), k))
        elif not isinstance(v, (str, int)) or isinstance(v, bool):
            raise UserError("%s: slurm.%s: must be a value (text)" % (doc.where("slurm/" + k), k))
    d["_path"] = path
    return d


def build_cache(key, build=None):
    """A value from the CMake cache of BUILD (default: the build's; '' when
    absent or unbuilt)."""
    try:
        with open(os.path.join(build or build_dir(), "CMakeCache.txt")) as f:
            for line in f:
                name, sep, value = line.partition("=")
                if sep and name.split(":", 1)[0] == key:
                    return value.strip()
    except OSError:
        pass
    return ""


def build_mpiexec():
    """The mpiexec of the build's MPI (from its CMake cache), else MPICH's."""
    return build_cache("MPIEXEC_EXECUTABLE") or ("mpiexec.mpich" if shutil.which("mpiexec.mpich") else "mpiexec")


def build_mpi_library():
    """'openmpi' or 'mpich' (from the build's CMake cache), else ''."""
    if build_cache("LOCUS_HAVE_OMPI") == "1":
        return "openmpi"
    if build_cache("LOCUS_HAVE_MPICH") == "1":
        return "mpich"
    return ""


def _launcher_kind(prog):
    base = os.path.basename(prog)
    if base == "srun":
        return "srun"
    if base in ("mpiexec", "mpirun"):
        real = os.path.realpath(shutil.which(prog) or prog)
        base = os.path.basename(real)
    if "openmpi" in base or base in ("orterun", "prterun"):
        return "openmpi"
    if base.startswith("mpiexec") or base.startswith("mpirun") or "hydra" in base:
        return "hydra"
    return None


def launcher_spec():
    """(text, where it came from) of the launcher to use."""
    if os.environ.get("LOCUS_LAUNCHER"):
        return os.environ["LOCUS_LAUNCHER"], "--launcher"
    site = site_config()
    if site.get("launcher"):
        return site["launcher"], "%s: launcher" % site["_path"]
    if os.environ.get("LOCUS_MPIEXEC"):
        return os.environ["LOCUS_MPIEXEC"], "LOCUS_MPIEXEC"
    return "mpiexec", "default"


# A launcher's own binding options (Hydra, Open MPI, srun): --bind adds one.
BIND_OPTIONS = ("-bind-to", "--bind-to", "-binding", "--cpu-bind", "--cpu_bind", "-cpu-bind")


def launcher_template(spec=None, ppn=None, bind=None):
    """The launcher's argv with {n} (and {ppn}) left to fill in."""
    where = "--launcher"
    if spec is None:
        spec, where = launcher_spec()
    site = site_config()
    if ppn is None:
        ppn = os.environ.get("LOCUS_PPN") or site.get("ppn")
    if bind is None:
        bind = os.environ.get("LOCUS_BIND") or site.get("bind")
    if ppn is not None:
        if not str(ppn).isdigit() or int(ppn) < 1:
            raise UserError("--ppn: must be a positive integer (got '%s')" % ppn)
        ppn = int(ppn)
    if bind not in (None, "", "core", "none"):
        raise UserError("--bind: must be core or none (got '%s')" % bind)
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise UserError("launcher (%s): %s: %s" % (where, spec, e))
    if not argv:
        raise UserError("launcher (%s): empty command" % where)
    if argv[0] == "mpiexec" and len(argv) >= 1:
        argv[0] = build_mpiexec()
    if not shutil.which(argv[0]):
        raise UserError("launcher (%s): %s: command not found" % (where, argv[0]))
    if any("{n}" in a for a in argv):
        if bind:
            raise UserError("launcher (%s): with a {n} template, put the binding in the command itself" % where)
        if any("{ppn}" in a for a in argv) and ppn is None:
            ppn = "{n}"
        return [a.replace("{ppn}", str(ppn)) if ppn is not None else a for a in argv]
    kind = _launcher_kind(argv[0])
    own = [a for a in argv[1:] if a.split("=")[0] in BIND_OPTIONS]
    if bind and own:
        raise UserError("--bind %s and the launcher's own %s (%s): bind once, with --bind or in the launcher "
                        "command, not both" % (bind, own[0].split("=")[0], where))
    if kind is None:
        raise UserError("launcher (%s): %s is not a launcher locus knows (mpiexec, mpirun, srun): "
                        "name the rank count with {n}, e.g. '%s -np {n}'" % (where, argv[0], spec))
    if kind == "srun":
        if not any(a.startswith("--mpi") for a in argv):
            # MPICH speaks PMI-2; Debian's Open MPI only PMIx
            argv.append("--mpi=pmix" if build_mpi_library() == "openmpi" else "--mpi=pmi2")
        argv += ["-n", "{n}"]
        if ppn:
            argv.append("--ntasks-per-node=%d" % ppn)
        if bind:
            argv.append("--cpu-bind=%s" % ("cores" if bind == "core" else "none"))
    elif kind == "openmpi":
        argv += ["-n", "{n}"]
        if ppn:
            argv += ["--map-by", "ppr:%d:node" % ppn]
        if bind:
            argv += ["--bind-to", bind]
        # locus's tests run more ranks than cores; Open MPI refuses that (and
        # root) unless told
        if "--oversubscribe" not in argv:
            argv.append("--oversubscribe")
        if os.geteuid() == 0 and "--allow-run-as-root" not in argv:
            argv.append("--allow-run-as-root")
    else:
        argv += ["-n", "{n}"]
        if ppn:
            argv += ["-ppn", str(ppn)]
        if bind:
            argv += ["-bind-to", bind]
    return argv


def launcher_argv(n, template=None):
    """The command that starts n ranks (followed by the executable)."""
    t = template if template is not None else launcher_template()
    return [a.replace("{n}", str(n)) for a in t]


def mpiexec():
    """The launcher's first word (for messages)."""
    return launcher_template()[0]


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
        """Every key's line; a key given twice in one mapping is an error
        (YAML's loader would keep the last one without a word)."""
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for k, v in node.value:
                key = prefix + str(k.value)
                line = k.start_mark.line + 1
                if key in seen:
                    raise UserError("%s:%d: %s: given twice (first on line %d)" % (
                        self.path, line, key.replace("/", "."), seen[key]))
                seen[key] = line
                self.lines[key] = line
                self._walk(v, key + "/")
        elif isinstance(node, yaml.SequenceNode):
            for v in node.value:
                self._walk(v, prefix)

    def check_keys(self, mapping, known, what, path_prefix="", name_prefix=""):
        """UserError at the first key of `mapping` not in `known`, with its
        file:line and the nearest known key."""
        for k in mapping:
            if k not in known:
                hint = closest(str(k), list(known))
                raise UserError("%s: %s%s: unknown %s key%s (known: %s)" % (
                    self.where(path_prefix + str(k)), name_prefix, k, what,
                    " (did you mean '%s'?)" % hint if hint else "", ", ".join(known)))

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
        # the app's own lines without their "APP: error: " (the tool that
        # reports a UserError says "error" itself)
        text = "\n".join(l[len(app) + 9:] if l.startswith(app + ": error: ") else l
                         for l in p.stderr.strip().splitlines())
        raise UserError(text or "%s: --print-config failed" % app)
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


# ---------------------------------------------------------------- files

def ensure_space(path, nbytes):
    """Raises UserError when the file system of PATH has no room for NBYTES
    (and a little more): before a file is written, so that a full disk is
    one clear message and nothing is left."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        st = os.statvfs(d)
    except OSError:
        return  # the write itself says why
    need, avail = nbytes + 64 * 1024, st.f_bavail * st.f_frsize
    if avail < need:
        raise UserError("writing %s: needs %.1f MiB more, the file system has %.1f MiB free; nothing was "
                        "written under %s" % (path, need / 1048576.0, avail / 1048576.0, path))


def write_file(path, data):
    """DATA (text or bytes) into PATH: the space checked first, written as
    PATH.tmp and renamed; a failure is a UserError naming the file, and
    leaves neither PATH's new version nor the .tmp."""
    raw = data.encode() if isinstance(data, str) else data
    ensure_space(path, len(raw))
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise UserError("writing %s failed (%s); nothing was written under %s" % (tmp, e.strerror or e, path))


# ---------------------------------------------------------------- integrity

ATTRIBUTE_CHECKSUMS = "attribute_checksums"


def attribute_bytes(value):
    """The bytes an attribute's checksum covers (core/io/h5_common.hpp):
    text as UTF-8, numbers as little-endian float64 or int64."""
    import numpy as np
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    a = np.asarray(value)
    if a.dtype.kind == "f":
        return a.astype("<f8").tobytes()
    if a.dtype.kind in "iu":
        return a.astype("<i8").tobytes()
    raise ValueError("an attribute of type %s" % a.dtype)


def checksum_record(f):
    """The attribute_checksums text for the attributes an h5py file F has
    now (what a locus output records at commit)."""
    import zlib
    lines = []
    for obj in ["/"] + sorted(f):  # the root group and the datasets in it
        holder = f if obj == "/" else f[obj]
        for name in sorted(holder.attrs):
            if obj == "/" and name == ATTRIBUTE_CHECKSUMS:
                continue
            lines.append("%s\t%s\t%08x\n" % (obj, name, zlib.crc32(attribute_bytes(holder.attrs[name]))))
    text = "".join(sorted(lines, key=lambda l: tuple(l.split("\t")[:2])))
    return text + "record\t%08x\n" % zlib.crc32(text.encode())


def verify_file(path):
    """Problems with a locus HDF5 file's checksums ([] when it verifies):
    every attribute against its recorded CRC-32 and every dataset read in
    full (HDF5 checks each chunk's Fletcher32), a dataset without a
    checksum named too."""
    import zlib
    import h5py
    problems = []
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        return ["%s: cannot open (%s)" % (path, e)]
    with f:
        record = f.attrs.get(ATTRIBUTE_CHECKSUMS)
        if record is None:
            problems.append("%s: no attribute %s (written before checksums, or not a locus output)"
                            % (path, ATTRIBUTE_CHECKSUMS))
        else:
            if isinstance(record, bytes):
                record = record.decode()
            head, sep, last = record.rpartition("record\t")
            if not sep or last != "%08x\n" % zlib.crc32(head.encode()):
                problems.append("%s: attribute %s does not match its own checksum" % (path, ATTRIBUTE_CHECKSUMS))
            for line in head.splitlines():
                obj, name, crc = line.split("\t")
                label = "attribute " + (name if obj == "/" else obj + "/" + name)
                try:
                    holder = f if obj == "/" else f[obj]
                    value = holder.attrs[name]
                except KeyError:
                    problems.append("%s: %s is missing" % (path, label))
                    continue
                if "%08x" % zlib.crc32(attribute_bytes(value)) != crc:
                    problems.append("%s: %s does not match its checksum" % (path, label))
        for name in sorted(f):
            d = f[name]
            if not isinstance(d, h5py.Dataset):
                continue
            if d.size and not d.fletcher32:
                problems.append("%s: dataset %s has no checksum" % (path, name))
            try:
                d[...]
            except OSError as e:
                problems.append("%s: dataset %s: %s" % (path, name, "its Fletcher32 checksum does not match"
                                                        if "checksum" in str(e).lower() else e))
    return problems


# ---------------------------------------------------------------- run status

def status_path(config):
    """The status file a run with this effective config writes beside its
    output: <output.dir>/<output.name>.status (docs/outputs.md)."""
    out = (config or {}).get("output") or {}
    if "dir" not in out or "name" not in out:
        return None
    return os.path.join(str(out["dir"]), str(out["name"]) + ".status")


def read_status(path):
    """The status file as a dict ({'outcome': ..., 'exit_status': ...}), or
    None when there is none."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    st = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep:
            st[k.strip()] = v.strip()
    return st


def run_outcome(path, rc):
    """(exit status, message) of a run from the launcher's RC and the
    run's status file: a run that did not complete is non-zero whatever the
    launcher returned (MPICH's Hydra returns 0 for about a quarter of the
    runs it terminated). The message is "" when there is nothing to add."""
    st = read_status(path) if path else None
    if st is None:
        if rc != 0 or not path:
            return rc, ""
        return 1, "the run recorded no outcome in %s (ended before it started?): not completed" % path
    outcome = st.get("outcome", "")
    if outcome == "completed":
        try:
            own = int(st.get("exit_status", "1"))
        except ValueError:
            own = 1
        return (rc if rc != 0 else own), ""
    if outcome.startswith("terminated by signal"):
        try:
            code = 128 + int(outcome.split()[3])
        except (IndexError, ValueError):
            code = 1
        return code, "the run was %s (%s; the launcher returned %d)" % (outcome, path, rc)
    return (rc if rc > 0 else 1), "the run did not complete (%s says: %s; the launcher returned %d)" % (
        path, outcome or "nothing", rc)


def app_status_path(app, deck, sets):
    """The status file of a run of APP on DECK with SETS, or None when the
    deck does not load (the run itself then fails and says why)."""
    try:
        return status_path(effective_config(app, deck, sets))
    except (UserError, OSError, subprocess.SubprocessError, yaml.YAMLError):
        return None


def run_app(app, deck, ranks, sets, timeout, log_prefix=None, env=None, ppn=None, status=None):
    """Runs an app with the launcher (ppn: ranks per node for it, else the
    launcher's own setting). Returns (returncode, stdout, stderr, seconds):
    a run whose status file (STATUS, else the one its effective config
    names) does not say "completed" has a non-zero returncode and the
    reason at the end of stderr, whatever the launcher returned."""
    if status is None:
        status = app_status_path(app, deck, sets)
    if status:
        try:
            os.remove(status)
        except OSError:
            pass
    cmd = launcher_argv(ranks, launcher_template(ppn=ppn) if ppn else None) + [app_binary(app), deck, "--quiet"]
    for k, v in sets:
        cmd += ["--set", "%s=%s" % (k, v)]
    if log_prefix:
        # written first: the command of a run that is still going
        with open(log_prefix + ".cmd", "w") as f:
            f.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
    # the machine descriptor records the launch line
    env = dict(env if env is not None else os.environ, LOCUS_LAUNCH_LINE=" ".join(shlex.quote(c) for c in cmd))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = -1
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = "timed out after %d s" % timeout
    secs = time.monotonic() - t0
    if rc != -1:
        rc, why = run_outcome(status, rc)
        if why:
            err += "locus: error: %s\n" % why
    if log_prefix:
        with open(log_prefix + ".stdout", "w") as f:
            f.write(out)
        with open(log_prefix + ".stderr", "w") as f:
            f.write(err)
    return rc, out, err, secs


# The file CMake builds from tools/idle_yield.cpp (target locus_idle_yield)
# into the build's tools/.
IDLE_YIELD_LIB = "liblocus_idle_yield.so"


def idle_yield_env(ranks, env=None):
    """(environment, preloaded) for a run of `ranks` ranks that the
    default launcher starts on this host: with more ranks than the cores
    this process may use, the build's tools/liblocus_idle_yield.so is
    preloaded (tools/idle_yield.cpp: MPICH's busy wait then yields the
    core; a rank's results are unchanged, its times are not the machine's
    either way). Otherwise, and for a launcher of a site or of Slurm, the
    environment unchanged."""
    env = dict(env if env is not None else os.environ)
    lib = os.path.join(build_dir(), "tools", IDLE_YIELD_LIB)
    local = launcher_spec()[1] in ("default", "LOCUS_MPIEXEC")
    if not local or ranks <= len(os.sched_getaffinity(0)) or not os.path.exists(lib):
        return env, False
    have = [x for x in env.get("LD_PRELOAD", "").split(":") if x]
    env["LD_PRELOAD"] = ":".join([lib] + [x for x in have if x != lib])
    return env, True


def app_error(stderr, rc):
    """The line that says why a run failed: the app's own error line, not
    the launcher's epilogue (srun's 'task 0: Exited', Hydra's banner)."""
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    for l in reversed(lines):
        if ": error:" in l and not l.startswith(("srun:", "slurmstepd:", "[mpiexec@", "[proxy:")):
            return l
    # Open MPI's launcher says why in a box between rules of dashes: its
    # first sentence (which may run over two lines).
    rules = [i for i, l in enumerate(lines) if len(l) >= 10 and set(l) == {"-"}]
    if len(rules) >= 2:
        box = lines[rules[-2] + 1:rules[-1]]
        if box:
            text = " ".join(box[:2]) if not box[0].endswith((".", ":")) and len(box) > 1 else box[0]
            return text
    noise = ("srun:", "slurmstepd:", "[mpiexec@", "[proxy:", "=", "-", "BAD TERMINATION", "YOUR APPLICATION",
             "EXIT CODE", "CLEANING UP", "KILLED BY", "PID ")
    for l in reversed(lines):
        if not l.startswith(noise):
            return l
    return lines[-1] if lines else "exit status %d, no summary" % rc


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


def tool_exit(body):
    """Runs body() (a tool's work, returning its exit status): a UserError
    (bad input) is one error line and exit 2, a RuntimeError (a run that
    failed) one line and exit 1."""
    try:
        return body()
    except UserError as e:
        print("locus: error: %s" % e, file=sys.stderr)
        return 2
    except RuntimeError as e:
        print("locus: error: %s" % e, file=sys.stderr)
        return 1


def deck_sections(deck):
    """The top-level keys of a deck, in order (an app's deck starts with
    its section); UserError when it cannot be read or parsed."""
    try:
        with open(deck) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise UserError("%s: cannot read (%s)" % (deck, e.strerror))
    except yaml.YAMLError as e:
        raise UserError("%s: YAML syntax error: %s" % (deck, getattr(e, "problem", e)))
    return list(data) if isinstance(data, dict) else []


def fail(msg, code=2):
    print("locus: error: " + msg, file=sys.stderr)
    sys.exit(code)


def _main(argv):
    """`locuslib.py launcher N`: the launch command for N ranks, one word
    per line (the driver reads it); errors as one line, exit 2."""
    if len(argv) == 3 and argv[1] == "launcher" and argv[2].isdigit():
        try:
            for a in launcher_argv(int(argv[2])):
                print(a)
        except UserError as e:
            fail(str(e))
        return 0
    if len(argv) >= 4 and argv[1] == "status-path":
        # `locuslib.py status-path APP DECK [--set k=v]...`: the run's status
        # file (nothing printed when the deck does not load)
        sets = []
        rest = argv[4:]
        for i, a in enumerate(rest):
            if a in ("--set", "-s") and i + 1 < len(rest):
                k, _, v = rest[i + 1].partition("=")
                sets.append((k, v))
            elif a.startswith("--set="):
                k, _, v = a[6:].partition("=")
                sets.append((k, v))
        path = app_status_path(argv[2], argv[3], sets)
        if path:
            print(os.path.abspath(path))
        return 0
    if len(argv) == 4 and argv[1] == "outcome" and argv[3].lstrip("-").isdigit():
        # `locuslib.py outcome STATUS_FILE RC`: the run's exit status
        code, why = run_outcome(argv[2], int(argv[3]))
        if why:
            print("locus: error: " + why, file=sys.stderr)
        return code
    print("usage: locuslib.py launcher N | status-path APP DECK [--set k=v]... | outcome STATUS_FILE RC",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
