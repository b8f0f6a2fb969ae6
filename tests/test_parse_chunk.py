"""Parsing (title, tags, anchors) and the chunking policy, on real markdown."""

from __future__ import annotations

import re
import textwrap

import pytest

from builder.chunker import CHARS_PER_TOKEN, HARD_MAX_TOKENS, MAX_TOKENS, Place, chunk_note
from builder.core.slug import Slugger, slugify
from builder.notes.parse import Heading, headings_of, make_markdown, parse_note
from tests.conftest import SHARED, require_shared


def note(text: str, path: str = "dir/my-note.md"):
    return parse_note(path, textwrap.dedent(text).lstrip("\n"))


@pytest.mark.parametrize("text, title", [
    ("---\ntitle: Z hlavičky\n---\n# Nadpis\n", "Z hlavičky"),
    ("# První H1\n\n# Druhý H1\n", "První H1"),
    ("## Jen H2\n\ntext\n", "my note"),
    ("---\ntitle: ''\n---\nSetext titulek\n==============\n", "Setext titulek"),
])
def test_title_precedence(text, title):
    assert note(text).title == title


@pytest.mark.parametrize("front, tags", [
    ("tags: [čaj, Recepty]", ("čaj", "Recepty")),
    ("tags: čaj, recepty , ", ("čaj", "recepty")),
    ("tags: '#hory'", ("hory",)),
    ("taxonomy:\n  tag: [docker, k8s]\n  category: [zkt]", ("docker", "k8s")),
    ("tags: 42", ()),
])
def test_tags_from_list_or_comma_string(front, tags):
    assert note(f"---\n{front}\n---\nbody\n").tags == tags


def test_slugs_are_ascii_stable_and_unique_within_a_note():
    assert slugify("Čaj a mléko – příprava!") == "caj-a-mleko-priprava"
    assert slugify("Ľadový čaj, ôsmy deň") == "ladovy-caj-osmy-den"
    assert slugify("🍵") == "section"
    s = Slugger()
    assert [s.slug(t) for t in ("Poznámky", "Poznámky", "poznamky", "Poznámky-1")] == [
        "poznamky", "poznamky-1", "poznamky-2", "poznamky-1-1"]
    n = note("# A\n## Poznámky\n## Poznámky\n### Metoda `__init__`\n")
    assert [(h.level, h.text, h.anchor) for h in n.headings] == [
        (1, "A", "a"), (2, "Poznámky", "poznamky"), (2, "Poznámky", "poznamky-1"),
        (3, "Metoda __init__", "metoda-init")]


def test_broken_front_matter_warns_and_keeps_the_body():
    n = note("---\ntitle: [oops\n---\n# Tělo\n\ntext\n")
    assert n.title == "Tělo" and n.warnings == ("dir/my-note.md: broken front matter at line 2, indexed from the body",)


# Front matter YAML refuses, as written in kemt-wiki's Grav pages: read line by line when every line
# is ``key: value``; a ``published: false`` line is kept whatever else is broken.
@pytest.mark.parametrize("front, title, published, tags, warning", [
    ("title: Týždeň 4: Vytváranie obrazov\npublished: true", "Týždeň 4: Vytváranie obrazov", True, (),
     "broken front matter at line 2, read line by line as key: value"),
    ("title:Vetvenie a cykly\npublished: true\n", "Vetvenie a cykly", True, (),
     "broken front matter at line 3, read line by line as key: value"),
    ("# a comment\ntitle: Čas: 3 h\ntags: [docker, k8s]", "Čas: 3 h", True, ("docker", "k8s"),
     "broken front matter at line 3, read line by line as key: value"),
    ("published:false", "Tělo", False, (), "front matter is not a mapping, read line by line as key: value"),
    ("title: [oops\npublished: 'no'", "Tělo", False, (), "broken front matter at line 3, indexed from the body"),
    ("title: a: b\ntaxonomy:\n  tag: [x]", "Tělo", True, (), "broken front matter at line 2, indexed from the body"),
])
def test_front_matter_yaml_refuses_is_read_line_by_line(front, title, published, tags, warning):
    n = note(f"---\n{front}\n---\n# Tělo\n\ntext\n")
    assert (n.title, n.published, n.tags, n.warnings) == (title, published, tags, (f"dir/my-note.md: {warning}",))


def test_published_false():
    n = note("---\npublished: false\n---\n[a](../x.md) [[Wiki|label]] ![i](img.png)\n```\n[[not a link]]\n```\n")
    assert n.published is False


def _whole_parse_headings(text: str) -> list[Heading]:
    """The headings as a whole parse (blocks and every inline) reads them: the reference."""
    return headings_of(make_markdown().parse(text.replace("\r\n", "\n").replace("\r", "\n")))


