#!/usr/bin/python3
"""./locus device-check: build locus against a given Kokkos, show the device
code in each app binary, and run each app's small reference deck.

    ./locus device-check --kokkos-root DIR [--build-dir D] [--arch sm_90] [-n RANKS] [--jobs J]

Steps:
  1. configure and build locus against the Kokkos installed in DIR (its
     lib/cmake/Kokkos or lib64/cmake/Kokkos). A Kokkos with CUDA is compiled
     with its bin/nvcc_wrapper (the host compiler underneath: the MPI C++
     wrapper, NVCC_WRAPPER_DEFAULT_COMPILER unless already set); a Kokkos
     with HIP with hipcc; a host Kokkos with the default compiler.
  2. list the device code of each app binary (CUDA: cuobjdump --list-elf,
     and the kernels of the app's own namespace among the ELF symbols);
     with --arch, that architecture must be among the ELF files.
  3. when a device is present (CUDA: nvidia-smi -L lists a GPU; HIP:
     rocm-smi), or the Kokkos is a host one, run inputs/<app>/small.yaml of
     each app and print its verdict and where its kernels ran. Without a
     device the runs are skipped, and said so.

Exit status: 0 when everything that could be done passed (runs skipped for
want of a device included), 1 when a build, a device-code check or a run
failed, 2 for bad arguments.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPS = ["heat3d", "poisson5pt", "spmv", "tensor_contract"]
# The mangled name of each app's namespace: kernels of its own carry it.
APP_NAMESPACE = {"heat3d": "6heat3d", "poisson5pt": "10poisson5pt", "spmv": "4spmv",
                 "tensor_contract": "15tensor_contract"}


class UsageError(Exception):
    pass


def say(msg):
    print("device-check: " + msg, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="./locus device-check",
        description="Build locus against the Kokkos in DIR, list the device code of each app binary "
        "(cuobjdump), and run each app's small reference deck (inputs/<app>/small.yaml) when a device "
        "is present; a table of the verdicts at the end. Without a GPU the runs are skipped and said so.",
        epilog="Exit status: 0 passed (runs skipped for want of a device included), 1 a build, device-code "
        "check or run failed, 2 bad arguments. Example: ./locus device-check --kokkos-root "
        "/opt/kokkos-cuda --arch sm_90")
    p.add_argument("--kokkos-root", required=True, metavar="DIR",
                   help="the Kokkos installation prefix (holds lib/cmake/Kokkos or lib64/cmake/Kokkos)")
    p.add_argument("--build-dir", metavar="D", default=os.path.join(ROOT, "build-device"),
                   help="where to configure and build (default: build-device/ in the repository)")
    p.add_argument("--arch", metavar="ARCH",
                   help="a device architecture the binaries must hold code for, e.g. sm_90 (CUDA); "
                   "default: any")
    p.add_argument("-n", "--ranks", type=int, default=1, help="MPI ranks per run (default 1)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (default 2)")
    p.add_argument("--cuobjdump", metavar="FILE",
                   help="the cuobjdump to list device code with (default: cuobjdump on PATH, else next to nvcc)")
    p.add_argument("--no-build", action="store_true",
                   help="use the build directory as it is (configured and built before)")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        raise SystemExit(0 if e.code == 0 else 2)
    if a.ranks < 1:
        raise UsageError("-n/--ranks: a positive number of ranks (got %d)" % a.ranks)
    if a.jobs < 1:
        raise UsageError("--jobs: a positive number (got %d)" % a.jobs)
    if a.cuobjdump is not None and not os.path.isfile(a.cuobjdump):
        raise UsageError("--cuobjdump %s: no such file" % a.cuobjdump)
    if a.arch is not None and not re.fullmatch(r"(sm|compute)_[0-9]+[a-z]?|gfx[0-9a-f]+", a.arch):
        raise UsageError("--arch: an architecture such as sm_90 or gfx90a (got '%s')" % a.arch)
    return a


def kokkos_config(root):
    """The Kokkos installed in ROOT: (its CMake config directory, devices, architectures)."""
    if not os.path.isdir(root):
        raise UsageError("--kokkos-root %s: no such directory" % root)
    for lib in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
        d = os.path.join(root, lib, "cmake", "Kokkos")
        files = [os.path.join(d, f) for f in ("KokkosConfigCommon.cmake", "KokkosConfig.cmake")]
        if os.path.isfile(files[1]):
            text = "".join(open(f, encoding="utf-8", errors="replace").read() for f in files if os.path.isfile(f))

            def listed(name):
                m = re.search(r"set\(%s\s+([^)]*)\)" % name, text, re.IGNORECASE)
                return [x for x in re.split(r"[;\s\"]+", m.group(1)) if x] if m else []

            return d, listed("Kokkos_DEVICES"), listed("Kokkos_ARCH")
    raise UsageError("--kokkos-root %s: not a Kokkos installation (no lib/cmake/Kokkos/KokkosConfig.cmake "
                     "or lib64/...; give the prefix Kokkos was installed into)" % root)


def mpi_cxx():
    for c in ("mpicxx.mpich", "mpicxx"):
        if shutil.which(c):
            return c
    return None


def run_logged(cmd, log, env):
    with open(log, "a", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode


def build(a, devices, env):
    os.makedirs(a.build_dir, exist_ok=True)
    log = os.path.join(a.build_dir, "device-check-build.log")
    open(log, "w").close()
    args = ["cmake", "-S", ROOT, "-B", a.build_dir, "-DCMAKE_BUILD_TYPE=Release",
            "-DKokkos_ROOT=" + os.path.abspath(a.kokkos_root), "-DLOCUS_TESTS=OFF"]
    if shutil.which("mpicxx.mpich"):
        args.append("-DLOCUS_MPI=mpich")
    if "CUDA" in devices:
        wrapper = os.path.join(a.kokkos_root, "bin", "nvcc_wrapper")
        if not os.path.isfile(wrapper):
            raise UsageError("--kokkos-root %s: a CUDA Kokkos without bin/nvcc_wrapper" % a.kokkos_root)
        args.append("-DCMAKE_CXX_COMPILER=" + os.path.abspath(wrapper))
        if not env.get("NVCC_WRAPPER_DEFAULT_COMPILER") and mpi_cxx():
            env["NVCC_WRAPPER_DEFAULT_COMPILER"] = mpi_cxx()
    elif "HIP" in devices:
        if not shutil.which("hipcc"):
            raise UsageError("a HIP Kokkos needs hipcc on PATH")
        args.append("-DCMAKE_CXX_COMPILER=hipcc")
    say("configuring %s (log: %s)" % (a.build_dir, log))
    if run_logged(args, log, env) != 0:
        return "configure failed (log: %s)" % log
    say("building with %d jobs (log: %s)" % (a.jobs, log))
    if run_logged(["cmake", "--build", a.build_dir, "-j", str(a.jobs)], log, env) != 0:
        return "build failed (log: %s)" % log
    return None


def find_cuobjdump(a):
    if a.cuobjdump:
        return a.cuobjdump
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    for c in (shutil.which("cuobjdump"), os.path.join(os.path.dirname(nvcc), "cuobjdump")):
        if c and os.path.isfile(c):
            return c
    return None


def device_code(a, devices, app):
    """(ok, text) for APP's binary: the device code it holds."""
    binary = os.path.join(a.build_dir, "apps", app, app)
    if not os.path.isfile(binary):
        return False, "no binary %s" % binary
    if "CUDA" not in devices:
        if "HIP" in devices:
            return True, "HIP: not listed (no cuobjdump for HIP)"
        return True, "host Kokkos: no device code expected"
    tool = find_cuobjdump(a)
    if not tool:
        return False, "cuobjdump not found (on PATH, next to nvcc, or --cuobjdump FILE)"
    p = subprocess.run([tool, "--list-elf", binary], capture_output=True, text=True)
    elves = re.findall(r"ELF file\s+\d+:\s*(\S+)", p.stdout)
    archs = sorted(set(re.findall(r"\.(sm_[0-9]+[a-z]?)\.cubin", " ".join(elves))))
    if p.returncode != 0 or not elves:
        return False, "no device code (cuobjdump --list-elf: %s)" % (p.stderr.strip() or "no ELF file")
    s = subprocess.run([tool, "--dump-elf-symbols", binary], capture_output=True, text=True)
    ns = APP_NAMESPACE[app]
    own = sorted({m for m in re.findall(r"\b(_Z\S+)", s.stdout) if ns in m})
    text = "%d ELF files (%s), %d kernels of %s" % (len(elves), ", ".join(archs), len(own), app)
    if a.arch and a.arch not in archs:
        return False, text + "; none for %s" % a.arch
    if not own:
        return False, text + "; expected its kernels as device code"
    return True, text


