#!/usr/bin/env python3
"""bench/azsdp report: OUT/results.txt (bench_azsdp's RESULT lines) -> markdown tables
(stdout) and one PNG per experiment in OUT (matplotlib, Agg backend).

    report.py OUT_DIR

A missing cell shows as n/a; nothing here judges a number.
"""
import os
import sys

CONTENDERS = ["kernel", "copy", "sync", "async", "async-cow"]
LABELS = {
    "kernel": "kernel TCP (loopback)",
    "copy": "DDPMODE copy (BSDP)",
    "sync": "DDPMODE sync (ZSDP)",
    "async": "DDPMODE async (AZ-SDP)",
    "async-cow": "DDPMODE async-cow (AZ-SDP, copy-on-write)",
}
# experiment: (title, x label, y label, x is the size, log x, log y)
EXPERIMENTS = {
    "latency": ("Ping-pong latency (Fig. 6a)", "message size", "us per round trip", True, True, True),
    "bandwidth": ("One-way throughput (Fig. 6b)", "message size", "MB/s", True, True, False),
    "overlap": ("Throughput with computation between writes (Fig. 7)", "computation per write (us)",
                "MB/s", False, False, False),
    "touch": ("Sender writes into its buffer after every W writes, receiver reads its own after every W reads (Fig. 8)",
              "window W (writes between touches)", "MB/s", False, True, False),
    "hotspot": ("Hot-spot: 4 clients ping-pong one server at once (Fig. 9)",
                "message size", "mean us per round trip", True, True, True),
    "streams": ("Connections streaming 64 KiB writes at once (Fig. 10a)", "connections",
                "aggregate MB/s", False, True, False),
}


def size_label(n):
    n = int(n)
    if n >= 1 << 20:
        return f"{n >> 20} MiB"
    if n >= 1 << 10:
        return f"{n >> 10} KiB"
    return f"{n} B"


def load(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            kv = dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)
            rows.append(kv)
    return rows


def cells(rows, exp):
    """{(size, x): {contender: (value, cpu_client, cpu_server)}} in run order."""
    out = {}
    for r in rows:
        if r.get("exp") != exp:
            continue
        key = (int(r["size"]), float(r["x"]))
        v = float(r["value"])
        out.setdefault(key, {})[r["contender"]] = (
            v if v >= 0 else None, float(r.get("cpu_client", 0)), float(r.get("cpu_server", 0)))
    return out


def fmt(v, digits=1):
    return "n/a" if v is None else f"{v:.{digits}f}"


def table(exp, data):
    title, xlabel, ylabel, by_size, _, _ = EXPERIMENTS[exp]
    lines = [f"### {title}", "", f"{ylabel}; last columns: async / sync and async / kernel; "
             "CPU: client + server seconds per cell", ""]
    # The contenders this experiment ran (async-cow only where it differs from async).
    present = [c for c in CONTENDERS if any(c in per for per in data.values())]
    head = ["size", xlabel] if not by_size else ["size"]
    head += present + ["async / sync", "async / kernel"] + [f"CPU {c}" for c in present]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---:|" * len(head))
    for (size, x), per in sorted(data.items()):
        row = [size_label(size)] + ([] if by_size else [f"{x:g}"])
        vals = {c: per.get(c, (None, 0, 0))[0] for c in CONTENDERS}
        row += [fmt(vals[c]) for c in present]
        for a, b in (("async", "sync"), ("async", "kernel")):
            row.append(f"{vals[a] / vals[b]:.2f}" if vals[a] and vals[b] else "n/a")
        row += [f"{per[c][1] + per[c][2]:.2f}" if c in per else "n/a" for c in present]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def plot(exp, data, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    title, xlabel, ylabel, by_size, logx, logy = EXPERIMENTS[exp]
    sizes = sorted({s for s, _ in data})
    groups = [None] if by_size else sizes
    fig, axes = plt.subplots(1, len(groups), figsize=(6.4 * len(groups), 4.4), squeeze=False)
    for ax, g in zip(axes[0], groups):
        for c in CONTENDERS:
            pts = sorted((s if by_size else x, per[c][0]) for (s, x), per in data.items()
                         if c in per and per[c][0] is not None and (by_size or s == g))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=LABELS[c])
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title if by_size or len(groups) == 1 else f"{size_label(g)} writes")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if not by_size and len(groups) > 1:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{exp}.png"), dpi=110)
    plt.close(fig)
    return True


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
    rows = load(os.path.join(out, "results.txt"))
    parts = []
    pf = [r for r in rows if r.get("exp") == "pagefault"]
    if pf:
        r = pf[-1]
        parts.append("### Page-fault cost on this machine\n\n"
                     f"One write fault on a read-only {r['size']}-octet page, taken by a handler "
                     f"that makes it writable again: **{float(r['value']):.2f} us** per fault "
                     f"(mprotect read-only + fault + handler's mprotect + the store); an mprotect "
                     f"pair without a fault: {float(r['mprotect_pair_us']):.2f} us.\n")
    for exp in EXPERIMENTS:
        data = cells(rows, exp)
        if not data:
            continue
        parts.append(table(exp, data))
        plot(exp, data, out)
    text = "\n".join(parts)
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
