"""PyTorch peer of aclnn-cpu-bench: times the bench's cases in PyTorch, side by side in the same run.

aclnn-cpu-bench embeds this file at build time and starts it once per run:
    python3 torch_peer.py THREADS
Protocol (one line each way per case; the bench sends them once all of its own cases are timed):
    peer -> bench, first:  "torch\t<version>\t<threads>"  or  "unavailable\t<reason>" (then exits)
    bench -> peer:         {"id", "dtype", "reps", "warmup", "code"} as one JSON line
    peer -> bench:         "<id>\tok\t<t1,t2,... ms>"  or  "<id>\terror\t-\t<message>"
`code` comes from the case's C++ definition; it defines `fn`, a no-argument callable doing the case's
work on tensors it preallocates (names available: torch, dtype, randn(shape), zeros(shape)).
Anything the code prints goes to stderr; stdout carries only the protocol.
"""
import gc
import json
import os
import sys
import time


def clean(text):
    return " ".join(str(text).split())[:300] or "error"


def main(argv):
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def say(line):
        proto.write(line + "\n")
        proto.flush()

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no peer"
        say("unavailable\timport torch failed: %s" % clean(e))
        return 3
    torch.set_num_threads(int(argv[1]) if len(argv) > 1 else 2)
    torch.set_grad_enabled(False)
    say("torch\t%s\t%d" % (torch.__version__, torch.get_num_threads()))

    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        dtype = getattr(torch, case["dtype"])

        def randn(shape, dtype=dtype):
            # uniform [-1, 1) like the bench's own inputs; contiguous, written once (first touch)
            return (torch.rand(shape, dtype=torch.float32) * 2 - 1).to(dtype).contiguous()

        def zeros(shape, dtype=dtype):
            t = torch.empty(shape, dtype=dtype)
            t.fill_(0)
            return t

        ns = {"torch": torch, "dtype": dtype, "randn": randn, "zeros": zeros}
        try:
            exec(case["code"], ns)  # noqa: S102 - code comes from the bench binary itself
            fn = ns["fn"]
            for _ in range(int(case.get("warmup", 1))):
                fn()
            times = []
            for _ in range(int(case["reps"])):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            reply = "%s\tok\t%s" % (case["id"], ",".join("%.6f" % t for t in times))
        except Exception as e:  # noqa: BLE001 - e.g. "not implemented for 'Half'"
            reply = "%s\terror\t-\t%s" % (case["id"], clean(e))
        # Free the case's tensors before replying: the bench times its next case as soon as the
        # reply arrives, and unmapping large buffers then would slow that case down.
        ns.clear()
        gc.collect()
        say(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
