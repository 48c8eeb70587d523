"""CSV and JSON stay text but keep their structure.

* CSV (the dialect sniffed from the start: comma, semicolon, tab or pipe): the first row is the
  header; every later row is ``header: value; header: value``, so a row is found by any of its
  cells and read with its header. Pages of :data:`~sections.SECTION_CHARS`, each starting with the
  columns. Up to :data:`MAX_CELLS` cells; the rest is noted.
* JSON (or JSON Lines): every value on a line with its flattened key path, ``a.b[0].c: value``;
  objects in a list of objects start a block. Nesting deeper than :data:`MAX_DEPTH` is refused.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from memory_engine.adapters.extractors.sections import Budget, DocumentInfo, Extracted, Paginator, table_lines
from memory_engine.adapters.extractors.text import decode_text
from memory_engine.domain.documents import Page
from memory_engine.domain.ingestion_errors import DocumentUnreadable
from memory_engine.ports.ocr import OcrEngine

MAX_CELLS = 1_000_000
MAX_DEPTH = 64


class CsvExtractor:
    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        """Rows with their header, in pages; ``ocr`` is not used."""
        text = decode_text(data, name=name)
        try:
            dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        info = DocumentInfo()
        return Extracted(_csv_pages(text, dialect, info), info)


def _csv_pages(text: str, dialect: type[csv.Dialect] | csv.Dialect, info: DocumentInfo) -> Iterator[Page]:
    csv.field_size_limit(1_000_000)
    reader = csv.reader(io.StringIO(text), dialect)
    out = Paginator(budget=Budget(info))
    header: list[str] | None = None
    cells = 0
    try:
        for row in reader:
            cells += len(row)
            if cells > MAX_CELLS:
                note = f"bounded: only the first {MAX_CELLS:,} cells were read"
                info.notes.append(note)
                out.block(f"({note})")
                break
            if header is None:
                if any(cell.strip() for cell in row):
                    header = [cell.strip() for cell in row]
                    out.heading(3, "Columns: " + " | ".join(cell for cell in header if cell))
                continue
            lines = table_lines([header, row])
            if len(lines) > 1:
                out.block(lines[1])
            yield from out.take()
    except csv.Error as exc:
        raise DocumentUnreadable(f"the CSV cannot be read past line {reader.line_num}: {exc}") from exc
    yield from out.finish()


class JsonExtractor:
    def pages(self, data: bytes, *, name: str, ocr: OcrEngine | None = None) -> Iterator[Page]:
        """Flattened key paths with their values; ``ocr`` is not used."""
        text = decode_text(data, name=name)
        try:
            values = [json.loads(text)]
        except json.JSONDecodeError as whole:
            try:  # JSON Lines: one value a line
                values = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError:
                raise DocumentUnreadable(f"{name} is not valid JSON ({whole}); fix it or upload it as text/plain") from whole
        except RecursionError as exc:
            raise DocumentUnreadable(f"{name} nests deeper than the reader allows") from exc
        for value in values:
            _check_depth(value, name)
        info = DocumentInfo()
        return Extracted(_json_pages(values, info), info)


def _check_depth(value: Any, name: str) -> None:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise DocumentUnreadable(f"{name} nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _json_pages(values: list[Any], info: DocumentInfo) -> Iterator[Page]:
    out = Paginator(budget=Budget(info))
    for index, value in enumerate(values):
        prefix = f"[{index}]" if len(values) > 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for position, item in enumerate(value):  # records: one block each
                out.block("\n".join(flatten(item, f"{prefix}[{position}]")))
                yield from out.take()
        else:
            for line in flatten(value, prefix):
                out.block(line)
            yield from out.take()
    yield from out.finish()


def flatten(value: Any, path: str = "") -> list[str]:
    """``{"a": {"b": [1, 2]}}`` -> ``["a.b[0]: 1", "a.b[1]: 2"]`` (an empty object or list as ``{}``/``[]``)."""
    lines: list[str] = []
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict) and item:
            stack.extend(reversed([(f"{key}.{k}" if key else str(k), v) for k, v in item.items()]))
        elif isinstance(item, list) and item:
            stack.extend(reversed([(f"{key}[{i}]", v) for i, v in enumerate(item)]))
        else:
            shown = json.dumps(item, ensure_ascii=False) if not isinstance(item, str) else item
            lines.append(f"{key}: {shown}" if key else shown)
    return lines
