# One image for web, workers and beat. The CUDA devel base brings nvcc for load_inline solutions;
# the web process never imports torch, it only shares the image.
FROM nvidia/cuda:13.0.0-cudnn-devel-ubuntu24.04

# The torch every GPU grade so far ran (their environment in bench/results/; tests/hardening
# checks they agree): baselines are cached per torch version, and timings are compared across
# grades of one. The CPU suite pins its own (the Makefile's: the CPU wheel these machines hold).
ARG TORCH_VERSION=2.11.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

# util-linux gives the sandbox unshare, setpriv and prlimit.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev util-linux \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}"

WORKDIR /app
COPY pyproject.toml ./
COPY arena_web ./arena_web
COPY submissions ./submissions
COPY runners ./runners
COPY transcripts ./transcripts
COPY arena_cli ./arena_cli
RUN pip install --no-cache-dir -e '.[engine]'
COPY . .

# With DEBUG off, as the containers run: whitenoise's manifest (hashed names) is written only then.
RUN DEBUG=0 SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["gunicorn", "arena_web.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
