"""Every CSV the project writes goes through here: a cell a spreadsheet would run is defused.

OWASP's CSV injection guidance: a cell whose first character is ``=``, ``+``,
``-`` or ``@``, or a TAB or carriage return, is read by Excel, LibreOffice and
Sheets as a formula; a leading space or newline does not stop them. Such a cell
gets a single quote in front, which the spreadsheet shows as text. Quotes and
commas inside a cell are the csv module's business. JSON Lines exports are
never touched: they are exact.
"""

import csv
from collections.abc import Iterable, Iterator
from typing import Any

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """The value, with a quote in front when a spreadsheet would read it as a formula."""
    if not isinstance(value, str):
        return value
    if value[:1] in ("\t", "\r") or value.lstrip(" \t\r\n")[:1] in _FORMULA_STARTS:
        return "'" + value
    return value


class _Echo:
    """A file-like object whose write() hands the line back, for csv.writer."""

    def write(self, value: str) -> str:
        return value


def csv_lines(header: list[str], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """The header and each row as one CSV line, every cell through ``safe_cell``."""
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([safe_cell(cell) for cell in row])