def device_present(devices):
    """(present, how it was found or why not)."""
    if "CUDA" in devices:
        if not shutil.which("nvidia-smi"):
            return False, "nvidia-smi not found"
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        gpus = [line for line in p.stdout.splitlines() if line.startswith("GPU ")]
        if p.returncode != 0 or not gpus:
            return False, "nvidia-smi -L: " + ((p.stderr or p.stdout).strip().splitlines() or ["no GPU"])[0]
        return True, gpus[0]
    if "HIP" in devices:
        if not shutil.which("rocm-smi"):
            return False, "rocm-smi not found"
        p = subprocess.run(["rocm-smi", "--showid"], capture_output=True, text=True)
        if p.returncode != 0 or "GPU" not in p.stdout:
            return False, "rocm-smi --showid: no GPU"
        return True, "rocm-smi lists a GPU"
    return True, "host Kokkos (the runs use the host)"


def mpiexec(build_dir):
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if os.path.isfile(cache):
        m = re.search(r"^MPIEXEC_EXECUTABLE:FILEPATH=(.+)$", open(cache, encoding="utf-8").read(), re.M)
        if m and os.path.isfile(m.group(1).strip()):
            return m.group(1).strip()
    return shutil.which("mpiexec.mpich") or shutil.which("mpiexec") or "mpiexec"


