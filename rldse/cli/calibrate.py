"""`rldse calibrate gpu|cpu`: measure a part and write it as a user preset."""

from __future__ import annotations

import argparse
from pathlib import Path

from rldse.cli.common import check_output_file, presets_option


def cmd_calibrate(args: argparse.Namespace) -> None:
    from rldse.calibrate.preset_file import write_preset_file

    # before measuring: DIR/NAME.yaml is replaced only with --force
    check_output_file(str(Path(args.output) / f"{args.name}.yaml"), "-o", ".yaml",
                      force=args.force)
    if args.target == "gpu":
        from rldse.calibrate.gpu import calibrate_gpu

        cal = calibrate_gpu(args.name, args.output, device=args.device, base=args.base,
                            quick=args.quick)
    else:
        from rldse.calibrate.cpu import calibrate_cpu

        cal = calibrate_cpu(args.name, args.output, quick=args.quick)
    path = write_preset_file(args.output, cal.name, cal.document)
    print("\n".join(cal.report))
    print(f"wrote {path} ({cal.kind} preset '{cal.name}'; use it with --presets {args.output} "
          f"--set {cal.kind}.preset={cal.name})")


def add_parser(sub) -> None:
    ca = sub.add_parser("calibrate", help="measure this machine's CPU or a GPU and write it "
                        "as a user preset file DIR/NAME.yaml")
    csub = ca.add_subparsers(dest="target", required=True, metavar="PART")
    cg = csub.add_parser("gpu", help="measure a GPU with PyTorch (dispatch, kernel overhead, "
                         "copies, GEMM curve, dependent loads, sum tree, NVML power)")
    cg.add_argument("--device", default="cuda:0",
                    help="torch device (default cuda:0; 'cpu' runs the code path on the CPU)")
    cg.add_argument("--base", metavar="PRESET", help="gpu preset whose datasheet numbers the "
                    "measurements complete (default h100-sxm/h100-pcie on an H100; else required)")
    cc = csub.add_parser("cpu", help="measure this host's fingerprint as a cpu preset, with "
                         "copy-bandwidth and GEMM curves")
    for c in (cg, cc):
        c.add_argument("--name", required=True, help="name of the new preset")
        c.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="directory to write NAME.yaml to (created if missing)")
        c.add_argument("--force", action="store_true",
                       help="overwrite an existing DIR/NAME.yaml")
        c.add_argument("--quick", action="store_true",
                       help="fewer sizes and repeats (seconds; for tests, not for numbers)")
        presets_option(c)
        c.set_defaults(func=cmd_calibrate)
