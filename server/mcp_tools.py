"""The MCP tools as data: name, description, parameters (one list gives both the JSON Schema the
client sees and the validation of what it sends) and the :mod:`server.read_commands` function each runs.
:mod:`server.mcp` serves them; this module does not import the MCP SDK.

The descriptions are written for the agent that reads them: which layer each tool asks (the index,
as of the last build; or the files on disk now), what the answer holds, and what ``weak`` means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from builder.core.config import Config
from builder.core.errors import UserError
from builder.notes.grep import MAX_LINE_CHARS
from server import read_commands
from server.query import MAX_QUERY_CHARS
from server.read_commands import MAX_READ_LINES, READ_LINES, ReadPath

TOC_NOTES = 200  # toc: notes returned by default …
MAX_TOC_NOTES = 1000  # … and at most
TOC_CHARS = 120_000  # and about this much JSON
GREP_RESULTS = 100  # grep: matching lines returned by default …
MAX_GREP_RESULTS = 500  # … and at most
MAX_PATTERN_CHARS = 500  # grep: the longest pattern
MAX_TEXT_ARGUMENT = 1000

INSTRUCTIONS = """\
The user's own markdown notes (Czech, Slovak and English), in {count} source(s): {sources}.
Three layers answer about them:
1. search: the index. Finds sections by words (any word form, diacritics optional) and by meaning
   (paraphrase, other languages). Start here for any question about what the notes say.
2. toc: what the index holds, note by note: paths, titles, tags, headings. Browse a folder, or
   find the path and section anchor to read.
3. grep and read_note: the files on disk now. grep finds exact strings everywhere (identifiers,
   numbers, names, every occurrence); read_note gives a note's current text with line numbers,
   for quoting and for answers that need the whole section.