def run_deck(a, app, env):
    """(ok, verdict, where the kernels ran) of APP's small deck: ok for a clean exit with the verdict pass,
    or "not checked" where the deck checks nothing."""
    deck = os.path.join(ROOT, "inputs", app, "small.yaml")
    out = os.path.join(a.build_dir, "device-check-output")
    cmd = [mpiexec(a.build_dir), "-n", str(a.ranks), os.path.join(a.build_dir, "apps", app, app), deck,
           "--set", "output.dir=" + out, "--summary", "json", "--quiet"]
    log = os.path.join(a.build_dir, "device-check-%s.log" % app)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(log, "w", encoding="utf-8") as f:
        f.write("$ %s\n--- stdout\n%s\n--- stderr\n%s" % (" ".join(cmd), p.stdout, p.stderr))
    try:
        s = json.loads(p.stdout[p.stdout.index("{"):])["locus_summary"]
    except (ValueError, KeyError):
        return False, "no summary (exit %d; log: %s)" % (p.returncode, log), ""
    verdict = str((s.get("validation") or {}).get("verdict", "none"))
    kernels = (s.get("results") or {}).get("kernels") or {}
    where = " / ".join(str(kernels[k]) for k in ("space", "memory_space") if k in kernels)
    # "not checked": the deck asks for no check (e.g. a fixed iteration count)
    ok = p.returncode == 0 and verdict in ("pass", "not checked")
    return ok, verdict if p.returncode == 0 else "%s (exit %d; log: %s)" % (verdict, p.returncode, log), where


def main(argv):
    try:
        a = parse_args(argv)
        cmake_dir, devices, archs = kokkos_config(a.kokkos_root)
    except UsageError as e:
        print("device-check: error: %s" % e, file=sys.stderr)
        return 2
    say("Kokkos %s: devices %s, architectures %s" % (a.kokkos_root, ";".join(devices) or "?",
                                                     ";".join(archs) or "none"))
    env = dict(os.environ)
    failures = []
    if not a.no_build:
        try:
            err = build(a, devices, env)
        except UsageError as e:
            print("device-check: error: %s" % e, file=sys.stderr)
            return 2
        if err:
            say(err)
            return 1
    rows = []
    for app in APPS:
        ok, text = device_code(a, devices, app)
        if not ok:
            failures.append("%s: %s" % (app, text))
        rows.append([app, text, "", ""])
    present, how = device_present(devices)
    if present:
        say("device: %s" % how)
        for row in rows:
            ok, verdict, where = run_deck(a, row[0], env)
            if not ok:
                failures.append("%s: small deck %s" % (row[0], verdict))
            row[2], row[3] = verdict, where
    else:
        say("runs skipped: no device found (%s)" % how)
        for row in rows:
            row[2] = "skipped (no device)"
    head = ["app", "device code", "small deck verdict", "kernels ran in"]
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(4)]
    for r in [head, ["-" * w for w in widths]] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    for f in failures:
        say("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
