"""Starting or joining Ray the same way from every job.

A job joins the cluster it runs on (``ray job submit`` sets ``RAY_ADDRESS``; a running local head is found
through its session file) and otherwise starts a private Ray in-process. A small machine gets more logical CPUs
than cores, since a Train worker plus Ray Data actors deadlock on CPU reservations with only two.
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
        None to join a running cluster when one is found and start a local one otherwise.
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
    if address is None and not os.environ.get("RAY_ADDRESS"):
        try:
            ray.init(address="auto", **kwargs)
            logger.info("joined the running Ray cluster")
            return True
        except (ConnectionError, RuntimeError):
            address = "local"
    if address == "local" or (address is None and not os.environ.get("RAY_ADDRESS")):
        cpus = num_cpus if num_cpus is not None else max(os.cpu_count() or 1, MIN_LOCAL_CPUS)
        if dashboard:
            kwargs.update(include_dashboard=True, dashboard_host="127.0.0.1")
        ray.init(address="local", num_cpus=cpus, **kwargs)
        logger.info("started a local Ray with %d logical CPUs", cpus)
        return True
    ray.init(address=address, **kwargs)
    return True
