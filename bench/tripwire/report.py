#!/usr/bin/env python3
"""bench/tripwire report: OUT/results.txt (run.sh's RESULT lines) -> markdown tables (stdout
and OUT/tables.md) and OUT/latency.png, OUT/throughput.png (matplotlib, Agg backend).

    report.py OUT_DIR

Each cell is the median of the run's rounds; ratios are against the Send-notified ring of
the same run. A missing cell shows as n/a; nothing here judges a number.
"""
import os
import statistics
import sys

MODES = ["tripwire", "send", "poll"]
LABELS = {
    "tripwire": "tripwire (consumer sleeps in epoll)",
    "send": "Send after the Write (completion fd in epoll)",
    "poll": "busy-polling the ring's tail",
}
FIELDS = ["oneway_p50", "oneway_p99", "rtt_p50", "rtt_p99", "rate", "cpu_producer", "cpu_consumer"]


def load(path):
    cells = {}
    if not os.path.exists(path):
        return cells
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            kv = dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)
            key = (kv["provider"], kv["mode"], int(kv["window"]), int(kv["size"]))
            cell = cells.setdefault(key, {k: [] for k in FIELDS})
            for k in FIELDS:
                try:
                    cell[k].append(float(kv.get(k, "n/a")))
                except ValueError:
                    pass
    return {k: {f: (statistics.median(v) if v else None) for f, v in c.items()} for k, c in cells.items()}


def fmt(v, digits=1):
    return "n/a" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def tables(cells):
    out = []
    providers = sorted({k[0] for k in cells}, key=lambda p: (p != "dpdk", p))
    sizes = sorted({k[3] for k in cells})
    for prov in providers:
        where = "dpdk provider, net_memif" if prov == "dpdk" else "ksock provider, loopback"
        out.append(f"### {where}: ping-pong (window 1)\n")
        out.append("| size | notification | round trip p50 (us) | p99 | one-way p50 (us) | p99 |"
                   " p50 / Send's | CPU us per message (producer / consumer) |")
        out.append("|---:|---|---:|---:|---:|---:|---:|---|")
        for size in sizes:
            base = cells.get((prov, "send", 1, size), {})
            for mode in MODES:
                c = cells.get((prov, mode, 1, size))
                if c is None:
                    continue
                out.append(f"| {size} B | {mode} | {fmt(c['rtt_p50'])} | {fmt(c['rtt_p99'])} |"
                           f" {fmt(c['oneway_p50'])} | {fmt(c['oneway_p99'])} |"
                           f" {ratio(c['rtt_p50'], base.get('rtt_p50'))} |"
                           f" {fmt(c['cpu_producer'], 2)} / {fmt(c['cpu_consumer'], 2)} |")
        out.append("")
        out.append(f"### {where}: streaming (window 32)\n")
        out.append("| size | notification | messages/s | / Send's | one-way p50 (us) | p99 |"
                   " CPU us per message (producer / consumer) |")
        out.append("|---:|---|---:|---:|---:|---:|---|")
        for size in sizes:
            base = cells.get((prov, "send", 32, size), {})
            for mode in MODES:
                c = cells.get((prov, mode, 32, size))
                if c is None:
                    continue
                out.append(f"| {size} B | {mode} | {fmt(c['rate'], 0)} |"
                           f" {ratio(c['rate'], base.get('rate'))} | {fmt(c['oneway_p50'])} |"
                           f" {fmt(c['oneway_p99'])} |"
                           f" {fmt(c['cpu_producer'], 2)} / {fmt(c['cpu_consumer'], 2)} |")
        out.append("")
    return "\n".join(out)


def plots(cells, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib, no plots", file=sys.stderr)
        return
    providers = sorted({k[0] for k in cells}, key=lambda p: (p != "dpdk", p))
    sizes = sorted({k[3] for k in cells})
    for name, window, field, ylabel in [("latency", 1, "rtt_p50", "round trip p50 (us)"),
                                        ("throughput", 32, "rate", "messages/s")]:
        fig, axes = plt.subplots(1, max(1, len(providers)), figsize=(6 * max(1, len(providers)), 4))
        if len(providers) <= 1:
            axes = [axes]
        for ax, prov in zip(axes, providers):
            width = 0.8 / len(MODES)
            for i, mode in enumerate(MODES):
                ys = [cells.get((prov, mode, window, s), {}).get(field) or 0 for s in sizes]
                xs = [j + i * width for j in range(len(sizes))]
                ax.bar(xs, ys, width, label=LABELS[mode])
            ax.set_xticks([j + width for j in range(len(sizes))])
            ax.set_xticklabels([f"{s} B" for s in sizes])
            ax.set_title(f"{prov}: window {window}")
            ax.set_yscale("log")  # busy-polling is orders of magnitude apart on dpdk
            ax.set_ylabel(ylabel)
            ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, f"{name}.png"), dpi=100)
        plt.close(fig)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "out"
    cells = load(os.path.join(out_dir, "results.txt"))
    text = tables(cells)
    print(text)
    with open(os.path.join(out_dir, "tables.md"), "w") as f:
        f.write(text + "\n")
    plots(cells, out_dir)


if __name__ == "__main__":
    main()
