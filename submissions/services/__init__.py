"""Writes: one module per thing written.

- ``runs``: accepting uploads, publishing.
- ``evaluations``: an evaluation from queued to graded, the run's headline and status.
- ``engine``: running ``python -m runners`` for one evaluation, cached reference timings.
- ``transcripts``: the normalized transcript and its rendered page (the transcript store).
- ``registry``: the problem deck and hardware roofs mirrored from the engine; example entries.
- ``tokens``: API tokens.
- ``queue``: sending Celery tasks by name, and which queues have a worker.
"""
