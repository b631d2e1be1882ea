#!/usr/bin/env python3
"""bench/scale web report: OUT/web.txt (web.sh's RESULT lines) -> markdown tables (stdout and
OUT/web.md) and OUT/web_size.png, OUT/web_conns.png, OUT/web_redis.png (matplotlib, Agg).

    web_report.py OUT_DIR

Ratios are against the kernel's TCP in the same run. A missing cell shows as n/a.
"""
import os
import sys

CONTENDERS = ["kernel", "dpdk", "dpdk-fork"]
LABELS = {
    "kernel": "kernel TCP, loopback",
    "dpdk": "esock dpdk, run-to-completion",
    "dpdk-fork": "esock dpdk, nginx master + worker",
}


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                rows.append(dict(w.split("=", 1) for w in line.split()[1:] if "=" in w))
    return rows


def pick(rows, who, **match):
    for r in rows:
        if r.get("contender") == who and all(r.get(k) == str(v) for k, v in match.items()):
            return r
    return None


def num(row, key):
    try:
        return float(row[key]) if row and row.get(key, "") != "" else None
    except ValueError:
        return None


def fmt(v, digits=0):
    return "n/a" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def cell(row):
    """requests/s, p99 and CPU seconds (server + client) in one cell."""
    rps, p99 = num(row, "rps"), num(row, "p99_us")
    cpu = [num(row, "server_cpu_s"), num(row, "client_cpu_s")]
    if rps is None:
        return "n/a"
    err = " **errors**" if row.get("errors") not in (None, "", "0") else ""
    cpus = "+".join(fmt(c, 1) for c in cpu)
    return f"{rps:.0f}/s, p99 {fmt(p99)} us, cpu {cpus} s{err}"


def table(rows, who_list, keys, label, **fixed):
    head = [label] + [LABELS[w] for w in who_list] + [f"{w} / kernel" for w in who_list[1:]]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        match = dict(fixed)
        match.update(k[1])
        cells = [pick(rows, w, **match) for w in who_list]
        base = num(cells[0], "rps")
        line = [k[0]] + [cell(c) for c in cells] + [ratio(num(c, "rps"), base) for c in cells[1:]]
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out)


def size_label(n):
    n = int(n)
    return f"{n // 1048576} MiB" if n >= 1048576 else f"{n // 1024} KiB"


def plot(rows, who_list, xs, key, fixed, xlabel, path, xticks):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for w in who_list:
        pts = [(x, pick(rows, w, **{key: x}, **fixed)) for x in xs]
        pts = [(x, r) for x, r in pts if num(r, "rps") is not None]
        if not pts:
            continue
        a.plot([float(x) for x, _ in pts], [num(r, "rps") for _, r in pts], "o-", label=LABELS[w])
        b.plot([float(x) for x, _ in pts], [num(r, "p99_us") for _, r in pts], "o-", label=LABELS[w])
    for ax, yl in ((a, "requests/s"), (b, "p99 latency (us)")):
        ax.set_xscale("log")
        ax.set_xticks([float(x) for x in xs])
        ax.set_xticklabels(xticks)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(yl)
        ax.grid(True, alpha=0.3)
    a.set_yscale("log")
    b.set_yscale("log")
    a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_redis(rows, who_list, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    keys = [(op, c) for op in ("SET", "GET") for c in ("1", "16")]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(who_list))
    for i, w in enumerate(who_list):
        vals = [num(pick(rows, w, test=f"redis-{op}", conns=c), "rps") or 0 for op, c in keys]
        ax.bar([j + i * width for j in range(len(keys))], vals, width, label=LABELS[w])
    ax.set_xticks([j + width * (len(who_list) - 1) / 2 for j in range(len(keys))])
    ax.set_xticklabels([f"{op}, {c} client(s)" for op, c in keys])
    ax.set_ylabel("operations/s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
    rows = load(os.path.join(out, "web.txt"))
    who = [w for w in CONTENDERS if any(r.get("contender") == w for r in rows)]
    sizes = sorted({r["size"] for r in rows if r.get("test") == "wrk-size"}, key=int)
    conns = sorted({r["conns"] for r in rows if r.get("test") == "wrk-conns"}, key=int)
    md = ["### nginx, wrk keep-alive, 16 connections: against file size", ""]
    md.append(table(rows, who, [(size_label(s), {"size": s}) for s in sizes], "file",
                    test="wrk-size"))
    md += ["", "### nginx, wrk keep-alive, 1 KiB: against connections", ""]
    md.append(table(rows, who, [(c, {"conns": c}) for c in conns], "connections",
                    test="wrk-conns"))
    md += ["", "### nginx, ab (HTTP/1.0, a connection per request), 1 KiB, 16 at a time", ""]
    md.append(table(rows, who, [("1 KiB", {})], "file", test="ab"))
    rwho = [w for w in who if any(r.get("contender") == w and r.get("test", "").startswith("redis")
                                  for r in rows)]
    md += ["", "### redis-server, redis-benchmark (50000 requests)", ""]
    md.append(table(rows, rwho, [(f"{op}, {c} client(s)", {"test": f"redis-{op}", "conns": c})
                                 for op in ("SET", "GET") for c in ("1", "16")], "operation"))
    text = "\n".join(md) + "\n"
    print(text)
    with open(os.path.join(out, "web.md"), "w") as f:
        f.write(text)
    plot(rows, who, sizes, "size", {"test": "wrk-size"}, "file size (16 connections)",
         os.path.join(out, "web_size.png"), [size_label(s) for s in sizes])
    plot(rows, who, conns, "conns", {"test": "wrk-conns"}, "connections (1 KiB)",
         os.path.join(out, "web_conns.png"), conns)
    plot_redis(rows, rwho, os.path.join(out, "web_redis.png"))


if __name__ == "__main__":
    main()
