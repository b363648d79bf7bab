"""``python -m nvme_agent`` (mounted from a ConfigMap) or ``python -m hyperpod_inference.nvme_agent``.

Every pod start on a cold node waits for this process, so it starts and ends as a short-lived CLI should
(BENCHMARKS.md has the measurements):

- The cyclic garbage collector is off. Importing botocore and making an S3 client allocate objects that live for the
  whole run, and the collector would walk them again and again (~0.035 s of each start). A request leaves about six
  unreachable objects behind, so the one-shot commands leave it off; ``warm``, which loops for the pod's life, turns
  it back on once it has started.
- Once the command has returned, the process ends without the interpreter's teardown of the ~400 modules botocore
  imports (~0.05 s). All work is done and every file written and closed by then; only stdout and stderr are
  buffered, and they are flushed first. ``SystemExit`` (usage errors, SIGTERM) ends it the same way, with its code:
  worker threads stuck in a stalled read do not keep it alive.
"""

import gc
import os
import sys

gc.disable()

from .cli import main  # noqa: E402 - after gc.disable(): the imports are part of the start-up

try:
    code = main()
except SystemExit as exc:  # usage errors, SIGTERM: a worker stuck in a stalled read must not keep the process alive
    code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if not isinstance(exc.code, (int, type(None))):
        print(exc.code, file=sys.stderr)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
