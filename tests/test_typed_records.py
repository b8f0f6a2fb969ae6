"""The central records are typed (issue 46): the render manifest's entry and the delta render's memory
(TypedDicts: they are stored as marshal, plain dicts and lists, so an older site's state reads as it was
written), the search's hits with the sections and copies under them, and the answer's citations (frozen
dataclasses). mypy checks their use (strict on these modules: pyproject.toml); these tests check that the
records stay records, and that what the render stores on disk is what the types say."""

from __future__ import annotations

import dataclasses
import inspect
import typing

from builder.core.index import renderstate
from builder.render import delta, manifest, output
from builder.render.links import LINK_KIND, LINK_TARGET, LINK_URL, Link
from server import answer, search
from tests.render_support import NOTES, build_and_render, make_config, make_notes, site_snapshot, write


def _frozen(cls: type) -> bool:
    return dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_the_records_are_typed():
    assert typing.is_typeddict(manifest.ManifestEntry) and typing.is_typeddict(delta.DeltaMemory)
    assert all(_frozen(cls) for cls in (search.Hit, search.OtherSection, search.TextCopy, answer.Citation))
    hints = typing.get_type_hints(search.Hit)
    assert hints["more"] == tuple[search.OtherSection, ...] and hints["copies"] == tuple[search.TextCopy, ...]
    assert typing.get_type_hints(answer.Answer)["citations"] == tuple[answer.Citation, ...]
    # the functions that make and read the records say so (annotations are strings here: PEP 563)
    assert inspect.signature(manifest.entry).return_annotation == "ManifestEntry"
    assert inspect.signature(delta.remember).return_annotation == "DeltaMemory"
    for function in (manifest.recheck, manifest.affected, manifest.backlinks, manifest.dirty, manifest.log_broken):
        assert "Entries" in str(inspect.signature(function)), function.__name__
    # what the delta render checks in the state's meta: every key of its memory but those kept by shards
    assert set(delta._KEYS) == delta.DeltaMemory.__required_keys__ - set(output.MAPS)
    assert {"titles", "file_links"} <= delta.DeltaMemory.__required_keys__ & set(output.MAPS)


def test_a_stored_link_is_read_by_the_names_of_its_fields():
    stored = Link("attachment", "notes/sub/img.png", "sub/img.png", "").as_list()
    assert (stored[LINK_KIND], stored[LINK_URL], stored[LINK_TARGET]) == ("attachment", "notes/sub/img.png",
                                                                           "sub/img.png")


def _site(tmp_path):
    root = tmp_path / "notes"
    make_notes(root)
    write(root, "kod.md", "# Kód\n\n```python\nprint('ahoj')\n```\n")
    return root, make_config(tmp_path, {"notes": root, "other": root.parent / "other"})


def test_what_the_render_stores_is_what_the_types_say(tmp_path):
    _, config = _site(tmp_path)
    build_and_render(config)
    stored = renderstate.load_manifest(config.site.output)
    keys = set(manifest.ManifestEntry.__annotations__)
    required = manifest.ManifestEntry.__required_keys__
    assert stored["notes"] and all(required <= set(e) <= keys for e in stored["notes"].values())
    seen = {key for e in stored["notes"].values() for key in e}
    assert seen == keys  # a broken link, a file, a code block: every optional key is met here
    assert all(isinstance(r, list) and len(r) == 4 for e in stored["notes"].values() for r in e["resolved"])
    assert set(delta.DeltaMemory.__required_keys__) <= set(stored)


def test_a_site_stored_as_an_older_render_wrote_it_still_builds(tmp_path):
    """The on-disk form did not change with the types: entries without ``files`` (older renders) and the
    rest as stored are read, and an edit after them renders what a fresh render of the same notes does."""
    root, config = _site(tmp_path)
    build_and_render(config)
    stored = renderstate.load_manifest(config.site.output)
    for entry in stored["notes"].values():
        entry.pop("files", None)
    output.store_manifest(config.site.output, stored, {})
    write(root, "a.md", NOTES["a.md"].replace("text", "jiný text"))
    build_and_render(config)
    after = site_snapshot(config.site.output)
    build_and_render(config, full=True)
    assert site_snapshot(config.site.output) == after
