#!/usr/bin/env python3
"""bench/utcp report: OUT/results.txt (run.sh) -> markdown tables (stdout, OUT/tables.md)
and PNG plots (OUT/latency.png, bandwidth.png, loss.png; matplotlib with the Agg backend).

    report.py OUT_DIR

results.txt holds one line per process and run: space-separated key=value pairs, the
RESULT line of esock_iwarp / bench_utcp_kernel / bench_memif_link, or the one run.sh
builds from esock_perftest's table, tagged by run.sh with bench=lat|bw|loss,
contender=<name>, run=<n> and the plan's own keys (sz=<message size>, inj_loss=<percent>),
so matching does not depend on how a tool spells its numbers. A missing or failed run
shows as n/a; nothing here judges a number.
"""
import os
import sys

LAT_SIZES = [64, 256, 1024, 4096, 16384, 65536]
BW_SIZES = [64, 1024, 16384, 262144, 4194304]
LOSSES = ["0", "0.1", "1", "5"]

# (contender tag, column label)
LAT_CONTENDERS = [
    ("iwarp-send", "esock_iwarp Send (memif)"),
    ("iwarp-write", "esock_iwarp Write (memif)"),
    ("kernel", "kernel TCP (lo)"),
    ("ksock", "esock ksock Send (lo)"),
    ("memif-link", "raw memif link (1 frame)"),
]
BW_CONTENDERS = [
    ("iwarp-write", "esock_iwarp Write (memif)"),
    ("iwarp-send", "esock_iwarp Send (memif)"),
    ("kernel", "kernel TCP (lo)"),
    ("ksock", "esock ksock Write (lo)"),
]
# The raw memif link has no message size: one value per frame size, the same in every row
# (a constant column, a horizontal line in the plot). The receiver's (server's) count.
LINK_BW = [
    ("memif-link-1514", "memif link (1514 B frames)"),
    ("memif-link-9014", "memif link (9014 B frames)"),
]
# One colour per contender in every plot (and per op in the loss plot, where line style
# tells placement on from off).
COLORS = {"iwarp-send": "C0", "iwarp-write": "C1", "kernel": "C2", "ksock": "C3",
          "memif-link": "C4", "memif-link-1514": "C4", "memif-link-9014": "C5",
          "write": "C1", "send": "C0"}
LOSS_OPS = [("write", "iwarp-write-64k", "Write 64 KiB"), ("send", "iwarp-send-16k", "Send 16 KiB")]


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            kv = {}
            for tok in line.split():
                k, sep, v = tok.partition("=")
                if sep:
                    kv[k] = v
            if kv:
                rows.append(kv)
    return rows


def num(kv, *keys):
    """First key present with a usable number (tool outputs use -1 for 'none')."""
    for k in keys:
        try:
            v = float(kv[k])
        except (KeyError, ValueError):
            continue
        if v >= 0:
            return v
    return None


def find(rows, bench, contender, role="client", **match):
    for kv in rows:
        if kv.get("bench") != bench or kv.get("contender") != contender:
            continue
        if kv.get("role", "client") != role:
            continue
        if all(kv.get(k) == v for k, v in match.items()):
            return kv
    return None


def ok(kv):
    return kv is not None and kv.get("error", "none") == "none"


def rtt(kv, which):
    # The tool contract: full round trip as rtt_pXX_us (lat_pXX_us or, bench_memif_link,
    # pXX_us when only that exists).
    if not ok(kv):
        return None
    return num(kv, f"rtt_{which}_us", f"lat_{which}_us", f"{which}_us")


def partial(kv):
    """A run that hit its timeout but says how much it completed."""
    return kv is not None and kv.get("error", "").startswith("timeout") and (num(kv, "bytes") or 0) > 0


def mbps(kv):
    """MB/s (10^6 octets per second): bytes/secs when both are there, else MBps. A run
    that timed out counts with the rate of what it completed (cells marked *)."""
    if not ok(kv) and not partial(kv):
        return None
    b, s = num(kv, "bytes"), num(kv, "secs")
    if b and s:
        return b / s / 1e6
    return num(kv, "MBps")


