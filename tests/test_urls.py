"""``builder.core.urls``: a note's page URL is its source and path encoded exactly as one string would be (it is
encoded in two parts, the folder's cached: the two must never differ)."""

from __future__ import annotations

from urllib.parse import quote, unquote

from hypothesis import given
from hypothesis import strategies as st

from builder.core import urls

PARTS = st.text(st.sampled_from("aáČ ž%#?&=+~._-ß文😀x/"), min_size=1, max_size=8).filter(lambda p: p.strip("/"))


@given(st.sampled_from(["notes", "zdroj ž", "a b"]), st.lists(PARTS, min_size=1, max_size=4),
       st.sampled_from([".md", ".MD", ".markdown", ""]))
def test_a_note_url_is_its_whole_path_encoded_at_once(source_id, parts, suffix):
    path = "/".join(p.strip("/") for p in parts) + suffix
    folder, _, name = path.rpartition("/")
    whole = f"{source_id}/{folder}/" if folder else f"{source_id}/"
    url = urls.note_url(source_id, path)
    assert url == quote(whole + urls.page_name(name, path.count("/")), safe="/")
    assert unquote(url) == whole + urls.page_name(name, path.count("/"))
