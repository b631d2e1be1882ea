#!/usr/bin/env python3
"""bench/esock report: OUT (run.sh) -> markdown tables (stdout) and PNG plots
(OUT/latency.png, OUT/bandwidth.png, OUT/ceiling.png; matplotlib with the Agg backend).

    report.py OUT_DIR

Reads OUT/ddpmode-dpdk.md and OUT/ddpmode-ksock.md (bench_esock_ddpmode's own tables: kernel
loopback and DDPMODE, one run each) and OUT/results.txt (tag=<run> followed by the RESULT
line of esock_iwarp or bench_memif_link, one line per process) and OUT/passes.md
(bench_esock_passes' table, printed as it is). A missing run shows as n/a;
nothing here judges a number.
"""
import os
import sys

SIZES = [64 << (2 * i) for i in range(9)]  # 64 B .. 4 MiB, as bench_esock_ddpmode


def size_label(n):
    if n >= 1 << 20:
        return f"{n >> 20} MiB"
    if n >= 1 << 10:
        return f"{n >> 10} KiB"
    return f"{n} B"


def ddpmode_table(path):
    """{size: (tcp_us, ddp_us, tcp_mbps, ddp_mbps)} and the CPU rows {size: [cells]}."""
    main, cpu = {}, {}
    labels = {size_label(s): s for s in SIZES}
    if not os.path.exists(path):
        return main, cpu
    in_cpu = False
    with open(path) as f:
        for line in f:
            if line.startswith("CPU time per side"):
                in_cpu = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not cells or cells[0] not in labels:
                continue
            size = labels[cells[0]]
            if in_cpu:
                cpu[size] = cells[1:]
            else:
                try:
                    main[size] = (float(cells[1]), float(cells[2]), float(cells[4]), float(cells[5]))
                except (ValueError, IndexError):
                    pass
    return main, cpu


def results(path):
    """{tag: [kv, ...]} from results.txt."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            kv = dict(t.split("=", 1) for t in line.split() if "=" in t)
            if "tag" in kv:
                out.setdefault(kv["tag"], []).append(kv)
    return out


def value(res, tag, key, role="client"):
    for kv in res.get(tag, []):
        if kv.get("role") == role and kv.get("error", "none") == "none" and key in kv:
            try:
                v = float(kv[key])
            except ValueError:
                return None
            return v if v > 0 else None
    return None


def cell(v, fmt="{:.1f}"):
    return "n/a" if v is None else fmt.format(v)


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def md(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
    dpdk, dpdk_cpu = ddpmode_table(os.path.join(out, "ddpmode-dpdk.md"))
    ksock, ksock_cpu = ddpmode_table(os.path.join(out, "ddpmode-ksock.md"))
    res = results(os.path.join(out, "results.txt"))
    meta = open(os.path.join(out, "meta.txt")).read().strip() if os.path.exists(
        os.path.join(out, "meta.txt")) else ""
    frame = next((t.split("-")[-1] for t in res if t.startswith("link-bw-")), None)
    link_bw = value(res, f"link-bw-{frame}", "mbps", "server") if frame else None

    g = lambda t, s, i: t[s][i] if s in t else None  # noqa: E731
    lat = {"kernel": {}, "ksock": {}, "dpdk": {}, "utcp": {}, "link": {}}
    bw = {"kernel": {}, "ksock": {}, "dpdk": {}, "utcp": {}}
    lat_rows, bw_rows = [], []
    for s in SIZES:
        lat["kernel"][s], lat["dpdk"][s], lat["ksock"][s] = g(dpdk, s, 0), g(dpdk, s, 1), g(ksock, s, 1)
        lat["utcp"][s] = value(res, f"utcp-lat-{s}", "rtt_p50_us")
        lat["link"][s] = value(res, f"link-lat-{s}", "p50_us")
        bw["kernel"][s], bw["dpdk"][s], bw["ksock"][s] = g(dpdk, s, 2), g(dpdk, s, 3), g(ksock, s, 3)
        bw["utcp"][s] = value(res, f"utcp-bw-{s}", "MBps")
        lat_rows.append([size_label(s), cell(lat["kernel"][s]), cell(lat["dpdk"][s]),
                         ratio(lat["dpdk"][s], lat["kernel"][s]), cell(g(ksock, s, 0)),
                         cell(lat["ksock"][s]), ratio(lat["ksock"][s], g(ksock, s, 0)),
                         cell(lat["utcp"][s]), cell(lat["link"][s])])
        bw_rows.append([size_label(s), cell(bw["kernel"][s], "{:.0f}"), cell(bw["dpdk"][s], "{:.0f}"),
                        ratio(bw["dpdk"][s], bw["kernel"][s]), cell(g(ksock, s, 2), "{:.0f}"),
                        cell(bw["ksock"][s], "{:.0f}"), ratio(bw["ksock"][s], g(ksock, s, 2)),
                        cell(bw["utcp"][s], "{:.0f}"),
                        ratio(bw["utcp"][s], link_bw)])
    print(f"bench/esock/run.sh ({meta})\n")
    print("Round trip, microseconds (DDPMODE and kernel: median of 3; raw layers: p50). The two "
          "kernel columns come from the two runs their ratios belong to.\n")
    print(md(["size", "kernel lo (dpdk run)", "DDPMODE dpdk", "dpdk / kernel", "kernel lo (ksock run)",
              "DDPMODE ksock", "ksock / kernel", "raw utcp Send", "raw memif link (1 frame)"], lat_rows))
    print(f"\nStreaming, MB/s (10^6 octets per second). Raw memif link: {cell(link_bw, '{:.0f}')} MB/s "
          f"of {frame or 'n/a'}-octet frames, one way, busy polling; the last column is the raw "
          "utcp Write's share of it.\n")
    print(md(["size", "kernel lo (dpdk run)", "DDPMODE dpdk", "dpdk / kernel", "kernel lo (ksock run)",
              "DDPMODE ksock", "ksock / kernel", "raw utcp Write", "utcp / link"], bw_rows))
    for name, cpu in (("dpdk", dpdk_cpu), ("ksock", ksock_cpu)):
        print(f"\nCPU per side, {name} run (client / server, all threads; bench_esock_ddpmode's table)\n")
        print(md(["size", "TCP ping-pong (CPU us per round trip)", "DDPMODE ping-pong (CPU us per round trip)",
                  "TCP stream (MB per CPU-second)", "DDPMODE stream (MB per CPU-second)"],
                 [[size_label(s)] + cpu[s] for s in SIZES if s in cpu]))
    passes = passes_table(os.path.join(out, "passes.md"))
    if passes:
        print("\nThe per-octet ceiling (bench_esock_passes): DDPMODE's passes over each octet on two "
              "threads, no protocol, against the kernel's stream measured before and after\n")
        print(open(os.path.join(out, "passes.md")).read().split("\n\n", 1)[-1].rstrip())
    plots(out, lat, bw, link_bw, frame)
    ceiling_plot(out, passes, bw)


def passes_table(path):
    """[(write, passes, mbps)] from bench_esock_passes' markdown table."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[0].endswith("B") and cells[0] != "write":
                try:
                    rows.append((cells[0], cells[1], float(cells[2])))
                except ValueError:
                    pass
    return rows


