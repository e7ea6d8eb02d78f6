#!/usr/bin/env python3
"""Turns a build tree's ctest list into the GPU package's tests.json.

Run by scripts/gpu-package.sh on the build machine:
    mktests.py BUILD_DIR SRC_DIR OUT_DIR

Writes OUT_DIR/tests.json, OUT_DIR/sanitize.json and OUT_DIR/files.txt.

Reads `ctest --show-only=json-v1` of BUILD_DIR and writes one entry per test
with its command, environment, working directory and pass/fail/skip rules,
every path under BUILD_DIR written as @BUILD@ and under SRC_DIR as @SRC@ (the
runner, runtests.py, puts the package's folders there), the cmake binary as
@CMAKE@, and whether the test's program uses CUDA (links libcudart or carries
device code), so the GPU host can run only those.

sanitize.json lists every program of the tree with device code, and test_pool
(managed memory through the runtime API), each with one command that runs it
as its tests do: a gtest suite whole (less the million-item cases), an MPI
suite under its mpiexec line, a tool with a small job of its own (EXTRA), or
a reason why it is not run.

files.txt lists the build-tree files to package, relative to BUILD_DIR: what
the tests name, the programs above and the tools.
"""
import json
import os
import subprocess
import sys


def cuda_use(path, cache={}):
    """'device' (carries GPU code), 'runtime' (links libcudart), or ''."""
    if path in cache:
        return cache[path]
    kind = ''
    try:
        with open(path, 'rb') as f:
            if f.read(4) == b'\x7fELF':
                sec = subprocess.run(['objdump', '-h', path], capture_output=True, text=True).stdout
                if '.nv_fatbin' in sec:
                    kind = 'device'
                else:
                    deps = subprocess.run(['ldd', path], capture_output=True, text=True).stdout
                    if 'libcudart' in deps:
                        kind = 'runtime'
    except OSError:
        pass
    cache[path] = kind
    return kind


# Tools with device code that no test runs alone, and tools whose tests are
# cmake scripts: a small job each. '@MPI@' is the tests' mpiexec line.
EXTRA = {
    'tools/zap-verify/zap-verify': ['@P@', 'run', '--gen', '4096', '--verifier', 'gpu'],
    'tools/zap-info/zap-info': ['@P@'],
    # --no-nccl: under compute-sanitizer NCCL's own init fails its kernel
    # query (cudaErrorNoKernelImageForDevice inside ncclCommInitRank), which
    # memcheck counts as errors; the sanitizer is here for zap's device code.
    'tools/zap-perf/zap-perf': ['@MPI@', '-np', '2', '@P@', 'coll', '--mem', 'managed', '--max', '64K', '--reps', '1',
                                '--no-nccl'],
    'cuda/ed25519/zap-ed25519-bench': ['@P@', '--min-log2', '10', '--max-log2', '12', '--cpu-max-log2', '10',
                                       '--reps', '1'],
    'tools/zap-perf/zap-gpu-bounds': ['@P@', '1048576'],
    'tests/faults/zap-fault-rank': ['@MPI@', '-np', '2', '@P@', '--op', 'mixed', '--iters', '3', '--count', '64'],
    'tests/faults/test_soak': ['@P@'],
    'tools/zap-pool-bench/zap-pool-bench': None,
}
EXTRA_ENV = {'tests/faults/test_soak': ['ZAP_SOAK_SCALE=0.01']}  # a hundredth of the soak


def programs_with_device_code(build):
    found = []
    for root, dirs, names in os.walk(build):
        dirs[:] = [d for d in dirs if d not in ('CMakeFiles', 'Testing', 'devlibs')]
        for n in names:
            p = os.path.join(root, n)
            if '.so' in n or not os.access(p, os.X_OK) or os.path.islink(p):
                continue
            k = cuda_use(p)
            if k == 'device' or n == 'test_pool':
                found.append(p)
    return sorted(found)


