"""Demo data: a synthetic history of runs for the boards (``manage.py demo_history``) and the
10,000-run database of the benchmark (``manage.py bench_data``). Every row it writes is marked
``metadata.demo == "synthetic"``; real runs are never touched."""
