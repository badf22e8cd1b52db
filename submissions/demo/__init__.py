"""The demo's data: the H100 board of real agent runs as this platform graded them
(``kernelbench_hard_h100.json``, loaded by ``manage.py load_graded_runs``) and the example runs'
recorded transcripts (``transcripts.tar.gz``, for ``manage.py demo_runs``). The synthetic
history for load tests lives in ``bench/synthetic_history.py``, never in the demo."""
