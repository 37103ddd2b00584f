"""The sandbox's first code inside the sandbox: `policies.sandbox.process` passes this file's text
to the interpreter with ``-c``, as the command bubblewrap executes; never imported by the app.
Standard library only.

Arguments: the status pipe's descriptor, CPU seconds, address-space bytes, file-size bytes,
open files, processes, and the directory of the packages programs may import ("" for none).
In order, it

1. checks that the seccomp filter is in force (``Seccomp: 2``) and ``no_new_privs`` is set —
   otherwise it reports nothing and exits 125: the program never runs unfiltered;
2. sets the resource limits, soft = hard, so the program cannot raise them: CPU seconds,
   address space, largest file, open files, no core dumps, and processes — ``RLIMIT_NPROC``
   counts per user namespace, and each run has its own, so set here it bounds this run's
   processes alone (for a host root, which it does not bind, the caller's pids cgroup does);
3. closes every descriptor but 0–2, reports ``isolated`` on the status pipe and closes it;
4. puts the packages' directory first on ``sys.path`` and runs ``program.py`` from the
   scratch directory as ``__main__`` in a fresh module, as ``python program.py`` would (so a
   program sees none of these names).
"""

import os
import resource
import sys
import types

SETUP_FAILED = 125


def _status(key: str) -> str:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return ""


def _main(argv: list[str]) -> None:
    status_fd = int(argv[0])
    cpu, memory, fsize, nofile, nproc = (int(a) for a in argv[1:6])
    packages = argv[6]
    if _status("Seccomp") != "2" or _status("NoNewPrivs") != "1":
        sys.stderr.write("sandbox setup failed: the seccomp filter is not in force\n")
        os._exit(SETUP_FAILED)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.write(status_fd, b"isolated\n")
    os.closerange(3, 1 << 16)  # the status pipe too: nothing of the caller stays open
    main = types.ModuleType("__main__")
    main.__file__ = "program.py"
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.argv = ["program.py"]
    if packages:
        sys.path.insert(0, packages)
    with open("program.py", "rb") as fh:
        code = compile(fh.read(), "program.py", "exec")
    exec(code, main.__dict__)


_main(sys.argv[1:])
