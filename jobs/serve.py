"""Serve TabClustPFN over HTTP: MLflow's scoring server on the shipped checkpoint or a logged model.

    python jobs/serve.py                                        # the shipped checkpoint on 127.0.0.1:5001
    python jobs/serve.py --model-uri models:/tabclustpfn/1      # a registered model (--tracking-uri: its store)
    curl -s 127.0.0.1:5001/invocations -H 'Content-Type: application/json' \\
        -d '{"dataframe_split": {"columns": ["a", "b"], "data": [[0, 1], [0.1, 1.2], [5, 6], [5.2, 6.1]]},
             "params": {"n_clusters": 2}}'

Each request clusters one table and answers {"predictions": [label per row]}; a table or param the model refuses
gets HTTP 400 with the reason in "message" (docs/serving.md has the format). Stop it with Ctrl-C.
exit status: 0 when stopped, 1 when the model cannot be loaded or the port is taken, 2 for an unusable option.
"""

from __future__ import annotations

import argparse
import logging
import sys

from pipeline.tracking import DEFAULT_TRACKING_URI

DEFAULT_PORT = 5001


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--model-uri", default=None,
                        help="an MLflow model: models:/NAME/VERSION, runs:/RUN_ID/model or a local model folder "
                             "(default: the shipped checkpoint)")
    source.add_argument("--checkpoint", default=None, help="serve this model checkpoint file instead")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: %(default)s)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default: %(default)s, this machine only; 0.0.0.0 for every interface)")
    p.add_argument("--tracking-uri", default=None,
                   help="MLflow store that models:/ and runs:/ URIs refer to (default: $MLFLOW_TRACKING_URI, else "
                        f"{DEFAULT_TRACKING_URI})")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port must be in 1..65535, got {args.port}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    from pipeline.pyfunc import serve

    try:
        serve(args.model_uri, checkpoint=args.checkpoint, host=args.host, port=args.port,
              tracking_uri=args.tracking_uri)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