def size_label(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def cell(v, fmt="{:.1f}"):
    return "n/a" if v is None else fmt.format(v)


def ratio(a, b):
    return None if a is None or not b else a / b


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def latency(rows):
    data = {t: {s: (None, None) for s in LAT_SIZES} for t, _ in LAT_CONTENDERS}
    for t, _ in LAT_CONTENDERS:
        for s in LAT_SIZES:
            kv = find(rows, "lat", t, sz=str(s))
            data[t][s] = (rtt(kv, "p50"), rtt(kv, "p99"))
    header = ["size"]
    for _, label in LAT_CONTENDERS:
        header += [f"{label} p50", "p99"]
    header += ["iwarp Send / kernel (p50)"]
    body = []
    for s in LAT_SIZES:
        r = [size_label(s)]
        for t, _ in LAT_CONTENDERS:
            r += [cell(data[t][s][0]), cell(data[t][s][1])]
        r.append(cell(ratio(data["iwarp-send"][s][0], data["kernel"][s][0]), "{:.2f}"))
        body.append(r)
    return md_table(header, body), data


def bandwidth(rows):
    found = {t: {s: find(rows, "bw", t, sz=str(s)) for s in BW_SIZES} for t, _ in BW_CONTENDERS}
    data = {t: {s: mbps(found[t][s]) for s in BW_SIZES} for t, _ in BW_CONTENDERS}
    for t, _ in LINK_BW:  # bench_memif_link's receiver: mbps= is MB/s of frame octets
        kv = find(rows, "bw", t, "server")
        data[t] = num(kv, "mbps") if ok(kv) else None
    header = ["size"] + [label for _, label in BW_CONTENDERS] + [label for _, label in LINK_BW]
    header += ["iwarp Write / kernel", "iwarp Write / ksock Write"]
    body = []
    for s in BW_SIZES:
        r = [size_label(s)]
        for t, _ in BW_CONTENDERS:
            r.append(cell(data[t][s], "{:.0f}") + (" *" if partial(found[t][s]) else ""))
        r += [cell(data[t], "{:.0f}") for t, _ in LINK_BW]
        r.append(cell(ratio(data["iwarp-write"][s], data["kernel"][s]), "{:.2f}"))
        r.append(cell(ratio(data["iwarp-write"][s], data["ksock"][s]), "{:.2f}"))
        body.append(r)
    return md_table(header, body), data


def loss(rows):
    header = [
        "op", "loss %", "placement", "goodput MB/s", "hole fills", "hole fill p50 us",
        "p99 us", "max us", "peak OOO bytes", "OOO segments placed / offered", "retransmits (client)",
        "RTOs (client)",
    ]
    body, data = [], {}
    for op, tag, label in LOSS_OPS:
        for p in LOSSES:
            for placement in ("on", "off"):
                who = f"{tag}-{placement}"
                c = find(rows, "loss", who, "client", inj_loss=p)
                s = find(rows, "loss", who, "server", inj_loss=p)
                g = mbps(c)
                g_mark = " *" if partial(c) else ""
                srv = s if ok(s) or partial(s) else None
                cli = c if ok(c) or partial(c) else None
                get = (lambda k: num(srv, k) if srv else None)
                d = {
                    "goodput": g,
                    "fills": get("hole_fills"),
                    "p50": get("hole_fill_p50_us"),
                    "p99": get("hole_fill_p99_us"),
                    "max": get("hole_fill_max_us"),
                    "peak": get("peak_ooo_bytes"),
                    "early": get("fpdus_placed_early"),
                    "ooo": get("ooo_segments"),
                    "ooo_placed": get("ooo_placed"),
                    "rexmit": num(cli, "retransmits") if cli else None,
                    "rto": num(cli, "rto_expirations") if cli else None,
                }
                data[(op, p, placement)] = d
                body.append([label, p, placement, cell(d["goodput"], "{:.1f}") + g_mark,
                             cell(d["fills"], "{:.0f}"), cell(d["p50"]), cell(d["p99"]),
                             cell(d["max"]), cell(d["peak"], "{:.0f}"),
                             cell(d["ooo_placed"], "{:.0f}") + " / " + cell(d["ooo"], "{:.0f}"),
                             cell(d["rexmit"], "{:.0f}"), cell(d["rto"], "{:.0f}")])
    return md_table(header, body), data


def plot_latency(plt, out, lat):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (i, title) in zip(axes, [(0, "p50"), (1, "p99")]):
        for t, label in LAT_CONTENDERS:
            xs = [s for s in LAT_SIZES if lat[t][s][i] is not None]
            ax.plot(xs, [lat[t][s][i] for s in xs], marker="o", color=COLORS[t], label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(LAT_SIZES, [size_label(s) for s in LAT_SIZES])
        ax.set_xlabel("message size")
        ax.set_ylabel("round trip (us)")
        ax.set_title(f"ping-pong RTT {title} (lower is better)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, "latency.png")


def plot_bandwidth(plt, out, bw):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for t, label in BW_CONTENDERS:
        xs = [s for s in BW_SIZES if bw[t][s] is not None]
        ax.plot(xs, [bw[t][s] for s in xs], marker="o", color=COLORS[t], label=label)
    for t, label in LINK_BW:
        if bw[t] is not None:
            ax.axhline(bw[t], linestyle="--", color=COLORS[t], label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(BW_SIZES, [size_label(s) for s in BW_SIZES])
    ax.set_xlabel("message size")
    ax.set_ylabel("MB/s (10^6)")
    ax.set_title("one-direction bandwidth (higher is better)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, "bandwidth.png")


def plot_loss(plt, out, lo):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    # Peak OOO bytes on a linear scale: 0 (everything placed early) is the point to see.
    panels = [("goodput", "goodput MB/s", False), ("p99", "hole fill p99 (us)", True),
              ("peak", "peak out-of-order KiB (receiver)", False)]
    xs = list(range(len(LOSSES)))
    for ax, (key, ylabel, logy) in zip(axes, panels):
        for op, _, label in LOSS_OPS:
            for placement, style in (("on", "-"), ("off", "--")):
                ys = [lo[(op, p, placement)][key] for p in LOSSES]
                if key == "peak":
                    ys = [None if y is None else y / 1024 for y in ys]
                pts = [(x, y) for x, y in zip(xs, ys) if y is not None and (not logy or y > 0)]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], style,
                            marker="s" if op == "write" else "o", markersize=7 if op == "write" else 5,
                            color=COLORS[op], label=f"{label}, placement {placement}")
        ax.set_xticks(xs, [f"{p}%" for p in LOSSES])
        ax.set_xlabel("injected loss (sender side)")
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_title("goodput")
    axes[1].set_title("hole fill latency p99")
    axes[2].set_title("receiver's peak out-of-order octets held by TCP")
    fig.tight_layout()
    return _save(fig, out, "loss.png")


def plots(out, todo):
    """todo: [(plot function, data)] for the sections that have results."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib (apt-get install python3-matplotlib): no PNGs",
              file=sys.stderr)
        return []
    made = []
    for fn, data in todo:
        try:
            made.append(fn(plt, out, data))
        except Exception as e:  # one bad plot must not cost the others or the tables
            print(f"report.py: {fn.__name__}: {e}", file=sys.stderr)
            plt.close("all")
    return made


def _save(fig, out, name):
    import matplotlib.pyplot as plt
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
    rows = parse(os.path.join(out, "results.txt"))
    meta = ""
    meta_path = os.path.join(out, "meta.txt")
    if os.path.exists(meta_path):
        meta = open(meta_path).read().strip()
    have = {kv.get("bench") for kv in rows}
    lat_md, lat = latency(rows)
    bw_md, bw = bandwidth(rows)
    lo_md, lo = loss(rows)
    sections, todo = [f"# bench/utcp results\n\n{meta}\n"], []
    if "lat" in have:
        sections.append(f"""## 1. Ping-pong latency: full round trip (us), p50 and p99

esock_iwarp over net_memif (two processes, idle back-off) vs Linux TCP over 127.0.0.1
(blocking, TCP_NODELAY) vs esock's kernel-socket transport (esock_perftest --lat, Send).
Raw memif link: one Ethernet frame of size + 54 octets (a TCP segment's worth of
headers) echoed back, busy polling, no stack: the floor under esock_iwarp; n/a where the
message does not fit one 1514-octet frame. Ratio below 1: esock_iwarp is faster.

{lat_md}
""")
        todo.append((plot_latency, lat))
    if "bw" in have:
        sections.append(f"""## 2. Bandwidth, one direction (MB/s = 10^6 octets/s)

esock_iwarp and esock_perftest keep a window of outstanding work requests (esock_iwarp
--depth 16, perftest 128); the kernel client writes back to back (TCP's send buffer is the
window). The memif link columns have no message size: Ethernet frames of 1514 or 9014
octets sent back to back for 2 s (bursts of 32, busy polling), counted by the receiver
(frame octets, headers included), the same value in every row. Ratios above 1: esock_iwarp
is faster. `*`: the run hit its timeout; the rate is that of the part it completed.

{bw_md}
""")
        todo.append((plot_bandwidth, bw))
    if "loss" in have:
        sections.append(f"""## 3. Packet loss: esock_iwarp over memif, placement on vs off

Loss injected on the sender (client): its FaultInjector drops frames in both directions of
its port. Goodput is the client's (bytes / secs); hole fills, their latency, peak
out-of-order bytes and the out-of-order segments TCP offered to the endpoint and it placed
are the receiver's (server's) connection. `*`: the run hit its timeout; the rate is that of
the part it completed.

{lo_md}
""")
        todo.append((plot_loss, lo))
    doc = "\n".join(sections)
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(doc)
    print(doc)
    for p in plots(out, todo):
        print(f"plot: {p}")


if __name__ == "__main__":
    main()
