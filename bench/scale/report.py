#!/usr/bin/env python3
"""bench/scale report: OUT/results.txt (run.sh's RESULT lines) -> markdown tables (stdout and
OUT/tables.md) and OUT/memory.png, OUT/setup.png (matplotlib, Agg backend).

    report.py OUT_DIR

Ratios are against the kernel's TCP in the same run, at the same connection count. A
missing cell (a run that failed, or a count a contender cannot reach) shows as n/a.
"""
import os
import sys

CONTENDERS = ["kernel", "ksock", "dpdk"]
LABELS = {
    "kernel": "kernel TCP, loopback",
    "ksock": "esock DDPMODE, ksock provider (loopback)",
    "dpdk": "esock DDPMODE, dpdk provider (net_memif)",
}


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            kv = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
            rows[(kv["contender"], int(kv["n"]))] = kv
    return rows


def num(row, key):
    if row is None or row.get("ok") != "1":
        return None
    try:
        return float(row.get(key, ""))
    except ValueError:
        return None


def held_kb(row):
    """Both processes' RSS and the kernel's slab growth while the connections are held."""
    parts = [num(row, k) for k in ("server_rss_kb", "client_rss_kb", "slab_kb")]
    return None if any(p is None for p in parts) else sum(parts)


def per_conn(rows, c, counts, n):
    """KiB per connection between the previous count and n (the fixed costs cancel)."""
    i = counts.index(n)
    if i == 0:
        return None
    a, b = held_kb(rows.get((c, counts[i - 1]))), held_kb(rows.get((c, n)))
    if a is None or b is None:
        return None
    return (b - a) / (n - counts[i - 1])


def cell(v, fmt="{:.0f}"):
    return "n/a" if v is None else fmt.format(v)


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else "{:.2f}x".format(a / b)


def tables(rows):
    counts = sorted({n for (_, n) in rows})
    out = []
    out.append("### Set-up rate (client connects completed per second, all N in flight up to 256)\n")
    out.append("| N | " + " | ".join(LABELS[c] for c in CONTENDERS) + " | dpdk / kernel |")
    out.append("|---:|" + "---:|" * (len(CONTENDERS) + 1))
    for n in counts:
        v = [num(rows.get((c, n)), "setup_rate") for c in CONTENDERS]
        out.append("| {} | {} | {} |".format(n, " | ".join(cell(x) for x in v), ratio(v[2], v[0])))
    out.append("\n### Memory per held connection, both ends (KiB): both processes' RSS plus the "
               "kernel's slab, as the slope from the previous count\n")
    out.append("| N | " + " | ".join(LABELS[c] for c in CONTENDERS) + " | dpdk / kernel |")
    out.append("|---:|" + "---:|" * (len(CONTENDERS) + 1))
    for n in counts:
        v = [per_conn(rows, c, counts, n) for c in CONTENDERS]
        out.append("| {} | {} | {} |".format(n, " | ".join(cell(x, "{:.1f}") for x in v),
                                             ratio(v[2], v[0])))
    out.append("\n### esock server: heap and RSS per held connection (KiB), heap left after the "
               "close (KiB, after `settled` s)\n")
    out.append("| N | provider | heap / conn | RSS / conn | heap left | settled s | echo s |")
    out.append("|---:|---|---:|---:|---:|---:|---:|")
    for n in counts:
        for c in ["ksock", "dpdk"]:
            r = rows.get((c, n))
            out.append("| {} | {} | {} | {} | {} | {} | {} |".format(
                n, c, cell(None if num(r, "server_heap_bytes_per_conn") is None
                           else num(r, "server_heap_bytes_per_conn") / 1024, "{:.1f}"),
                cell(None if num(r, "server_rss_bytes_per_conn") is None
                     else num(r, "server_rss_bytes_per_conn") / 1024, "{:.1f}"),
                cell(num(r, "server_heap_left_kb")), cell(num(r, "settled_s"), "{:.1f}"),
                cell(num(r, "echo_s"), "{:.2f}")))
    return "\n".join(out) + "\n"


def plots(rows, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib, no plots", file=sys.stderr)
        return
    counts = sorted({n for (_, n) in rows})
    for key, name, ylabel in [
        ("memory", "memory.png", "KiB per held connection, both ends (slope)"),
        ("setup_rate", "setup.png", "connections set up per second"),
    ]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for c in CONTENDERS:
            xs, ys = [], []
            for n in counts:
                v = per_conn(rows, c, counts, n) if key == "memory" else num(rows.get((c, n)), key)
                if v is not None and v > 0:
                    xs.append(n)
                    ys.append(v)
            if xs:
                ax.plot(xs, ys, marker="o", label=LABELS[c])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("concurrent connections")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "out"
    rows = load(os.path.join(out_dir, "results.txt"))
    text = tables(rows)
    with open(os.path.join(out_dir, "tables.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    plots(rows, out_dir)


if __name__ == "__main__":
    main()