def ceiling_plot(out, passes, bw):
    """One bar group per write size: the kernel (this program's mean of before and after, and
    bench_esock_ddpmode's in this run), each ceiling line, and what DDPMODE over dpdk measured
    in this run's table."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    if not passes:
        return
    writes = list(dict.fromkeys(w for w, _, _ in passes))
    labels = {w: size_label_value(w) for w in writes}
    fig, ax = plt.subplots(figsize=(9, 5))
    width = 0.1
    for gi, w in enumerate(writes):
        rows = [(n, v) for ww, n, v in passes if ww == w]
        kernel = [v for n, v in rows if n.startswith("kernel")]
        bars = [("kernel TCP loopback (this program, mean)", sum(kernel) / len(kernel) if kernel else 0),
                ("kernel TCP loopback (bench_esock_ddpmode)", bw["kernel"].get(labels[w]) or 0)]
        bars += [(n, v) for n, v in rows if not n.startswith("kernel")]
        measured = bw["dpdk"].get(labels[w])
        bars.append(("DDPMODE dpdk, measured (this run)", measured or 0))
        for bi, (name, v) in enumerate(bars):
            ax.bar(gi + (bi - len(bars) / 2) * width, v, width, color=f"C{bi}",
                   label=name if gi == 0 else None)
    ax.set_xticks(range(len(writes)))
    ax.set_xticklabels([f"{w} writes" for w in writes])
    ax.set_ylabel("MB/s")
    ax.set_title("per-octet ceiling of DDPMODE's passes (no protocol) against kernel TCP")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ceiling.png"), dpi=110)
    plt.close(fig)
    print(f"wrote {os.path.join(out, 'ceiling.png')}", file=sys.stderr)


def size_label_value(label):
    """'64 KiB' -> 65536."""
    n, unit = label.split()
    return int(n) << {"B": 0, "KiB": 10, "MiB": 20}[unit]


def plots(out, lat, bw, link_bw, frame):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(no matplotlib: no plots)", file=sys.stderr)
        return
    names = {"kernel": "kernel TCP, loopback", "ksock": "DDPMODE, ksock provider",
             "dpdk": "DDPMODE, dpdk provider (memif)", "utcp": "raw utcp endpoint (memif)",
             "link": "raw memif link"}
    colors = {"kernel": "C2", "ksock": "C3", "dpdk": "C0", "utcp": "C1", "link": "C4"}
    for what, data, ylabel, fname in (("lat", lat, "round trip (us, log)", "latency.png"),
                                      ("bw", bw, "MB/s (log)", "bandwidth.png")):
        fig, ax = plt.subplots(figsize=(8, 5))
        for key, series in data.items():
            xs = [s for s in SIZES if series.get(s) is not None]
            if xs:
                ax.plot(xs, [series[s] for s in xs], marker="o", color=colors[key], label=names[key])
        if what == "bw" and link_bw:
            ax.axhline(link_bw, color=colors["link"], linestyle="--",
                       label=f"raw memif link ({frame}-octet frames)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(SIZES)
        ax.set_xticklabels([size_label(s) for s in SIZES], rotation=30)
        ax.set_xlabel("message size")
        ax.set_ylabel(ylabel)
        ax.set_title("ping-pong round trip" if what == "lat" else "one-way streaming")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, fname), dpi=110)
        plt.close(fig)
        print(f"wrote {os.path.join(out, fname)}", file=sys.stderr)


if __name__ == "__main__":
    main()
