"""The Celery application: AI turns on queue `ai`, simulations on queue `sim`.

    ARBITER_BROKER_URL      the broker: RabbitMQ (amqp://user:pass@host:5672/vhost) or a
                            standalone Redis (redis://host:6379/1). A Redis broker must not be
                            the event store's database (ARBITER_REDIS_URL), nor a Redis Cluster
                            node: Celery's Redis transport uses one numbered database, and a
                            cluster has only database 0.
    ARBITER_RESULT_BACKEND  where simulation slices send their results back (AI turns return
                            nothing). Default: rpc:// on RabbitMQ (each result is a message on a
                            reply queue of the process that asked, which expires an hour after
                            its last use); on Redis, the broker's own database (results expire
                            after an hour, so a cancelled simulation leaves nothing for good).
                            Also accepted: rpc:// on Redis, any redis:// URL.

`check` tries all of this at start, so the server and the workers stop with one sentence
instead of starting on a broker that cannot work.

Reliability: tasks are acknowledged after they finish (acks_late); a task whose worker
process died is delivered again at once (reject_on_worker_lost), one whose whole worker node
died after ARBITER_CELERY_VISIBILITY_TIMEOUT seconds (default 300; Redis only: RabbitMQ
redelivers as soon as the node's connection closes); each worker process takes one task at a
time (prefetch 1). Redelivery is harmless: an AI turn is submitted with command id
ai:<game>:<version>:<seat> and the expected version, and a simulation is a pure function of
its seed.

Run a worker:  arbiter workers ai   (it checks the broker and serves /metrics; the plain
`celery -A services.workers.celery_app worker -Q ai` does neither)
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from urllib.parse import urlparse

from celery import Celery
from kombu.utils.url import maybe_sanitize_url

from services.core.startup import CannotStart

DEFAULT_BROKER = "redis://127.0.0.1:6379/1"
VISIBILITY_TIMEOUT = int(os.environ.get("ARBITER_CELERY_VISIBILITY_TIMEOUT", "300"))
AMQP_SCHEMES = {"amqp", "amqps", "pyamqp"}
REDIS_SCHEMES = {"redis", "rediss"}
CHECK_SECONDS = 5.0  # a broker that does not answer in this long at start is not there


class BrokerUnusable(CannotStart):
    """A broker or result backend setting that cannot work; the message is one sentence."""


def same_database(a: str, b: str, timeout: float = 0) -> bool:
    """Whether two redis:// URLs name the same database of the same server. The names in the
    URLs may differ (localhost and 127.0.0.1, a DNS alias): with a `timeout`, two servers
    that both answer are asked for their run id, which only the same server shares."""
    if not a or not b:
        return False
    pa, pb = urlparse(a), urlparse(b)
    database_a = (pa.path or "/0").strip("/") or "0"
    database_b = (pb.path or "/0").strip("/") or "0"
    if database_a != database_b:
        return False
    if (pa.hostname, pa.port or 6379) == (pb.hostname, pb.port or 6379):
        return True
    return bool(timeout) and _run_id(a, timeout) == _run_id(b, timeout) != ""


def _run_id(url: str, timeout: float) -> str:
    """The Redis server's run id (random at each start, one per server), or "" if it does
    not answer."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return str(client.info("server").get("run_id", ""))
    except redis.RedisError:
        return ""
    finally:
        client.close()


def scheme(url: str) -> str:
    return urlparse(url).scheme.lower()


def result_backend(broker_url: str, env: Mapping[str, str] | None = None) -> str:
    """ARBITER_RESULT_BACKEND, or the default for this broker (see the module's docstring)."""
    chosen = (os.environ if env is None else env).get("ARBITER_RESULT_BACKEND", "")
    if chosen:
        return chosen
    return "rpc://" if scheme(broker_url) in AMQP_SCHEMES else broker_url


def make_app(broker_url: str = "", results: bool = True) -> Celery:
    """The app; `results=False` for a sender of AI turns only, which never reads a result."""
    url = broker_url or os.environ.get("ARBITER_BROKER_URL", "") or DEFAULT_BROKER
    backend = result_backend(url) if results else None
    app = Celery("arbiter", broker=url, backend=backend, include=["services.workers.tasks"])
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


# ---- the check at start ---------------------------------------------------------------------