def test_headings_read_without_the_inline_pass_are_those_of_a_whole_parse():
    text = textwrap.dedent(r"""
        # Escaped \*stars\* &amp; entities &#x41; [ref link][r] `code *x*`
        Setext *heading* with [a link](x.md)
        ===
        ## <span>HTML</span> and ![alt **text**](i.png) and [[Wiki|label]]
        > # quoted: not a heading of the note
        - # listed: nor this
        ### Trailing hashes ###
        [r]: https://example.org "Title"
        """).lstrip("\n")
    assert _whole_parse_headings(text) == list(note(text).headings)
    assert [h.text for h in note(text).headings] == [
        "Escaped *stars* & entities A ref link code *x*", "Setext heading with a link",
        "HTML and alt **text** and [[Wiki|label]]", "Trailing hashes"]


@pytest.mark.slow
def test_the_index_reads_every_corpus_note_s_headings_as_a_whole_parse_does():
    notes = sorted(require_shared(SHARED / "corpora").rglob("*.md"))
    assert len(notes) > 500
    for path in notes:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert list(parse_note(path.name, text).headings) == _whole_parse_headings(text), path


def test_sections_breadcrumbs_anchors_and_line_ranges():
    n = note("""
        ---
        title: Teh Tarik
        ---
        Úvodní odstavec před nadpisem.

        # Teh Tarik

        ## Suroviny

        - voda
        ### Čaj a mléko

        Silný čaj.
        """)
    chunks = chunk_note(n)
    assert [(c.breadcrumb, c.anchor, c.line_start, c.line_end) for c in chunks] == [
        ("Teh Tarik", "", 4, 4),
        ("Teh Tarik > Suroviny", "suroviny", 8, 10),
        ("Teh Tarik > Suroviny > Čaj a mléko", "caj-a-mleko", 11, 13),
    ]
    assert chunks[2].embed_text == "Teh Tarik > Suroviny > Čaj a mléko\n\nSilný čaj."


def test_small_sibling_sections_merge_under_their_parent():
    n = note("# T\n\n## A\n\nkrátké a\n\n## B\n\nkrátké b\n\n## C\n\n" + "dlouhé c. " * 100 + "\n")
    chunks = chunk_note(n)
    assert [c.anchor for c in chunks] == ["a", "c"]
    assert chunks[0].text == "krátké a\n\n## B\n\nkrátké b"


def test_big_section_splits_at_paragraphs_with_overlap():
    paragraphs = [f"Odstavec {i}. " + "slovo " * 120 for i in range(12)]
    n = note("# Velká\n\n## Sekce\n\n" + "\n\n".join(paragraphs) + "\n")
    chunks = chunk_note(n)
    assert len(chunks) >= 3
    assert all(len(c.text) <= (MAX_TOKENS + 80) * CHARS_PER_TOKEN for c in chunks)
    assert {c.anchor for c in chunks} == {"sekce"}
    for before, after in zip(chunks, chunks[1:], strict=False):
        overlap = after.text.split("\n\n")[0]  # the next chunk repeats the previous tail
        assert before.text.endswith(overlap) and 150 <= len(overlap) <= 256
    body = "\n\n".join(c.text for c in chunks)
    assert all(p.strip() in body for p in paragraphs)  # nothing is lost


def _words(tag: str, count: int) -> str:
    return f"{tag}: " + " ".join(f"slovo{i}" for i in range(count))


def test_pieces_of_a_split_section_name_the_h4_to_h6_they_start_under():
    """A hit on the third piece lands on "Detail A", not 12 lines above it at "Sekce"; no piece ends
    with a heading whose text went to the next piece, and a piece that starts at a heading repeats
    nothing of the subsection before it."""
    n = note("# Dlouhá\n\n## Sekce\n\n" + _words("úvod", 250) + "\n\n#### Podsekce A\n\n" + _words("a1", 250)
             + "\n\n" + _words("a2", 250) + "\n\n##### Detail A\n\n" + _words("ad", 300)
             + "\n\n#### Podsekce B\n\n" + _words("b1", 250) + "\n")
    chunks = chunk_note(n)
    assert [(c.breadcrumb, c.anchor, c.line_start, c.line_end) for c in chunks] == [
        ("Dlouhá > Sekce", "sekce", 3, 5),
        ("Dlouhá > Sekce > Podsekce A", "podsekce-a", 7, 9),
        ("Dlouhá > Sekce > Podsekce A", "podsekce-a", 11, 11),  # a2, under Podsekce A still
        ("Dlouhá > Sekce > Podsekce A > Detail A", "detail-a", 13, 15),
        ("Dlouhá > Sekce > Podsekce B", "podsekce-b", 17, 19),
    ]
    assert [c.text.split("\n")[0][:20] for c in chunks] == [
        "úvod: slovo0 slovo1 ", "#### Podsekce A", "slovo222 slovo223 sl", "##### Detail A", "#### Podsekce B"]
    assert chunks[0].text.endswith("slovo249")  # not with "#### Podsekce A"
    assert chunks[2].text.endswith(_words("a2", 250))  # the overlap comes first, then a2 whole
    assert {h.anchor for h in n.headings} >= {c.anchor for c in chunks}  # every anchor is on the page


