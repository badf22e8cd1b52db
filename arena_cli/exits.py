"""Exit statuses of ``arena`` (docs/cli.md)."""

OK = 0
CANDIDATE_FAILED = 1  # graded, and the verdict is not ok
BAD_INPUT = 2  # a bad argument, folder, file or field: nothing was sent or stored
AUTH = 3  # no token, or the server refused it
UNREACHABLE = 4  # no answer after every retry, or the server failed (5xx)
WAIT_TIMEOUT = 5  # --wait gave up before the grade was done
RUN_FAILED = 6  # arena run: the run left no gradable solution; its outcome says why
