"""PyTorch peer of aclnn-cpu-bench: times the bench's cases in PyTorch, in the same run.

aclnn-cpu-bench embeds this file at build time and runs it once per run as
    python3 torch_peer.py CASES.json OUT.tsv
CASES.json: {"threads": N, "cases": [{"id", "dtype", "reps", "warmup", "code"}, ...]}, where `code`
comes from the case's C++ definition and defines `fn`, a no-argument callable doing the case's work on
tensors it preallocates. OUT.tsv, tab-separated, one line per record:
    torch <version> <threads>                 first line when torch imports
    unavailable <reason>                      only line when it does not
    <id> ok <t1,t2,...ms>                     one per timed case
    <id> error - <message>                    one per case PyTorch cannot run
"""
import gc
import json
import sys
import time


def clean(text):
    return " ".join(str(text).split())[:300] or "error"


def main(argv):
    with open(argv[1]) as f:
        spec = json.load(f)
    out = open(argv[2], "w")
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no peer"
        out.write("unavailable\timport torch failed: %s\n" % clean(e))
        return 3
    torch.set_num_threads(int(spec.get("threads", 2)))
    torch.set_grad_enabled(False)
    out.write("torch\t%s\t%d\n" % (torch.__version__, torch.get_num_threads()))
    out.flush()

    for case in spec["cases"]:
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
            out.write("%s\tok\t%s\n" % (case["id"], ",".join("%.6f" % t for t in times)))
        except Exception as e:  # noqa: BLE001 - e.g. "not implemented for 'Half'"
            out.write("%s\terror\t-\t%s\n" % (case["id"], clean(e)))
        out.flush()
        ns.clear()
        gc.collect()
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
