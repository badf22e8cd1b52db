"""Serves plotly.js from the installed ``plotly`` package as ``vendor/plotly.min.js``.

The figures are built by the Python package, so its own copy of plotly.js is the one that
matches them; no second copy is committed. Listed in ``STATICFILES_FINDERS``, this finder feeds
``collectstatic`` (production) and whitenoise's finder mode (DEBUG) alike.
"""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage

PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
FILE_NAME = "plotly.min.js"
PREFIX = "vendor"
STATIC_PATH = f"{PREFIX}/{FILE_NAME}"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=PACKAGE_DATA)
        self.storage.prefix = PREFIX

    def check(self, **kwargs):
        if (PACKAGE_DATA / FILE_NAME).is_file():
            return []
        return [Error(f"{PACKAGE_DATA / FILE_NAME} is missing", id="submissions.E101")]

    def find(self, path, find_all=False, **kwargs):
        if path != STATIC_PATH:
            return [] if find_all else None
        found = str(PACKAGE_DATA / FILE_NAME)
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield FILE_NAME, self.storage
