"""One HTML page per run: the story a run folder's files tell, for people.

:func:`load_story` reads a finished ``improve run`` / ``eval`` / ``demo`` folder (nothing is
recomputed); :func:`story_tables` turns it into the tables both the page and
``rlstream report``'s terminal output print; :func:`write_html_report` writes the
self-contained page (styles and plots inline, no script, no network).
"""

from rlstream.reporting.page import REPORT_FILE, render_html, write_html_report
from rlstream.reporting.story import RunStory, Table, load_story, story_tables

__all__ = [
    "REPORT_FILE",
    "RunStory",
    "Table",
    "load_story",
    "render_html",
    "story_tables",
    "write_html_report",
]
