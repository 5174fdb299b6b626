"""Which system calls the sandbox kernel makes *after* its filter is installed, under real
programs — the evidence the allow-list (``components/tools/seccomp_policy.py``) is built from.

Runs a corpus of ordinary programs (template-quizzer and external-style final programs, and
programs exercising every module the sandbox lets code import) in sandbox episodes — a dedicated
kernel process and fork-server children — under ``strace -f``, and prints, per process role, the
system calls seen after the process installed its seccomp filter, with their counts, against the
allow-list. A call the corpus makes that the allow-list denies would break ordinary programs; a
call the allow-list allows that the corpus never makes is a candidate for removal.

    python benchmarks/syscalls.py

Needs ``strace`` (Debian: ``apt-get install strace``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODULE_PROGRAMS = [
    "import json\nprint(json.dumps({'a': [1, 2.5, None, True]}, sort_keys=True, indent=1))",
    "import math, cmath\nprint(math.sqrt(2), math.factorial(50) % 97, cmath.exp(1j))",
    "import re\nprint(re.findall(r'(\\w+)@(\\w+)', 'a@b c@d'), re.sub('x+', '-', 'axxbxc'))",
    "import collections, itertools, functools, operator\n"
    "c = collections.Counter('mississippi'); print(c.most_common(2))\n"
    "print(list(itertools.islice(itertools.permutations(range(5)), 3)), functools.reduce(operator.mul, range(1, 8)))",
    "import statistics\nprint(statistics.mean([1, 2, 3, 4]), statistics.median([5, 1, 3]), statistics.pstdev([1, 2, 3]))",
    "import datetime\nprint(datetime.date(2024, 2, 29) + datetime.timedelta(days=1), datetime.datetime.now().year > 2000)",
    "import string, textwrap, unicodedata, pprint\nprint(string.ascii_lowercase[:3], textwrap.fill('word ' * 30, 20))\n"
    "print(unicodedata.name('é'), unicodedata.normalize('NFKD', 'ﬁ'))\npprint.pprint({'k': list(range(30))})",
    "import heapq, bisect\nh = [5, 1, 4]; heapq.heapify(h); print(heapq.nsmallest(2, h), bisect.bisect([1, 3, 5], 4))",
    "import random\nrandom.seed(7); print(random.random(), random.sample(range(100), 3))\nr = random.Random(); print(r.random() < 1)",
    "import decimal, fractions\nprint(decimal.Decimal('1.1') + decimal.Decimal('2.2'), fractions.Fraction(3, 9))",
    "import dataclasses, enum, typing, numbers, copy\n@dataclasses.dataclass\nclass P:\n    x: int\n"
    "class C(enum.Enum):\n    A = 1\nprint(copy.deepcopy([P(1)]), C.A, isinstance(3, numbers.Number), typing.List[int])",
    "import hashlib\nprint(hashlib.sha256(b'abc').hexdigest()[:8], hashlib.md5(b'x').hexdigest()[:8])",
    "x = [list(range(1000)) for _ in range(2000)]\ny = sorted(sum(x, [])[:10 ** 6], reverse=True)\ndel x\nprint(len(y))",
    "s = 'a' * (50 * 1024 * 1024)\nprint(len(s))\ndel s",
    "try:\n    b = bytearray(2 ** 40)\nexcept MemoryError:\n    print('memory error')",
    "def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept RecursionError:\n    print('recursion')",
    "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print(type(e).__name__)\nraise ValueError('boom')",
    "print('x' * 100000)",
    "import json\nprint(json.loads('[' * 50 + ']' * 50))",
    "r = cypher('MATCH (n) RETURN count(n) AS n')\nprint(r.rows, r.records(), len(r), list(r))\nmark_evidence(r)",
    "s = select_schema()\nprint(sorted(s))",
    "import gc\ngc.collect(); print(gc.isenabled())",
]


def _corpus(tmp: Path) -> dict[str, list[str]]:
    """database folder -> programs: template-quizzer programs and the module tour on a demo
    graph, the external-style programs on the restaurant-guide graph."""
    import importlib.util

    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo, read_source

    spec = importlib.util.spec_from_file_location("restaurants_harness", ROOT / "tests/data/restaurants/harness.py")
    harness = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = harness
    spec.loader.exec_module(harness)
    from components.quizzer.template import TemplateQuizzer

    academic, restaurants = tmp / "academic", tmp / "restaurants"
    load_graph(demo.generate("academic", seed=0, scale=400), academic)
    load_graph(read_source("cypher-script", str(harness.GRAPH)), restaurants)
    with LadybugBackend(academic) as b:
        templates = [
            c.final_program
            for c in TemplateQuizzer(ReadOnlyQueryPath(b, schema=b.schema()), b.schema(), seed=3).generate(40)
        ]
    with LadybugBackend(restaurants) as b:
        qp = ReadOnlyQueryPath(b, schema=b.schema())
        external = [c.candidate.final_program for c in harness.valid_cases(qp, b.schema())]
    return {str(academic): templates + MODULE_PROGRAMS, str(restaurants): external}


_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.tools.sandbox import SandboxEpisode, SandboxLimits, SandboxServer
corpus = json.load(open(sys.argv[2]))
limits = SandboxLimits(**json.loads(sys.argv[3]))
for db, programs in corpus.items():
    with LadybugBackend(db) as b:
        qp = ReadOnlyQueryPath(b, schema=b.schema())
        for p in programs:  # dedicated kernel processes
            with SandboxEpisode(qp, schema=b.schema(), limits=limits) as ep:
                ep.run(p)
        with SandboxServer(limits) as srv:  # fork-server children
            for p in programs:
                with SandboxEpisode(qp, schema=b.schema(), limits=limits, server=srv) as ep:
                    ep.run(p)
"""

