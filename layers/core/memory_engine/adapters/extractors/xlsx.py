"""Excel ``.xlsx`` (Office Open XML): one page per sheet (the sheet's number), its rows as
``header: value; header: value`` lines, so a row is found by any of its cells and read with its
header. The header is the row with the most cells of text before the first row with a number (its
empty cells named by the cells above: headers spanning rows); rows above it are read as they are
(titles). Shared and inline strings, booleans, errors and cached formula results are
read; numbers in a date format become ISO dates. A sheet longer than :data:`~sections.SECTION_CHARS`
continues on further pages with the same number, each repeating the sheet's name and header.

Bounded: the workbook is read up to :data:`MAX_CELLS` cells (streamed, so a sheet of a million cells
costs no more than that); what is left out is said at the end of the last sheet read and in the
document's notes. Hidden sheets are read; charts and images are not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from xml.etree.ElementTree import Element

from memory_engine.adapters.extractors.containers import Container, ZipExtractor, ns_local
from memory_engine.adapters.extractors.pptx import relationships
from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Paginator, table_lines
from memory_engine.domain.documents import Page

S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
MAX_CELLS = 200_000
#: Shared strings read at most (a cell pointing past them reads as empty).
MAX_STRINGS = 1_000_000
#: Rows without numbers looked at for the header before the data starts.
HEADER_ROWS = 20
_DATE_FORMATS = frozenset({14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47})
_DATE_CODE = re.compile(r"(?<!\\)[dmyhs]", re.I)
_COLUMN = re.compile(r"[A-Z]+")


class XlsxExtractor(ZipExtractor):
    what = "Excel workbook"

    def read(self, container: Container, name: str, info: DocumentInfo) -> Iterator[Page]:
        """One page per sheet (more for a long sheet)."""
        workbook = container.xml("xl/workbook.xml")
        rels = relationships(container, "xl/workbook.xml")
        sheets = [(s.get("name", f"Sheet {i}"), rels[s.get(f"{_R}id", "")][1])
                  for i, s in enumerate(workbook.iter(f"{S}sheet"), start=1) if s.get(f"{_R}id", "") in rels]
        strings = _shared_strings(container, rels)
        dates = _date_styles(container, rels)
        epoch = datetime(1904, 1, 1) if any(p.get("date1904") in ("1", "true") for p in workbook.iter(f"{S}workbookPr")) \
            else datetime(1899, 12, 30)
        return _Reader(container, strings, dates, epoch, info).read(sheets)


def _shared_strings(container: Container, rels: dict[str, tuple[str, str]]) -> list[str]:
    parts = [p for kind, p in rels.values() if kind == "sharedStrings"]
    if not parts or not container.has(parts[0]):
        return []
    strings: list[str] = []
    for element in container.iter_xml(parts[0]):
        if element.tag == f"{S}si":
            strings.append(_string(element))
            element.clear()
            if len(strings) >= MAX_STRINGS:
                break
    return strings


def _string(si: Element) -> str:
    """The text of a shared string: its plain text or rich runs, not its phonetic guide (``rPh``)."""
    parts: list[str] = []
    for child in si:
        tag = ns_local(child.tag)
        if tag == "t":
            parts.append(child.text or "")
        elif tag == "r":
            parts.extend(t.text or "" for t in child.iter(f"{S}t"))
    return "".join(parts)


def _date_styles(container: Container, rels: dict[str, tuple[str, str]]) -> set[int]:
    """Indexes of the cell formats that show a date."""
    parts = [p for kind, p in rels.values() if kind == "styles"]
    if not parts or not container.has(parts[0]):
        return set()
    styles = container.xml(parts[0])
    custom = {int(f.get("numFmtId", "0")): f.get("formatCode", "") for f in styles.iter(f"{S}numFmt")}
    found: set[int] = set()
    xfs = styles.find(f"{S}cellXfs")
    for index, xf in enumerate(xfs if xfs is not None else []):
        fmt = int(xf.get("numFmtId", "0") or 0)
        code = re.sub(r'"[^"]*"|\[[^\]]*\]', "", custom.get(fmt, ""))
        if fmt in _DATE_FORMATS or (fmt in custom and _DATE_CODE.search(code)):
            found.add(index)
    return found


class _Reader:
    def __init__(self, container: Container, strings: list[str], dates: set[int], epoch: datetime,
                 info: DocumentInfo) -> None:
        self.container, self.strings, self.dates, self.epoch, self.info = container, strings, dates, epoch, info
        self.cells = 0

    def read(self, sheets: list[tuple[str, str]]) -> Iterator[Page]:
        budget = Budget(self.info)
        for number, (name, part) in enumerate(sheets, start=1):
            if not self.container.has(part):
                continue
            if self.cells >= MAX_CELLS:
                self.info.notes.append(f"sheet {name!r} not read: the workbook passed {MAX_CELLS:,} cells")
                continue
            yield from self._sheet(number, name, part, budget)

    def _sheet(self, number: int, name: str, part: str, budget: Budget) -> Iterator[Page]:
        out = Paginator(number=number, budget=budget, split_level=0)
        out.heading(2, f"Sheet: {name}")
        header: list[str] | None = None
        above: list[list[str]] = []  # the rows before the first row with a number: titles and the header
        bounded = False
        for row in self._rows(part):
            if self.cells > MAX_CELLS:
                bounded = True
                break
            if header is None and not any(_number(cell) for cell in row) and len(above) < HEADER_ROWS:
                above.append(row)
                continue
            if header is None:
                header = _header(above, out)
            lines = table_lines([header, row]) if any(header) else []
            if len(lines) > 1:
                out.block(lines[-1])
            else:  # no header (a sheet of numbers only) or a one-column one: the row's cells as they are
                out.block(" | ".join(cell for cell in row if cell))
            yield from out.take()
        if header is None:
            _header(above, out)
        if bounded:
            note = f"sheet {name!r} bounded: only the first {MAX_CELLS:,} cells of the workbook were read"
            out.block(f"({note})")
            self.info.notes.append(note)
        yield from out.finish()

    def _rows(self, part: str) -> Iterator[list[str]]:
        for element in self.container.iter_xml(part):
            if element.tag != f"{S}row":
                continue
            cells: dict[int, str] = {}
            for position, cell in enumerate(element.findall(f"{S}c")):
                self.cells += 1
                column = _column(cell.get("r", ""), position)
                value = self._value(cell)
                if value and column < 16384:
                    cells[column] = value
            element.clear()
            if cells:
                yield [cells.get(i, "") for i in range(max(cells) + 1)]
            if self.cells > MAX_CELLS:
                return

    def _value(self, cell: Element) -> str:
        kind = cell.get("t", "n")
        if kind == "inlineStr":
            return " ".join("".join(t.text or "" for t in cell.iter(f"{S}t")).split())
        raw = cell.findtext(f"{S}v")
        if raw is None:
            return ""
        if kind == "s":
            index = int(raw) if raw.isdigit() else -1
            return " ".join(self.strings[index].split()) if 0 <= index < len(self.strings) else ""
        if kind == "b":
            return "TRUE" if raw == "1" else "FALSE"
        if kind in ("str", "e", "d"):
            return raw.strip()
        try:
            number = float(raw)
        except ValueError:
            return raw.strip()
        style = int(cell.get("s", "0") or 0)
        if style in self.dates and 0 <= number < 2_958_466:
            moment = self.epoch + timedelta(days=number)
            return moment.date().isoformat() if moment.time() == datetime.min.time() else moment.isoformat(" ")
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.10g}"


def _header(above: list[list[str]], out: Paginator) -> list[str]:
    """The header among the rows above the data: the row with the most cells of text (the last of
    equals), its empty cells named by the nearest cell above them (a header spanning several rows).
    The rows before it are written as they are (titles); the rows after it as table rows."""
    if not above:
        return []
    best = max(range(len(above)), key=lambda i: (sum(1 for c in above[i] if c), i))
    header = list(above[best])
    for row in above[:best]:
        out.block(" | ".join(cell for cell in row if cell))
    for column, cell in enumerate(header):
        if not cell:
            header[column] = next((row[column] for row in reversed(above[:best]) if column < len(row) and row[column]), "")
    out.heading(3, "Columns: " + " | ".join(cell for cell in header if cell))
    for row in above[best + 1:]:
        lines = table_lines([header, row])
        if len(lines) > 1:
            out.block(lines[-1])
    return header


def _column(ref: str, position: int) -> int:
    match = _COLUMN.match(ref)
    if not match:
        return position
    index = 0
    for letter in match.group(0):
        index = index * 26 + ord(letter) - 64
    return index - 1


def _number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True