def check(broker_url: str, event_store_url: str = "", backend_url: str = "",
          timeout: float = CHECK_SECONDS) -> None:
    """Raise BrokerUnusable unless the broker (and the result backend, if given) can work:
    a known scheme, not the event store's database, not a Redis Cluster node, reachable."""
    shown = maybe_sanitize_url(broker_url)
    if scheme(broker_url) not in AMQP_SCHEMES | REDIS_SCHEMES:
        raise BrokerUnusable(
            f"ARBITER_BROKER_URL {shown} is neither RabbitMQ (amqp://) nor Redis (redis://), "
            "the two brokers Arbiter works with")
    if scheme(broker_url) in REDIS_SCHEMES:
        if same_database(broker_url, event_store_url, timeout):
            raise BrokerUnusable(
                f"ARBITER_BROKER_URL {shown} is the event store's own Redis database "
                "(ARBITER_REDIS_URL): give the broker another database (e.g. /1) or another "
                "server, so Celery's keys and the game streams never share a keyspace")
        _check_redis("ARBITER_BROKER_URL", broker_url, timeout)
    else:
        _check_amqp(broker_url, timeout)
    if backend_url and backend_url != "rpc://":
        shown = maybe_sanitize_url(backend_url)
        if scheme(backend_url) not in REDIS_SCHEMES:
            raise BrokerUnusable(
                f"ARBITER_RESULT_BACKEND {shown} is not one Arbiter works with: use rpc:// "
                "(results as messages over the broker) or a redis:// database")
        if same_database(backend_url, event_store_url, timeout):
            raise BrokerUnusable(
                f"ARBITER_RESULT_BACKEND {shown} is the event store's own Redis database "
                "(ARBITER_REDIS_URL): give the results another database or server")
        if backend_url != broker_url:
            _check_redis("ARBITER_RESULT_BACKEND", backend_url, timeout)


def _check_redis(name: str, url: str, timeout: float) -> None:
    import redis

    shown = maybe_sanitize_url(url)
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        cluster = client.info("cluster").get("cluster_enabled") == 1
        if not cluster:
            # Celery writes its queues there: a read-only replica would take the connection
            # and refuse every task.
            probe = f"arbiter:broker-check:{uuid.uuid4().hex}"
            client.set(probe, "1", ex=60)
            client.delete(probe)
    except redis.ReadOnlyError as e:
        raise BrokerUnusable(
            f"{name} {shown} is a read-only replica, where Celery cannot write its queues: "
            "name the master (or a Redis of its own)") from e
    except redis.ResponseError as e:
        # A cluster node refuses SELECT of any database but 0, before INFO can ask.
        cluster = "cluster" in str(e).lower()
        if not cluster:
            raise BrokerUnusable(f"{name} {shown} answered with an error: {e}") from e
    except redis.RedisError as e:
        raise BrokerUnusable(f"{name} {shown} cannot be reached: {e}") from e
    finally:
        client.close()
    if cluster:
        raise BrokerUnusable(
            f"{name} {shown} is a Redis Cluster node, and Celery needs a standalone Redis "
            "(a cluster has only database 0, and the broker must not share the event store's "
            "cluster): use RabbitMQ (amqp://) or a Redis of its own")


def _check_amqp(url: str, timeout: float) -> None:
    """Connect, then do what Celery does with the vhost: declare a queue, publish to it and
    read from it (a queue of its own, deleted after), so that a user without the vhost's
    configure, write or read permission is refused here rather than in every task."""
    from kombu import Connection

    queue = f"arbiter.broker-check.{uuid.uuid4().hex}"
    try:
        with Connection(url, connect_timeout=timeout) as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                         timeout=timeout)
            channel = connection.channel()
            try:
                channel.queue_declare(queue, exclusive=True, auto_delete=True)
                channel.basic_publish(channel.prepare_message(b"check"), exchange="",
                                      routing_key=queue)
                got = None
                for _ in range(int(timeout / 0.05) + 1):
                    got = channel.basic_get(queue, no_ack=True)
                    if got is not None:
                        break
                    time.sleep(0.05)
                if got is None:
                    raise BrokerUnusable(
                        f"ARBITER_BROKER_URL {maybe_sanitize_url(url)} cannot be used: a "
                        f"message published to a queue could not be read back in {timeout} s")
                channel.queue_delete(queue)
            finally:
                channel.close()
    except BrokerUnusable:
        raise
    except Exception as e:  # noqa: BLE001 - refused, unknown vhost, bad login: all one answer
        reason = getattr(e, "reply_text", "") or str(e) or type(e).__name__
        if reason.startswith(("ACCESS_REFUSED", "NOT_ALLOWED")):
            reason += (" (the user needs configure, write and read permissions on the vhost, "
                       "e.g. rabbitmqctl set_permissions -p VHOST USER '.*' '.*' '.*')")
        raise BrokerUnusable(
            f"ARBITER_BROKER_URL {maybe_sanitize_url(url)} cannot be used: {reason}") from e


def check_env(env: dict[str, str] | None = None, results: bool = True) -> str:
    """Check ARBITER_BROKER_URL (and the result backend when `results`); the broker's URL,
    or "" when none is set."""
    env = dict(os.environ if env is None else env)
    broker = env.get("ARBITER_BROKER_URL", "")
    if broker:
        check(broker, env.get("ARBITER_REDIS_URL", ""),
              result_backend(broker, env) if results else "")
    return broker


app = make_app()
