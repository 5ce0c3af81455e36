"""The Celery application: AI turns on queue `ai`, simulations on queue `sim`.

    ARBITER_BROKER_URL   the broker, e.g. redis://redis:6379/1. It must not be the event
                         store's database (ARBITER_REDIS_URL, e.g. redis://redis:6379/0):
                         Celery's keys and the game streams never share a keyspace.
                         Results (simulations only) use the same database as the broker.

Reliability: tasks are acknowledged after they finish (acks_late); a task whose worker
process died is delivered again at once (reject_on_worker_lost), one whose whole worker node
died after ARBITER_CELERY_VISIBILITY_TIMEOUT seconds (default 300); each worker process takes
one task at a time (prefetch 1). Redelivery is harmless: an AI turn is submitted with command id
ai:<game>:<version>:<seat> and the expected version, and a simulation is a pure function of
its seed.

Run a worker:  arbiter workers ai   (or: celery -A services.workers.celery_app worker -Q ai)
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from celery import Celery

DEFAULT_BROKER = "redis://127.0.0.1:6379/1"
VISIBILITY_TIMEOUT = int(os.environ.get("ARBITER_CELERY_VISIBILITY_TIMEOUT", "300"))


def same_database(a: str, b: str) -> bool:
    """Whether two redis:// URLs name the same database of the same server."""
    if not a or not b:
        return False
    pa, pb = urlparse(a), urlparse(b)
    return ((pa.hostname, pa.port or 6379, (pa.path or "/0").strip("/") or "0")
            == (pb.hostname, pb.port or 6379, (pb.path or "/0").strip("/") or "0"))


def make_app(broker_url: str = "") -> Celery:
    url = broker_url or os.environ.get("ARBITER_BROKER_URL", "") or DEFAULT_BROKER
    if same_database(url, os.environ.get("ARBITER_REDIS_URL", "")):
        raise ValueError("ARBITER_BROKER_URL must be another Redis database than "
                         "ARBITER_REDIS_URL (e.g. /1 for the broker, /0 for the events)")
    app = Celery("arbiter", broker=url, backend=url, include=["services.workers.tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_routes={"arbiter.ai_turn": {"queue": "ai"},
                     "arbiter.simulate_chunk": {"queue": "sim"}},
        task_default_queue="ai",
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=3600,
        broker_connection_retry_on_startup=True,
        # A task a whole worker node took and never acknowledged (the node died) goes back
        # to the queue after this; longer than any task (a simulation slice takes seconds).
        # A dead worker *process* is handled at once (reject_on_worker_lost), and a lost AI
        # turn sooner still by its rescue deadline (deadlines.py).
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT},
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()