def test_a_heading_is_never_a_piece_of_its_own():
    """A section opening with an H4 over a code block bigger than the budget: the heading goes with the block."""
    fence = "```\n" + "".join(f"radek {i} " + "x" * 30 + "\n" for i in range(90)) + "```"
    n = note(f"# T\n\n## S\n\n#### Ukázka\n\n{fence}\n\n" + _words("za", 100) + "\n")
    chunks = chunk_note(n)
    assert [(c.breadcrumb, c.anchor, c.line_start, c.line_end) for c in chunks] == [
        ("T > S", "s", 3, 98), ("T > S > Ukázka", "ukazka", 100, 100)]
    assert chunks[0].text == f"#### Ukázka\n\n{fence}" and chunks[1].text == _words("za", 100)


def test_a_merged_sibling_cut_again_keeps_its_own_place():
    """Small sibling sections are merged; when the model's limit cuts the group again, the piece that
    starts at the second sibling names that sibling (not the first one's H4)."""
    n = note("# T\n\n## A\n\n" + _words("a", 25) + "\n\n#### A4\n\n" + _words("a4", 25)
             + "\n\n## B\n\n" + _words("b", 40) + "\n")
    chunks = chunk_note(n, lambda text: len(text) < 500)
    assert (chunks[0].breadcrumb, chunks[0].anchor) == ("T > A", "a")
    starts = {c.text.split("\n")[0]: (c.breadcrumb, c.anchor) for c in chunks}
    assert starts["## B"] == ("T > B", "b")


def test_a_chunk_keeps_where_each_section_it_holds_after_its_first_begins():
    """Short siblings are merged into one chunk, H4–H6 stay inside theirs: each later section's place (the
    offset of its heading line in the chunk's text, its breadcrumb and its page anchor, a repeated
    heading's own) is kept, so a hit on its words can lead to it."""
    n = note("# T\n\n## Poznámky\n\nkrátké a\n\n## B\n\nkrátké b\n\n#### B4\n\nhluboko\n\n"
             "## Poznámky\n\nznovu\n\n## C\n\n" + "dlouhé c. " * 100 + "\n")
    first = chunk_note(n)[0]
    assert (first.breadcrumb, first.anchor) == ("T > Poznámky", "poznamky")
    assert [(p.breadcrumb, p.anchor, first.text[p.offset:].split("\n")[0]) for p in first.places] == [
        ("T > B", "b", "## B"), ("T > B > B4", "b4", "#### B4"), ("T > Poznámky", "poznamky-1", "## Poznámky")]
    assert first.text[:first.places[0].offset].strip() == "krátké a"
    assert chunk_note(n)[1].places == ()  # C, alone


def test_a_piece_starting_at_a_section_is_named_by_it_not_placed_in_it():
    n = note("# Dlouhá\n\n## Sekce\n\n" + _words("úvod", 250) + "\n\n#### Podsekce A\n\n" + _words("a1", 250)
             + "\n\n##### Detail A\n\n" + _words("ad", 300) + "\n")
    assert [(c.anchor, c.places) for c in chunk_note(n)] == [("sekce", ()), ("podsekce-a", ()), ("detail-a", ())]
    n = note("# T\n\n## S\n\n#### Ukázka\n\nkód\n")  # the section has no words of its own before its H4
    assert [(c.anchor, c.places) for c in chunk_note(n)] == [("s", (Place(0, "T > S > Ukázka", "ukazka"),))]


def test_a_place_is_its_heading_s_own_line_not_the_same_words_elsewhere():
    """A heading's words opening a paragraph, inside a longer heading or in a code block above it are not
    where its section begins."""
    n = note("# T\n\n## Úvod\n\nPoužití je prosté: zavolej frobnikaci.\n\nPoužití\n-------\n\nspusť\n")
    first = chunk_note(n)[0]
    assert [(p.anchor, first.text[p.offset:]) for p in first.places] == [("pouziti", "Použití\n\nspusť")]
    n = note("# T\n\n## A\n\núvod\n\n```\n#### Krok\n```\n\n#### Běhání\n\nrychle\n\n## Běh\n\npomalu\n\n"
             "#### Krok\n\ndál\n")
    first = chunk_note(n)[0]
    assert [(p.anchor, first.text[p.offset:].split("\n")[0]) for p in first.places] == [
        ("behani", "#### Běhání"), ("beh", "## Běh"), ("krok", "#### Krok")]
    assert first.text[first.places[2].offset - 2:first.places[2].offset] == "\n\n"
    assert "```\n#### Krok" in first.text[:first.places[0].offset]


