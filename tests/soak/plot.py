#!/usr/bin/env python3
"""tests/soak/plot.py: the soak's samples (esock_soak --csv FILE) -> a PNG of memory and
counts against time (matplotlib, Agg backend). Nothing here judges the run: esock_soak's
exit status does.

    plot.py SAMPLES.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    if not rows:
        sys.exit("no samples in " + sys.argv[1])
    t = [r["wall_s"] for r in rows]
    col = lambda k, scale=1.0: [r[k] * scale for r in rows]  # noqa: E731

    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    ax[0].plot(t, col("heap_kib", 1 / 1024), label="heap in use (malloc)")
    ax[0].plot(t, col("rss_kib", 1 / 1024), label="process RSS")
    ax[0].set_ylabel("MiB")
    ax[0].set_title("esock soak: iWARP connections opened and closed over a damaged link")
    ax[1].plot(t, col("tcbs"), label="TCBs (mostly TIME-WAIT)")
    ax[1].plot(t, col("completed", 1 / 10), label="connections completed / 10")
    ax[1].set_ylabel("count")
    ax[2].plot(t, col("mbufs_in_use"), label="DPDK mbufs in use (both pools)")
    ax[2].plot(t, col("stags"), label="STags registered")
    ax[2].set_ylabel("count")
    ax[2].set_xlabel("wall time (s); the last sample is after the drain")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