_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)\(")


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    if shutil.which("strace") is None:
        sys.exit("strace is not installed (Debian: apt-get install strace)")
    from components.tools.seccomp_policy import EPISODE_RULES, EPISODE_SYSCALLS, SERVER_EXTRA, SERVER_RULES

    with tempfile.TemporaryDirectory(prefix="gd-trace-") as tmp:
        corpus = _corpus(Path(tmp))
        programs = [p for ps in corpus.values() for p in ps]
        (Path(tmp) / "corpus.json").write_text(json.dumps(corpus))
        out = Path(tmp) / "trace"
        limits = "{}"
        subprocess.run(
            [
                "strace",
                "-f",
                "-qq",
                "-o",
                str(out),
                sys.executable,
                "-c",
                _CHILD,
                str(ROOT),
                str(Path(tmp) / "corpus.json"),
                limits,
            ],
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        after: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        filtered: set[str] = set()
        for line in out.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            pid, call = m.groups()
            if call == "prctl" and "PR_SET_SECCOMP" in line and line.rstrip().endswith("= 0"):
                filtered.add(pid)  # the kernel installs its filters with prctl (libseccomp's probes use seccomp())
                continue
            if pid in filtered:
                after[pid][call] += 1
    total: collections.Counter = collections.Counter()
    for counts in after.values():
        total.update(counts)
    plain = set(EPISODE_SYSCALLS) | set(SERVER_EXTRA)
    with_args = {name for name, _ in EPISODE_RULES} | {name for name, _ in SERVER_RULES}
    allowed = plain | with_args
    print(f"{len(programs)} programs; {len(after)} filtered processes traced")
    print(f"{'system call':<22}{'calls':>8}  allow-list")
    for call, n in sorted(total.items(), key=lambda kv: -kv[1]):
        verdict = "allowed" if call in plain else "allowed (argument filter)" if call in with_args else "denied"
        print(f"{call:<22}{n:>8}  {verdict}")
    unused = sorted(allowed - set(total))
    print(f"allowed but not seen: {unused}")


if __name__ == "__main__":
    main()