@pytest.mark.slow
def test_every_place_of_every_corpus_chunk_is_a_heading_of_its_note_where_it_says():
    notes = sorted(require_shared(SHARED / "corpora").rglob("*.md"))
    placed = 0
    for path in notes:
        parsed = parse_note(path.name, path.read_text(encoding="utf-8", errors="replace"))
        anchors = {h.anchor: h for h in parsed.headings}
        for chunk in chunk_note(parsed):
            offsets = [p.offset for p in chunk.places]
            assert offsets == sorted(set(offsets)), path
            leads = [chunk.anchor, *(p.anchor for p in chunk.places)]
            assert all(a != b for a, b in zip(leads, leads[1:], strict=False)), path  # each leads elsewhere
            for place in chunk.places:
                heading = anchors[place.anchor]
                line = chunk.text[place.offset:].split("\n")[0]  # "## Heading", or a setext heading's text line
                bare = re.sub(r"\W+", "", heading.text)  # a heading's text is its line without markup
                assert place.offset == 0 or chunk.text[place.offset - 1] == "\n", (path, place)
                said = re.sub(r"\W+", "", line)  # a setext heading of several lines: its first
                assert said and (bare in said or said in bare), (path, place)
                assert place.breadcrumb.endswith(heading.text), (path, place)
                placed += 1
    assert placed > 500


def test_code_fence_and_table_are_never_split():
    fence = "```python\n" + "".join(f"x{i} = {i}  # komentář\n" for i in range(150)) + "```"
    table = "| a | b |\n|---|---|\n" + "".join(f"| {i} | hodnota {i} |\n" for i in range(120))
    n = note(f"# Kód\n\n## Ukázka\n\n{'úvod ' * 100}\n\n{fence}\n\n{'mezi ' * 100}\n\n{table}\n")
    chunks = chunk_note(n)
    assert sum(fence in c.text for c in chunks) == 1
    assert sum(table.strip() in c.text for c in chunks) == 1


def test_checklist_splits_by_bullet_items():
    items = "".join(f"- [ ] položka číslo {i} " + "detail " * 20 + "\n" for i in range(60))
    chunks = chunk_note(note(f"# Seznam\n\n{items}"))
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.startswith("- [ ] položka")  # every chunk starts at a bullet


def test_a_giant_line_is_bounded_and_nothing_is_dropped():
    line = " ".join(f"w{i}" for i in range(40_000))
    chunks = chunk_note(note(f"# Obr\n\n{line}\n"))
    assert all(len(c.text) <= HARD_MAX_TOKENS * CHARS_PER_TOKEN for c in chunks)
    assert " ".join(c.text for c in chunks).split() == line.split()


def test_real_corpus_setext_headings_and_inline_code():
    path = require_shared(SHARED / "corpora/naucse/lessons/beginners/class/index.md")
    n = parse_note("lessons/beginners/class/index.md", path.read_text(encoding="utf-8"))
    texts = [h.text for h in n.headings]
    assert "Metoda __init__" in texts or any("__init__" in t for t in texts)
    chunks = chunk_note(n)
    assert chunks and all(c.text for c in chunks)
    assert len({c.idx for c in chunks}) == len(chunks)


def test_with_a_fits_check_every_chunk_reaches_the_model_whole_and_nothing_is_lost():
    """A stand-in for the model's tokenizer: a chunk fits when its embedded text has at most 900 characters."""
    asked: list[str] = []

    def fits(text: str) -> bool:
        asked.append(text)
        return len(text) <= 900

    paragraphs = [f"Odstavec {i}. " + "slovo " * 60 for i in range(12)]
    fence = "```python\n" + "".join(f"x{i} = {i}\n" for i in range(150)) + "```"
    n = note("# Velká\n\n## Sekce\n\n" + "\n\n".join(paragraphs) + f"\n\n## Kód\n\n{fence}\n")
    plain = chunk_note(n)
    fitted = chunk_note(n, fits)
    assert any(not fits(f"{c.breadcrumb}\n\n{c.text}") for c in plain)  # without it, some chunks are too long
    assert all(fits(f"{c.breadcrumb}\n\n{c.text}") for c in fitted) and len(fitted) > len(plain)
    body = "\n".join(c.text for c in fitted)
    assert all(p.strip() in body for p in paragraphs)
    assert all(f"x{i} = {i}" in body for i in range(150))  # a fence too big for the model is cut, not lost
    assert asked[0].startswith("Velká > Sekce\n\nOdstavec 0.")
    assert [c.line_start for c in fitted] == sorted(c.line_start for c in fitted)
