#!/usr/bin/env python3
"""Runs a GPU package's test list (tests.json, made by mktests.py) without
cmake or ctest: what ctest would do with the same properties (environment,
working directory, timeout, pass/fail/skip expressions, skip return code,
WILL_FAIL, RUN_SERIAL).

    runtests.py PKG_DIR OUT_DIR [-j N] [--regex R] [--exclude R]
                [--labels-exclude a,b] [--gpu-only] [--timeout-scale F]

Prints one line per test that did not pass (FAIL, TIMEOUT, SKIP with the
reason) and a summary; OUT_DIR/tests.log holds every test's output and
OUT_DIR/tests_summary.txt the lines. Exit 0 when nothing failed.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

GPU_NAMES = re.compile(r'gpu|cuda|managed|pinned|device', re.I)


def find_cmake():
    """A cmake for the tests that are cmake scripts: PATH, then Python's cmake package."""
    c = shutil.which('cmake')
    if c:
        return c
    for py in ('python3', sys.executable):
        try:
            out = subprocess.run([py, '-c', 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))'],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            if out and os.access(out, os.X_OK):
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('pkg')
    ap.add_argument('out')
    ap.add_argument('-j', type=int, default=os.cpu_count() or 4)
    ap.add_argument('--regex', default='')
    ap.add_argument('--exclude', default='')
    ap.add_argument('--labels-exclude', default='long,plugin,build')
    ap.add_argument('--gpu-only', action='store_true')
    ap.add_argument('--timeout-scale', type=float, default=1.0)
    a = ap.parse_args()
    pkg = os.path.realpath(a.pkg)
    os.makedirs(a.out, exist_ok=True)
    tests = json.load(open(os.path.join(pkg, 'tests.json')))['tests']
    subst = {'@BUILD@': os.path.join(pkg, 'tree'), '@SRC@': os.path.join(pkg, 'src')}
    cmake = find_cmake()
    devlibs = os.path.join(pkg, 'tree', 'devlibs')
    lines, lock = [], threading.Lock()
    log = open(os.path.join(a.out, 'tests.log'), 'w')
    counts = {'passed': 0, 'failed': 0, 'skipped': 0}

    def sub(s):
        for k, v in subst.items():
            s = s.replace(k, v)
        return s

    def note(kind, name, why):
        with lock:
            line = f'{kind:8s} {name}: {why}'
            lines.append(line)
            print(line, flush=True)
            counts['failed' if kind in ('FAIL', 'TIMEOUT') else 'skipped'] += 1

    excluded_labels = {l for l in a.labels_exclude.split(',') if l}
    todo = []
    for t in tests:
        name = t['name']
        if a.regex and not re.search(a.regex, name):
            continue
        if a.exclude and re.search(a.exclude, name):
            continue
        if a.gpu_only and not GPU_NAMES.search(name + ' ' + os.path.basename(t['program'])):
            continue
        hit = excluded_labels.intersection(t['labels'])
        if hit:
            note('SKIP', name, f'label {",".join(sorted(hit))} is left out here (--labels-exclude)')
            continue
        if t['command'] and t['command'][0] == '@CMAKE@' and cmake is None:
            note('SKIP', name, 'a cmake script and this host has no cmake (PATH or Python package)')
            continue
        missing = [x for x in t['command'] if x.startswith('@BUILD@') and not os.path.exists(sub(x))]
        if missing:
            note('SKIP', name, f'not in the package: {sub(missing[0])}')
            continue
        todo.append(t)

    def run(t):
        cmd = [cmake if (i == 0 and x == '@CMAKE@') else sub(x) for i, x in enumerate(t['command'])]
        env = dict(os.environ)
        env['LD_LIBRARY_PATH'] = devlibs + (':' + env['LD_LIBRARY_PATH'] if env.get('LD_LIBRARY_PATH') else '')
        for e in t['environment']:
            k, _, v = sub(e).partition('=')
            env[k] = v
        wd = sub(t['working_directory'])
        os.makedirs(wd, exist_ok=True)
        limit = float(t['timeout'] or 1500) * a.timeout_scale
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=wd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=limit, start_new_session=True)
            out, rc, timed_out = p.stdout.decode(errors='replace'), p.returncode, False
        except subprocess.TimeoutExpired as e:
            out, rc, timed_out = (e.stdout or b'').decode(errors='replace'), None, True
        took = time.time() - t0
        with lock:
            log.write(f'==== {t["name"]} rc={rc} {took:.1f}s\n$ {" ".join(cmd)}\n{out}\n')
        if timed_out:
            note('TIMEOUT', t['name'], f'after {limit:.0f} s')
            return
        if t['skip_return_code'] is not None and rc == t['skip_return_code']:
            note('SKIP', t['name'], f'exit {rc}: ' + (out.strip().splitlines() or [''])[-1][:160])
            return
        for r in t['skip_regex']:
            m = re.search(r, out, re.S)
            if m:
                # gtest: "file:line: Skipped" then the reason on the next line.
                ls = [l.strip() for l in out.splitlines()]
                why = next((ls[i + 1] for i, l in enumerate(ls[:-1]) if l.endswith(': Skipped') and ls[i + 1]),
                           next((l for l in ls if 'skip' in l.lower()), m.group(0)))
                note('SKIP', t['name'], why[:200])
                return
        if t['pass_regex']:
            ok = any(re.search(r, out, re.S) for r in t['pass_regex'])
        else:
            ok = rc == 0
        if any(re.search(r, out, re.S) for r in t['fail_regex']):
            ok = False
        if t['will_fail']:
            ok = not ok
        if ok:
            with lock:
                counts['passed'] += 1
        else:
            tail = ' | '.join(l.strip() for l in out.strip().splitlines()[-3:])
            note('FAIL', t['name'], f'exit {rc} ({took:.1f} s): {tail[:300]}')

    serial = [t for t in todo if t['run_serial']]
    parallel = [t for t in todo if not t['run_serial']]
    start = time.time()
    with cf.ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
        list(ex.map(run, parallel))
    for t in serial:
        run(t)
    summary = (f'tests: {counts["passed"]} passed, {counts["failed"]} failed, {counts["skipped"]} skipped '
               f'of {counts["passed"] + counts["failed"] + counts["skipped"]} in {time.time() - start:.0f} s')
    print(summary, flush=True)
    with open(os.path.join(a.out, 'tests_summary.txt'), 'w') as f:
        f.write('\n'.join(lines + [summary]) + '\n')
    return 1 if counts['failed'] else 0


if __name__ == '__main__':
    sys.exit(main())