The index is rebuilt about once a minute, so search and toc can be a minute older than the disk;
grep and read_note are not. When search says weak: true (or finds nothing) and grep finds nothing
either, the notes do not cover the topic: answer "nothing in your notes" rather than answering from
general knowledge as if the notes said it. Quote notes by source:path and line."""

ASK_INSTRUCTIONS = """
4. ask (this portal has an answer provider): a question answered by the portal's model from the sections
   search finds, every citation checked before it is returned. Present an "answered" answer as it is,
   with its [n] and the sources' links; "not_in_notes" means the notes do not say."""


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its JSON Schema and its check."""

    name: str
    kind: str  # "string", "integer" or "boolean"
    description: str
    required: bool = False
    default: Any = None
    minimum: int | None = None
    maximum: int | None = None
    max_length: int = MAX_TEXT_ARGUMENT
    choices: tuple[str, ...] = ()
    unknown_choice: str = "{name} must be one of {choices}, got {value!r}"

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.kind, "description": self.description}
        if self.choices:
            schema["enum"] = list(self.choices)
        elif self.kind == "string":
            schema |= {"minLength": 1, "maxLength": self.max_length}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.default is not None:
            schema["default"] = self.default
        return schema

    def check(self, value: Any) -> Any:
        """The value to use; a one-line :class:`UserError` naming the argument when it is wrong."""
        if value is None or (value == "" and not self.required):
            if self.required:
                raise UserError(f"{self.name} is required")
            return self.default
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise UserError(f"{self.name} must be true or false, got {_shown(value)}")
        elif self.kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int) or not (
                    (self.minimum is None or value >= self.minimum)
                    and (self.maximum is None or value <= self.maximum)):
                raise UserError(f"{self.name} must be a whole number from {self.minimum} to {self.maximum}, "
                                f"got {_shown(value)}")
        else:
            if not isinstance(value, str):
                raise UserError(f"{self.name} must be a string, got {_shown(value)}")
            if not value.strip():
                raise UserError(f"{self.name} must not be empty")
            if len(value) > self.max_length:
                raise UserError(f"{self.name} is longer than {self.max_length} characters")
            if self.choices and value not in self.choices:
                raise UserError(self.unknown_choice.format(name=self.name, choices=", ".join(self.choices),
                                                           value=value[:40]))
        return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what the client is told and what it runs."""

    name: str
    title: str
    description: str
    params: tuple[Param, ...]
    run: Callable[..., dict[str, Any]]  # run(read_path, **arguments) → a read_commands.* dict

    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required], "additionalProperties": False}

    def arguments(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """The checked arguments with their defaults; an unknown argument is an error, not ignored."""
        given = given or {}
        known = {p.name for p in self.params}
        for name in given:
            if name not in known:
                takes = f"its arguments: {', '.join(p.name for p in self.params)}" if known else "it takes none"
                raise UserError(f"{self.name} has no argument {name[:40]!r} ({takes})")
        return {p.name: p.check(given.get(p.name)) for p in self.params}

    def call(self, read_path: ReadPath, given: dict[str, Any] | None) -> dict[str, Any]:
        return self.run(read_path, **self.arguments(given))


def tools(config: Config) -> dict[str, Tool]:
    """The five tools (six with ``ask`` when an answer provider is configured), with this config's source
    ids as the choices for ``source``."""
    ids = tuple(s.id for s in config.sources)

    def source(description: str, required: bool = False) -> Param:
        return Param("source", "string", description, required=required, choices=ids,
                     unknown_choice="unknown source {value!r} (configured: {choices})")

    found = [
        Tool("search", "Search the notes", SEARCH, (
            Param("query", "string", "What to look for, in any language; plain text, never query syntax.",
                  required=True, max_length=MAX_QUERY_CHARS),
            Param("limit", "integer", "How many hits (sections) to return.", default=10, minimum=1, maximum=100),
            source("Only this source (default: every source)."),
            Param("tag", "string", "Only notes with this tag (any case, diacritics as in the notes)."),
            Param("mode", "string", "hybrid: words and meaning (the default, best in general); bm25: words "
                  "only; vector: meaning only.", default="hybrid", choices=("hybrid", "bm25", "vector")),
            Param("as_typed", "boolean", "Search the words as typed: a word no note holds is not replaced by "
                  "the close word the notes hold (see 'corrected' in the answer).", default=False),
        ), lambda rp, **a: read_commands.search_data(rp, **a)),
        Tool("toc", "List the notes", TOC, (
            source("Only this source (default: every source)."),
            Param("folder", "string", "Only the notes below this folder of the source, e.g. 'projekty' "
                  "(default: every folder)."),
            Param("tag", "string", "Only notes with this tag."),
            Param("max_notes", "integer", "How many notes to return at most.", default=TOC_NOTES, minimum=1,
                  maximum=MAX_TOC_NOTES),
        ), lambda rp, **a: read_commands.toc_data(rp, max_chars=TOC_CHARS, **a)),
        Tool("grep", "Grep the files", GREP, (
            Param("pattern", "string", "A regular expression (Python syntax), e.g. 'MAX485' or 'RS4\\d\\d'.",
                  required=True, max_length=MAX_PATTERN_CHARS),
            source("Only this source (default: every source)."),
            Param("ignore_case", "boolean", "Ignore case (default: false).", default=False),
            Param("max_results", "integer", "How many matching lines to return at most.", default=GREP_RESULTS,
                  minimum=1, maximum=MAX_GREP_RESULTS),
        ), lambda rp, **a: read_commands.grep_data(rp, **a)),
        Tool("read_note", "Read a note", READ_NOTE, (
            source("The note's source, as search, toc and grep give it.", required=True),
            Param("path", "string", "The note's path inside the source, as search, toc and grep give it.",
                  required=True),
            Param("section", "string", "Only this section: its anchor as search and toc give it (e.g. "
                  "'zapojeni'), or its heading's text (default: the whole note)."),
            Param("start_line", "integer", "Start at this line (default: 1, or the section's first line).",
                  default=1, minimum=1, maximum=10_000_000),
            Param("max_lines", "integer", "How many lines to return at most.", default=READ_LINES, minimum=1,
                  maximum=MAX_READ_LINES),
        ), lambda rp, **a: read_commands.read_data(rp, **a)),
        Tool("status", "Index status", STATUS, (), lambda rp: read_commands.status_data(rp)),
    ]
    if config.answer.enabled:  # no provider configured: no tool that would only say so
        found.append(Tool("ask", "Ask the notes", ASK, (
            Param("question", "string", "The question, in any language.", required=True,
                  max_length=MAX_QUERY_CHARS),
            source("Only this source (default: every source)."),
        ), lambda rp, **a: read_commands.answer_data(rp, **a)))
    return {tool.name: tool for tool in found}


SEARCH = """\
Search the user's notes through the index: by words (BM25; any Czech or Slovak word form, diacritics \
optional; the words of an English question also in Czech translation) and by meaning (vectors; \
paraphrases and other languages), fused by rank. The first tool for any question about what the notes say.
Returns up to `limit` hits, best first, each one section of a note: source, path, title, breadcrumb (the \
section's headings), anchor, line_start and line_end, snippet (HTML-escaped, matched words in <mark>), \
provenance ("words #2, meaning #1": which half found it, at which rank), url (the note's page on the portal, \
relative to its root), more (the note's other matching sections, past `limit` too), copies (the same text \
elsewhere) and words (the section's words that matched, each form once: the forms to grep for).
weak: true means nothing confident matched: the hits are only the closest by meaning and probably do not \
answer. Then tell the user there is nothing in their notes on it (check with grep for an exact word first). \
`notes` holds remarks (a corrected typo, English words searched in translation, embeddings unavailable so \
words only, a query of function words only: add a word that says what to find).
The index can be about a minute older than the files: to quote or answer in detail, read the section with \
read_note(source, path, section=anchor)."""

TOC = f"""\
List the notes the index holds, ordered by source and path: per note its source, path, title, tags, \
headings down to ### (level, text, anchor, line) and url (its page on the portal). Use it to see what \
exists, to browse one folder (`folder`), or to find the path and section anchor for read_note.
As of the last build, about a minute behind the files. At most max_notes notes (and about {TOC_CHARS:,} \
characters): `total` counts them all, and `truncated: true` means some were left out (narrow by source, \
folder or tag)."""

GREP = f"""\
Search every file of the sources as it is on disk now with a regular expression (Python syntax): markdown \
or not, within each source's configured paths and exclude; notes marked published: false are never shown. \
Use it for what ranking may miss or the index has not seen yet: exact identifiers, numbers, names, error \
messages, every occurrence of a word, anything changed in the last minute. Case-sensitive unless \
ignore_case.
Returns matches ({{source, path, line, text}}) in path order, at most max_results; a line longer than \
{MAX_LINE_CHARS} characters is cut and ends with " […]". `truncated: true` means there are more matches: \
narrow the pattern or the source. Read a match in context with read_note(source, path, start_line=line)."""

READ_NOTE = f"""\
Read one note as it is on disk now (not as the index has it), each line as "N: text" with its line number \
(the numbers search, toc and grep give). The whole note, or one section (`section`: the anchor from \
search or toc, or the heading's text), from start_line on, at most max_lines lines and \
{read_commands.MAX_READ_CHARS:,} characters. `truncated: true` means more follows: call again with \
start_line=next_line. `index` says whether the index has seen this version: "current", "changed since \
the last build" or "not indexed yet".
Only notes inside a source's configured scope can be read: a path outside it, a hidden file, a link that \
leads out of the source and a note marked published: false are errors."""

ASK = """\
Answer a question from the notes with the portal's configured model, checked before it is returned: \
status "answered" means every sentence of `answer` ends with [n] citing a passage in `sources` that says \
it (quotes word for word, numbers and dates as written there); `citations` link each cited passage \
(url: its section on the portal). "not_in_notes": the notes do not answer it: say so, do not answer from \
general knowledge. "refused": the model's answer failed the check (see `problems`) and is not shown. \
"unavailable": the model could not be reached; `search` holds the search's hits. Present an answered \
`answer` as it is, with its [n] and the sources' links."""

STATUS = """\
The state of the index and its sources: per source the notes and chunks indexed, vectors still pending \
(those chunks are found by words only), the last sync time, the indexed revision and the last error; and \
the embedding model. Use it to tell how fresh the index is, or why search may miss something."""
