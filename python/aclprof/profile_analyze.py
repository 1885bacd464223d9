"""``python -m aclprof.profile_analyze FILE``: MegEngine's ``profile_analyze`` command over
aclprof's analysis engine (the one behind ``aclprof analyze``).

FILE is a ``chrome_timeline.json`` that :mod:`aclprof.megengine` wrote (its aclprof result
directory is read), a ``PROF_*`` result directory, a folder of them, or a file of records a
subscription wrote. The options are MegEngine's, times in seconds as there; what aclprof does
not record (host times, copy times) is said so, never made up. Ops that carry their
metadata (shapes, data types, FLOPs, bytes: model descriptions, replayed tables, the
bridges, ``report_op(meta=...)``) get MegEngine's computation, FLOPS, memory, bandwidth,
in_shapes and out_shapes columns, and ``--order-by memory`` (or computation, flops,
bandwidth) sorts by them. Prints the
total device time, then the top ops (or groups) as ``aclprof analyze`` does.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import _common
from .errors import AclError

__all__ = ["main", "result_path"]

AGGREGATE_BY = ["type", "name", "name+shape", "device", "stream", "model", "rank"]


def result_path(dump: str) -> Path:
    """What the engine reads for FILE: a MegEngine-style timeline leads to its result
    directory (recorded in it, or ``{pid}.aclprof`` beside it)."""
    path = Path(dump)
    if path.is_file() and path.name.endswith(".json"):
        try:
            meta = json.loads(path.read_text()).get("metadata", {})
        except (ValueError, AttributeError):
            meta = {}
        recorded = Path(meta.get("aclprof_result", "")) if meta.get("aclprof_result") else None
        if recorded is not None and recorded.is_dir():
            return recorded
        beside = path.with_name(path.name.split(".", 1)[0] + ".aclprof")
        if beside.is_dir():
            return beside
        raise SystemExit(f"{dump}: not a timeline aclprof.megengine wrote (no aclprof result "
                         f"directory recorded in it or beside it)")
    return path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m aclprof.profile_analyze",
        description="analyze analyzer result",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("dump", help="a chrome_timeline.json from aclprof.megengine, a PROF_* "
                   "result directory, a folder of them, or a file of records")
    p.add_argument("-t", "--top", type=int, default=3,
                   help="number of most time-consuming operators to print")
    p.add_argument("--type", action="append", help="filter oprs in the top list by type")
    p.add_argument("--aggregate-by", default=None, choices=AGGREGATE_BY,
                   help="aggragate profiling result by")
    p.add_argument("--opr-name", help="filter oprs in the top list by regex of name")
    p.add_argument("--input-dtype", help="filter oprs in the top list by input dtype")
    p.add_argument("--top-end-key", default="end", choices=["end", "kern"],
                   help="how time in top is calculated (aclprof records one device time per "
                   "op: both are the same)")
    p.add_argument("--aggregate", default=None, choices=["max", "min", "sum", "mean"],
                   help="aggregate operations")
    p.add_argument("--order-by", default="time",
                   help="sort result according to given column; the param can be <col_name> "
                   "or +<col_name>, meaning sorting in descending or ascending order "
                   "respectively")
    p.add_argument("--copy-time", action="store_true", help="show copy time related result")
    p.add_argument("--min-time", type=float, default=-math.inf,
                   help="minimal time of a result to be printed")
    p.add_argument("--max-time", type=float, default=math.inf,
                   help="maximal time of a result to be printed")
    p.add_argument("--show-host", action="store_true", help="show host profiling info")
    p.add_argument("--dump-only-opr", action="store_true",
                   help="only dump operator info as plaintext; useful for diff between two "
                   "filtered profile results")
    p.add_argument("--confluence", "--wiki", action="store_true",
                   help="output confluence-markdown-compatible table")
    p.add_argument("--print-only", choices={"summary", "device", "host"},
                   help="print only chosen info")
    return p


def _summary(total_s: Optional[float], copy_time: bool) -> str:
    rows = [("total device time", "N/A" if total_s is None else f"{total_s:.6f}"),
            ("total host time", "N/A (aclprof records device time only)")]
    if copy_time:
        rows.append(("copy time", "N/A (aclprof records no copies)"))
    a = max(len(k) for k, _ in rows)
    b = max(len(v) for _, v in rows)
    rule = "-" * a + "  " + "-" * b
    return "\n".join([rule] + [f"{k:<{a}}  {v}" for k, v in rows] + [rule])


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.aggregate_by and not args.aggregate:
        print("must specify aggregate op", file=sys.stderr)
        return 2
    path = result_path(args.dump)
    query: Dict[str, Any] = {
        "top": max(args.top, 0),
        "aggregate_by": args.aggregate_by,
        "aggregate": args.aggregate or "sum",
        "order_by": args.order_by,
        "min_time": max(args.min_time, 0.0) * 1e6,
        "max_time": None if math.isinf(args.max_time) else args.max_time * 1e6,
        "type": args.type,
        "name": ("^(?:" + args.opr_name + ")") if args.opr_name else None,
        "input_dtype": args.input_dtype,
    }
    # MegEngine's --aggregate alone puts every op in one group, "all": made below from the
    # per-device sums, counts, minima and maxima.
    all_group = bool(args.aggregate and not args.aggregate_by)
    if all_group:
        query.update(aggregate_by="device", aggregate="sum", top=0)
    rows: List[Dict[str, Any]] = []
    table = ""
    try:
        total = json.loads(_common.analyze_text(path, {"top": 0, "aggregate_by": "device"}))
        if all_group or args.dump_only_opr:
            rows = json.loads(_common.analyze_text(path, {**query, "format": "json"}))["rows"]
        else:
            table = _common.analyze_text(
                path, {**query, "format": "markdown" if args.confluence else "table"})
    except AclError as e:
        print(f"{args.dump}: {e.message or e}", file=sys.stderr)
        return 1
    if all_group:
        table = _all_group(rows, args.aggregate)
    total_s = total["total_us"] / 1e6 if total["ops"] else None
    if args.print_only in (None, "summary"):
        print(_summary(total_s, args.copy_time))
    if args.print_only in (None, "device"):
        print()
        if args.dump_only_opr:
            for r in rows:
                print(" ".join(str(r[k]) for k in ("Name", "Type") if k in r)
                      or " ".join(str(v) for v in r.values()))
        else:
            print(table, end="")
    if args.show_host or args.print_only == "host":
        print("\nhost self time: not recorded (aclprof records device time only)")
    return 0


def _all_group(rows: List[Dict[str, Any]], aggregate: str) -> str:
    """One "all" row from per-device groups: the ``--aggregate`` of every op."""
    count = sum(int(r["Count"]) for r in rows)
    total = sum(float(r["Sum(us)"]) for r in rows)
    value = {"sum": total, "mean": total / count if count else 0.0,
             "max": max((float(r["Max(us)"]) for r in rows), default=0.0),
             "min": min((float(r["Min(us)"]) for r in rows), default=0.0)}[aggregate]
    head = f"{'Group':<8}{'Count':>8}  {aggregate.capitalize() + '(us)':>14}"
    return f"{head}\n{'-' * len(head)}\n{'all':<8}{count:>8}  {value:>14.3f}\n"


if __name__ == "__main__":
    sys.exit(main())
