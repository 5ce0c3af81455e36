"""The workers: projections and read models, rebuilds, AI turns and simulations on Celery,
and deadlines. See docs/workers.md."""
