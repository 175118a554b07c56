"""Starting or joining Ray the same way from every job.

A job joins the cluster it runs on (``ray job submit`` sets ``RAY_ADDRESS``; a running local head is found
through its session file, and the job then says which one it joined) and otherwise starts a private Ray
in-process; ``RAY_ADDRESS=local`` asks for the private one even beside a running cluster. A small machine gets
more logical CPUs than cores, since a Train worker plus Ray Data actors deadlock on CPU reservations with only two.
"""

from __future__ import annotations

import logging
import os

import ray

logger = logging.getLogger(__name__)

#: Logical CPUs given to an in-process Ray started on a machine with fewer cores than this.
MIN_LOCAL_CPUS = 4


def init_ray(address: str | None = None, *, num_cpus: int | None = None, quiet: bool = True,
             dashboard: bool = False) -> bool:
    """Join a running Ray cluster or start a local one; return True if this call started Ray.

    Parameters
    ----------
    address : str, optional
        ``"auto"``/``"host:port"`` to join a cluster, ``"local"`` to force a fresh in-process instance,
        None to join a running cluster when one is found (with a warning naming it) and start a local one
        otherwise; with None, ``RAY_ADDRESS`` decides when set (``local`` as ``"local"``).
    num_cpus : int, optional
        Logical CPUs of a locally started Ray; default ``max(os.cpu_count(), MIN_LOCAL_CPUS)``.
    quiet : bool
        Keep Ray's own progress bars and info logs out of the job's output.
    dashboard : bool
        Start the dashboard (bound to 127.0.0.1) with a local Ray: Ray's State API lives there, and Ray Train's
        ``PlacementGroupCleaner`` needs it to see that a stopped trial's controller is dead; without it, every trial
        a Tune scheduler stops keeps its CPUs reserved and later trials starve.
    """
    if ray.is_initialized():
        return False
    kwargs: dict = {"include_dashboard": False, "log_to_driver": not quiet}
    if quiet:
        kwargs["logging_level"] = logging.WARNING
    env_address = os.environ.get("RAY_ADDRESS")
    if address is None and env_address == "local":
        address = "local"  # a private Ray, with the logical CPUs it needs here
    if address is None and not env_address:
        try:
            context = ray.init(address="auto", **kwargs)
        except (ConnectionError, RuntimeError):
            address = "local"
        else:
            # joined without being asked to: say which cluster, since one left behind by a killed run (or a
            # `ray start` of another user) takes the job down with it when it stops
            info = getattr(context, "address_info", None) or {}
            logger.warning("joined the Ray cluster already running at %s (%s CPUs); set RAY_ADDRESS=local to run "
                           "on a private one instead", info.get("gcs_address") or info.get("address") or "?",
                           _cpus())
            return True
    if address == "local":
        cpus = num_cpus if num_cpus is not None else max(os.cpu_count() or 1, MIN_LOCAL_CPUS)
        if dashboard:
            kwargs.update(include_dashboard=True, dashboard_host="127.0.0.1")
        ray.init(address="local", num_cpus=cpus, **kwargs)
        logger.info("started a local Ray with %d logical CPUs", cpus)
        return True
    ray.init(address=address, **kwargs)
    return True


def _cpus() -> str:
    """The joined cluster's CPUs, for the log line ('?' when Ray cannot say)."""
    try:
        return f"{ray.cluster_resources().get('CPU', 0):g}"
    except Exception:  # noqa: BLE001 - a log line must not fail the job
        return "?"