def main():
    build, src, out_dir = (os.path.realpath(a) for a in sys.argv[1:4])
    out_json = os.path.join(out_dir, 'tests.json')
    files_list = os.path.join(out_dir, 'files.txt')
    cmake = None
    raw = subprocess.run(['ctest', '--show-only=json-v1'], cwd=build, capture_output=True, text=True, check=True)
    data = json.loads(raw.stdout)

    def rewrite(s):
        if not isinstance(s, str):
            return s
        # The build tree may sit inside the source tree: longest prefix first.
        for prefix, token in sorted(((build, '@BUILD@'), (src, '@SRC@')), key=lambda p: -len(p[0])):
            if s == prefix or s.startswith(prefix + '/'):
                return token + s[len(prefix):]
            s = s.replace('=' + prefix + '/', '=' + token + '/')
        return s

    files = set()
    tests = []
    for t in data['tests']:
        cmd = t.get('command') or []
        props = {p['name']: p['value'] for p in t.get('properties', [])}
        if cmd and os.path.basename(cmd[0]) == 'cmake':
            cmake = cmake or cmd[0]
        program, uses = '', ''
        for a in cmd:
            if a.startswith(build + '/') and os.path.isfile(a):
                files.add(os.path.relpath(a, build))
                if not program and os.access(a, os.X_OK):
                    program, uses = a, cuda_use(a)
            elif '=' in a and a.split('=', 1)[1].startswith(build + '/'):
                p = a.split('=', 1)[1]
                if os.path.isfile(p):
                    files.add(os.path.relpath(p, build))
                    if not program and os.access(p, os.X_OK):
                        program, uses = p, cuda_use(p)
        entry = {
            'name': t['name'],
            'command': ['@CMAKE@' if (i == 0 and os.path.basename(a) == 'cmake') else rewrite(a)
                        for i, a in enumerate(cmd)],
            'environment': [rewrite(e) for e in props.get('ENVIRONMENT', [])],
            'working_directory': rewrite(props.get('WORKING_DIRECTORY', build)),
            'timeout': props.get('TIMEOUT', 1500),
            'labels': props.get('LABELS', []),
            'pass_regex': props.get('PASS_REGULAR_EXPRESSION', []),
            'fail_regex': props.get('FAIL_REGULAR_EXPRESSION', []),
            'skip_regex': props.get('SKIP_REGULAR_EXPRESSION', []),
            'skip_return_code': props.get('SKIP_RETURN_CODE'),
            'will_fail': bool(props.get('WILL_FAIL', False)),
            'run_serial': bool(props.get('RUN_SERIAL', False)),
            'program': rewrite(program),
            'cuda': uses,
        }
        tests.append(entry)
    with open(out_json, 'w') as f:
        json.dump({'tests': tests}, f, indent=1)

    mpi = []
    for t in tests:
        c = t['command']
        if c and os.path.basename(c[0]) in ('mpiexec', 'mpirun'):
            mpi = c[:c.index('-np')] if '-np' in c else c[:1]
            break
    progs = []
    for p in programs_with_device_code(build):
        rel = os.path.relpath(p, build)
        files.add(rel)
        token = '@BUILD@/' + rel
        mine = [t for t in tests if t['program'] == token]
        entry = {'program': token, 'environment': [], 'working_directory': '@BUILD@'}
        if rel in EXTRA and EXTRA[rel]:
            entry['command'] = [x for a in EXTRA[rel] for x in (mpi if a == '@MPI@' else [token if a == '@P@' else a])]
            entry['environment'] = EXTRA_ENV.get(rel, [])
        elif mine and any(a.startswith('--gtest_filter=') for a in mine[0]['command']):
            entry['command'] = [token, '--gtest_filter=-*Million*']
            entry['environment'] = mine[0]['environment']
            entry['working_directory'] = mine[0]['working_directory']
        elif mine and token in mine[0]['command']:
            entry['command'] = mine[0]['command']
            entry['environment'] = mine[0]['environment']
            entry['working_directory'] = mine[0]['working_directory']
        else:
            entry['command'] = [token]
            entry['skip'] = 'no test runs it by itself and it has no small job in mktests.py EXTRA'
        progs.append(entry)
    for rel in EXTRA:
        if os.path.exists(os.path.join(build, rel)):
            files.add(rel)
    with open(os.path.join(out_dir, 'sanitize.json'), 'w') as f:
        json.dump({'programs': progs}, f, indent=1)
    with open(files_list, 'w') as f:
        for p in sorted(files):
            f.write(p + '\n')
    n_cuda = sum(1 for t in tests if t['cuda'])
    print(f'mktests: {len(tests)} tests ({n_cuda} run a program that uses CUDA), {len(progs)} programs for '
          f'compute-sanitizer, {len(files)} files')


if __name__ == '__main__':
    main()
