# One image for web, workers and beat. The CUDA devel base brings nvcc for load_inline solutions;
# the web process never imports torch, it only shares the image.
FROM pytorch/pytorch:2.9.1-cuda12.8-cudnn9-devel

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# util-linux gives the sandbox unshare, setpriv and prlimit.
RUN apt-get update \
    && apt-get install -y --no-install-recommends util-linux \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml ./
COPY arena_web ./arena_web
COPY submissions ./submissions
COPY runners ./runners
COPY transcripts ./transcripts
RUN pip install --no-cache-dir -e '.[engine]'
COPY . .

RUN DEBUG=1 python manage.py collectstatic --noinput

EXPOSE 8000
CMD ["gunicorn", "arena_web.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
