"""The portal's own words on its pages, in the site's language (``site.language``: cs, sk or en).

One catalogue per language, each a plain mapping from a key to the text (``{name}`` marks a value put in;
a tuple holds a count's forms: one, two to four, five and more — Czech and Slovak say ``1 poznámka``,
``3 poznámky``, ``5 poznámek``). Every catalogue has every key (a test checks it). The pages, the search
box, the results, the ask panel, the 404 page, the broken links page, the graph and the tables of contents
speak through it; the command line and the log stay English (their words are not here, except where the CLI
prints what a search says: the English catalogue is those words).

The scripts (``templates/static/*.js``) get the keys of :data:`SCRIPT_KEYS`, in the page's language, from a
JSON block every page carries (``base.html``): see :func:`script_messages`.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

LANGUAGES = ("cs", "sk", "en")
DEFAULT_LANGUAGE = "en"

Text = str | tuple[str, str, str]  # a text, or a count's forms (one, few: 2-4, many)

EN: dict[str, Text] = {
    # every page
    "nav.browse": "Browse",
    "nav.close": "Close",
    "nav.notes": "Notes",
    "nav.breadcrumbs": "Breadcrumbs",
    "nav.contents": "Contents",
    "nav.graph": "Link graph",
    "nav.loading": "Loading…",
    "nav.more": "More notes…",
    "pager.label": "Pages",
    "pager.prev": "← Previous",
    "pager.next": "Next →",
    "search.placeholder": "Search notes…",
    "search.label": "Search notes",
    "search.button": "Search",
    "search.offline": "Search needs the server: this copy of the site was opened from a file. Run "
                      "<code>notes-portal serve</code> and open the portal through it.",
    "footer.built": "Built {when}",
    "footer.site": "Site",
    "footer.sitemap": "Sitemap",
    "page.home": "Home",
    "page.tags": "Tags",
    "page.search": "Search",
    "page.search_for": "Search: {query}",
    "page.not_found": "Not found",
    "page.broken": "Broken links",
    "page.graph": "Link graph",
    "page.graph_of": "{source}: link graph",
    "page.sign_in": "Sign in",
    "description.site": "{title}: notes searchable by words and by meaning.",
    # home
    "home.sources": "Sources",
    "home.notes": ("{n} note", "{n} notes", "{n} notes"),
    "home.kind.folder": "folder",
    "home.kind.git": "git",
    "home.graph": "link graph",
    "home.broken": ("{n} broken link", "{n} broken links", "{n} broken links"),
    "home.no_broken": "No broken links",
    "home.nothing": "Nothing published yet.",
    "home.recent": "Recently changed",
    "home.tags": "Tags",
    "home.all_tags": "All {n} tags →",
    "home.no_tags": "No tags yet.",
    # a note
    "note.contents": "Contents",
    "note.source_path": "Source and path",
    "note.changed": "changed",
    "note.by": "by {who}",
    "note.created": "created",
    "note.tags": "Tags",
    "note.diagrams_as_text": "Diagrams are shown as their source: this install of the portal lacks mermaid's "
                             "file (<code>static/vendor/mermaid/mermaid.min.js</code>) to draw them.",
    "note.linked_from": "Linked from",
    "note.no_backlinks": "No other note links here.",
    "note.links_view": "Links around this note",
    "note.links_caption": "Arrows point from a note to the notes it links to; two links away at most.",
    "note.all_links": "All links of {source}",
    "note.diagram_failed": "Diagram not drawn: ",
    # the link pictures
    "graph.this_note": "{title} (this note)",
    "graph.more": ("+{n} more linked note", "+{n} more linked notes", "+{n} more linked notes"),
    "graph.local_label": "Notes linked with {title}, two links away at most",
    "graph.source_label": "Notes and their links",
    # a source's link graph
    "graph.links": ("{n} link between notes", "{n} links between notes", "{n} links between notes"),
    "graph.linked": "{linked} of {total} notes link or are linked",
    "graph.drawn": "the {n} most linked are drawn",
    "graph.contents": "contents",
    "graph.most_linked": "Most linked to",
    "graph.links_here": ("{n} note links here", "{n} notes link here", "{n} notes link here"),
    "graph.none": "No note of {source} links to another yet.",
    # tables of contents
    "toc.notes": ("{n} note", "{n} notes", "{n} notes"),
    "toc.folders": ("in {n} folder", "in {n} folders", "in {n} folders"),
    "toc.lead": "{notes} {folders}",
    "toc.graph": "link graph",
    "toc.filter": "Filter titles, headings, tags, folders…",
    "toc.filter_label": "Filter the table of contents",
    "toc.matches": "{shown} of {total} notes match",
    "toc.no_match": "No note matches.",
    # tags
    "tags.count": ("{n} tag", "{n} tags", "{n} tags"),
    "tags.none": "No note has tags yet (front matter <code>tags: [a, b]</code>).",
    "tag.notes": ("{n} note", "{n} notes", "{n} notes"),
    "tag.all": "all tags",
    "tag.more": "+{n} more",
    # broken links
    "broken.lead": "{links} {notes}. Each is marked on its page; the number is the line in the note's file.",
    "broken.links": ("{n} broken link", "{n} broken links", "{n} broken links"),
    "broken.notes": ("in {n} note", "in {n} notes", "in {n} notes"),
    "broken.line": "line {n}",
    "broken.none": "No broken links: every link of every note leads to a note, a file or a web page.",
    "broken.outside": "{raw} points outside the source",
    "broken.missing": "{raw}: no such note or file",
    "broken.unpublished": "{raw}: not a published note",
    "broken.svg": "{raw}: the SVG holds scripts, event handlers or script links, so it is not published",
    "broken.wiki": "[[{raw}]]: no note with that name or title",
    "broken.title": "Broken link: {reason}",
    "broken.image_title": "Broken image: {reason}",
    # 404
    "404.title": "Page not found",
    "404.text": "This page does not exist (any more). The note may have been renamed, unpublished or deleted.",
    "404.all_tags": "All tags",
    # search
    "search.words": "Words, names, numbers…",
    "search.intro": "Search looks for exact words (with Czech and Slovak word endings) and for similar meaning "
                    "at once; every hit says which of the two found it.",
    "search.as_typed": "Search for “{query}” as typed",
    "search.nothing": "Nothing matches “{query}”.",
    "search.weak": "nothing in your notes matches these words; closest by meaning:",
    "search.top": "top of the note",
    "search.same_text": "the same text: ",
    "search.also": "also: ",
    "search.all": "All results for “{query}”",
    "search.results": "Results",
    "search.by_words": "words #{n}",
    "search.by_meaning": "meaning #{n}",
    "search.needs_key": "Search needs the portal's key: ",
    "search.sign_in": "sign in",
    "search.failed": "Search failed: ",
    # what a search says about itself (server/search.py: the CLI prints these English words)
    "said.no_words": "the query has no words to search for",
    "said.common": "only common words ({words}): add a word that says what to find",
    "said.translated": "English words also searched in Czech and Slovak: {pairs}",
    "said.forms": "no note holds {word}: searched for the forms the notes hold ({forms})",
    "said.corrected": "no note holds {words}: showing results for {corrected}",
    "said.unknown": "no note mentions {words}",
    "said.no_vectors": "embeddings unavailable ({why}): FTS-only results",
    "said.disabled": "embeddings disabled (provider: none): FTS-only results",
    "said.waiting": "search by meaning is still being prepared: {ready} of {total} sections have their vectors; "
                    "the others are found by words only",
    "said.empty": "the index is empty: run `notes-portal build`",
    # asking
    "ask.button": "Ask",
    "ask.action": "Ask your notes: “{query}”",
    "ask.notice": "Ask sends your question and the passages it shows to {provider} at {host}.",
    "ask.pending": "Asking… (the answer is checked against your notes before it is shown)",
    "ask.failed": "Asking failed: ",
    "ask.not_in_notes": "Your notes do not say: nothing in them answers this.",
    "ask.refused": "No answer: the model’s answer did not pass the check against your notes, so it is not shown.",
    "ask.unavailable": "No answer: the answer provider is unavailable. The search results still work.",
    "ask.busy": "No answer now: the portal is answering other questions. Try again in a moment; the search results "
                "still work.",
    "ask.sentence": "sentence {n}:",
    # signing in
    "auth.title": "Sign in to search",
    "auth.key": "Key",
    "auth.button": "Sign in",
    "auth.where": "The key is <code>server.api_key</code> in the portal's configuration. The browser keeps a "
                  "sign-in cookie (not the key) for 90 days.",
    "auth.ask": "Searching this portal needs its key.",
    "auth.too_large": "The form was too large.",
    "auth.wrong": "That is not the portal's key.",
}

CS: dict[str, Text] = {
    "nav.browse": "Procházet",
    "nav.close": "Zavřít",
    "nav.notes": "Poznámky",
    "nav.breadcrumbs": "Drobečková navigace",
    "nav.contents": "Obsah",
    "nav.graph": "Graf odkazů",
    "nav.loading": "Načítá se…",
    "nav.more": "Další poznámky…",
    "pager.label": "Stránky",
    "pager.prev": "← Předchozí",
    "pager.next": "Další →",
    "search.placeholder": "Hledat v poznámkách…",
    "search.label": "Hledat v poznámkách",
    "search.button": "Hledat",
    "search.offline": "Hledání potřebuje server: tato kopie webu je otevřená ze souboru. Spusťte "
                      "<code>notes-portal serve</code> a otevřete portál přes něj.",
    "footer.built": "Sestaveno {when}",
    "footer.site": "Web",
    "footer.sitemap": "Mapa webu",
    "page.home": "Domů",
    "page.tags": "Štítky",
    "page.search": "Hledání",
    "page.search_for": "Hledání: {query}",
    "page.not_found": "Nenalezeno",
    "page.broken": "Nefunkční odkazy",
    "page.graph": "Graf odkazů",
    "page.graph_of": "{source}: graf odkazů",
    "page.sign_in": "Přihlášení",
    "description.site": "{title}: poznámky, ve kterých lze hledat podle slov i podle významu.",
    "home.sources": "Zdroje",
    "home.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámek"),
    "home.kind.folder": "složka",
    "home.kind.git": "git",
    "home.graph": "graf odkazů",
    "home.broken": ("{n} nefunkční odkaz", "{n} nefunkční odkazy", "{n} nefunkčních odkazů"),
    "home.no_broken": "Žádné nefunkční odkazy",
    "home.nothing": "Zatím nic nezveřejněno.",
    "home.recent": "Nedávno změněné",
    "home.tags": "Štítky",
    "home.all_tags": "Všech {n} štítků →",
    "home.no_tags": "Zatím žádné štítky.",
    "note.contents": "Obsah",
    "note.source_path": "Zdroj a cesta",
    "note.changed": "změněno",
    "note.by": "autor {who}",
    "note.created": "vytvořeno",
    "note.tags": "Štítky",
    "note.diagrams_as_text": "Diagramy jsou zobrazeny jako zdrojový text: této instalaci portálu chybí soubor "
                             "knihovny mermaid (<code>static/vendor/mermaid/mermaid.min.js</code>), který je kreslí.",
    "note.linked_from": "Odkazují sem",
    "note.no_backlinks": "Žádná jiná poznámka sem neodkazuje.",
    "note.links_view": "Odkazy kolem této poznámky",
    "note.links_caption": "Šipky vedou od poznámky k poznámkám, na které odkazuje; nejvýš dva odkazy daleko.",
    "note.all_links": "Všechny odkazy zdroje {source}",
    "note.diagram_failed": "Diagram se nepodařilo nakreslit: ",
    "graph.this_note": "{title} (tato poznámka)",
    "graph.more": ("+{n} další propojená poznámka", "+{n} další propojené poznámky",
                   "+{n} dalších propojených poznámek"),
    "graph.local_label": "Poznámky propojené s poznámkou {title}, nejvýš dva odkazy daleko",
    "graph.source_label": "Poznámky a jejich odkazy",
    "graph.links": ("{n} odkaz mezi poznámkami", "{n} odkazy mezi poznámkami", "{n} odkazů mezi poznámkami"),
    "graph.linked": "{linked} z {total} poznámek odkazuje nebo je odkazováno",
    "graph.drawn": "nakresleno {n} nejodkazovanějších",
    "graph.contents": "obsah",
    "graph.most_linked": "Nejčastěji odkazované",
    "graph.links_here": ("sem odkazuje {n} poznámka", "sem odkazují {n} poznámky", "sem odkazuje {n} poznámek"),
    "graph.none": "Žádná poznámka zdroje {source} zatím neodkazuje na jinou.",
    "toc.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámek"),
    "toc.folders": ("v {n} složce", "ve {n} složkách", "v {n} složkách"),
    "toc.lead": "{notes} {folders}",
    "toc.graph": "graf odkazů",
    "toc.filter": "Filtrovat názvy, nadpisy, štítky, složky…",
    "toc.filter_label": "Filtrovat obsah",
    "toc.matches": "Vyhovuje {shown} z {total} poznámek",
    "toc.no_match": "Žádná poznámka nevyhovuje.",
    "tags.count": ("{n} štítek", "{n} štítky", "{n} štítků"),
    "tags.none": "Zatím žádná poznámka nemá štítky (v úvodní hlavičce <code>tags: [a, b]</code>).",
    "tag.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámek"),
    "tag.all": "všechny štítky",
    "tag.more": "+{n} dalších",
    "broken.lead": "{links} {notes}. Každý je vyznačen na své stránce; číslo je řádek v souboru poznámky.",
    "broken.links": ("{n} nefunkční odkaz", "{n} nefunkční odkazy", "{n} nefunkčních odkazů"),
    "broken.notes": ("v {n} poznámce", "ve {n} poznámkách", "v {n} poznámkách"),
    "broken.line": "řádek {n}",
    "broken.none": "Žádné nefunkční odkazy: každý odkaz každé poznámky vede na poznámku, soubor nebo webovou "
                   "stránku.",
    "broken.outside": "{raw} míří mimo zdroj",
    "broken.missing": "{raw}: taková poznámka ani soubor neexistuje",
    "broken.unpublished": "{raw}: není zveřejněná poznámka",
    "broken.svg": "{raw}: SVG obsahuje skripty, obsluhu událostí nebo odkazy na skripty, proto není zveřejněno",
    "broken.wiki": "[[{raw}]]: žádná poznámka tohoto jména ani názvu",
    "broken.title": "Nefunkční odkaz: {reason}",
    "broken.image_title": "Nefunkční obrázek: {reason}",
    "404.title": "Stránka nenalezena",
    "404.text": "Tato stránka neexistuje (už). Poznámka mohla být přejmenována, skryta nebo smazána.",
    "404.all_tags": "Všechny štítky",
    "search.words": "Slova, jména, čísla…",
    "search.intro": "Hledání hledá přesná slova (i s českými a slovenskými koncovkami) a zároveň podobný význam; "
                    "u každého výsledku je uvedeno, který z obou způsobů ho našel.",
    "search.as_typed": "Hledat „{query}“ přesně, jak je napsáno",
    "search.nothing": "Na „{query}“ nic neodpovídá.",
    "search.weak": "těmto slovům ve vašich poznámkách nic neodpovídá; nejbližší podle významu:",
    "search.top": "začátek poznámky",
    "search.same_text": "stejný text: ",
    "search.also": "také: ",
    "search.all": "Všechny výsledky pro „{query}“",
    "search.results": "Výsledky",
    "search.by_words": "slova #{n}",
    "search.by_meaning": "význam #{n}",
    "search.needs_key": "Hledání potřebuje klíč portálu: ",
    "search.sign_in": "přihlásit se",
    "search.failed": "Hledání selhalo: ",
    "said.no_words": "dotaz neobsahuje žádná slova k hledání",
    "said.common": "jen běžná slova ({words}): přidejte slovo, které říká, co hledat",
    "said.translated": "anglická slova hledána i česky a slovensky: {pairs}",
    "said.forms": "žádná poznámka neobsahuje {word}: hledány tvary, které poznámky obsahují ({forms})",
    "said.corrected": "žádná poznámka neobsahuje {words}: zobrazeny výsledky pro {corrected}",
    "said.unknown": "žádná poznámka nezmiňuje {words}",
    "said.no_vectors": "hledání podle významu je nedostupné ({why}): výsledky jen podle slov",
    "said.disabled": "hledání podle významu je vypnuté (provider: none): výsledky jen podle slov",
    "said.waiting": "hledání podle významu se ještě připravuje: vektory má {ready} z {total} oddílů; "
                    "ostatní se hledají jen podle slov",
    "said.empty": "index je prázdný: spusťte `notes-portal build`",
    "ask.button": "Zeptat se",
    "ask.action": "Zeptat se poznámek: „{query}“",
    "ask.notice": "Otázka a úryvky, které ukazuje, se pošlou na {host} ({provider}).",
    "ask.pending": "Ptám se… (odpověď se před zobrazením ověří proti vašim poznámkám)",
    "ask.failed": "Dotaz selhal: ",
    "ask.not_in_notes": "Vaše poznámky to neříkají: nic v nich na tohle neodpovídá.",
    "ask.refused": "Bez odpovědi: odpověď modelu neprošla kontrolou proti vašim poznámkám, proto se nezobrazí.",
    "ask.unavailable": "Bez odpovědi: poskytovatel odpovědí je nedostupný. Výsledky hledání fungují dál.",
    "ask.busy": "Teď bez odpovědi: portál odpovídá na jiné otázky. Zkuste to za chvíli; výsledky hledání fungují dál.",
    "ask.sentence": "věta {n}:",
    "auth.title": "Přihlášení k hledání",
    "auth.key": "Klíč",
    "auth.button": "Přihlásit se",
    "auth.where": "Klíč je <code>server.api_key</code> v konfiguraci portálu. Prohlížeč si pamatuje přihlašovací "
                  "cookie (ne klíč) 90 dní.",
    "auth.ask": "Hledání v tomto portálu potřebuje jeho klíč.",
    "auth.too_large": "Formulář byl příliš velký.",
    "auth.wrong": "To není klíč tohoto portálu.",
}

SK: dict[str, Text] = {
    "nav.browse": "Prehliadať",
    "nav.close": "Zavrieť",
    "nav.notes": "Poznámky",
    "nav.breadcrumbs": "Omrvinková navigácia",
    "nav.contents": "Obsah",
    "nav.graph": "Graf odkazov",
    "nav.loading": "Načítava sa…",
    "nav.more": "Ďalšie poznámky…",
    "pager.label": "Stránky",
    "pager.prev": "← Predchádzajúca",
    "pager.next": "Ďalšia →",
    "search.placeholder": "Hľadať v poznámkach…",
    "search.label": "Hľadať v poznámkach",
    "search.button": "Hľadať",
    "search.offline": "Hľadanie potrebuje server: táto kópia webu je otvorená zo súboru. Spustite "
                      "<code>notes-portal serve</code> a otvorte portál cez neho.",
    "footer.built": "Zostavené {when}",
    "footer.site": "Web",
    "footer.sitemap": "Mapa webu",
    "page.home": "Domov",
    "page.tags": "Štítky",
    "page.search": "Hľadanie",
    "page.search_for": "Hľadanie: {query}",
    "page.not_found": "Nenájdené",
    "page.broken": "Nefunkčné odkazy",
    "page.graph": "Graf odkazov",
    "page.graph_of": "{source}: graf odkazov",
    "page.sign_in": "Prihlásenie",
    "description.site": "{title}: poznámky, v ktorých sa dá hľadať podľa slov aj podľa významu.",
    "home.sources": "Zdroje",
    "home.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámok"),
    "home.kind.folder": "priečinok",
    "home.kind.git": "git",
    "home.graph": "graf odkazov",
    "home.broken": ("{n} nefunkčný odkaz", "{n} nefunkčné odkazy", "{n} nefunkčných odkazov"),
    "home.no_broken": "Žiadne nefunkčné odkazy",
    "home.nothing": "Zatiaľ nič nezverejnené.",
    "home.recent": "Nedávno zmenené",
    "home.tags": "Štítky",
    "home.all_tags": "Všetkých {n} štítkov →",
    "home.no_tags": "Zatiaľ žiadne štítky.",
    "note.contents": "Obsah",
    "note.source_path": "Zdroj a cesta",
    "note.changed": "zmenené",
    "note.by": "autor {who}",
    "note.created": "vytvorené",
    "note.tags": "Štítky",
    "note.diagrams_as_text": "Diagramy sú zobrazené ako zdrojový text: tejto inštalácii portálu chýba súbor "
                             "knižnice mermaid (<code>static/vendor/mermaid/mermaid.min.js</code>), ktorý ich kreslí.",
    "note.linked_from": "Odkazujú sem",
    "note.no_backlinks": "Žiadna iná poznámka sem neodkazuje.",
    "note.links_view": "Odkazy okolo tejto poznámky",
    "note.links_caption": "Šípky vedú od poznámky k poznámkam, na ktoré odkazuje; najviac dva odkazy ďaleko.",
    "note.all_links": "Všetky odkazy zdroja {source}",
    "note.diagram_failed": "Diagram sa nepodarilo nakresliť: ",
    "graph.this_note": "{title} (táto poznámka)",
    "graph.more": ("+{n} ďalšia prepojená poznámka", "+{n} ďalšie prepojené poznámky",
                   "+{n} ďalších prepojených poznámok"),
    "graph.local_label": "Poznámky prepojené s poznámkou {title}, najviac dva odkazy ďaleko",
    "graph.source_label": "Poznámky a ich odkazy",
    "graph.links": ("{n} odkaz medzi poznámkami", "{n} odkazy medzi poznámkami", "{n} odkazov medzi poznámkami"),
    "graph.linked": "{linked} z {total} poznámok odkazuje alebo je odkazovaných",
    "graph.drawn": "nakreslených {n} najodkazovanejších",
    "graph.contents": "obsah",
    "graph.most_linked": "Najčastejšie odkazované",
    "graph.links_here": ("sem odkazuje {n} poznámka", "sem odkazujú {n} poznámky", "sem odkazuje {n} poznámok"),
    "graph.none": "Žiadna poznámka zdroja {source} zatiaľ neodkazuje na inú.",
    "toc.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámok"),
    "toc.folders": ("v {n} priečinku", "v {n} priečinkoch", "v {n} priečinkoch"),
    "toc.lead": "{notes} {folders}",
    "toc.graph": "graf odkazov",
    "toc.filter": "Filtrovať názvy, nadpisy, štítky, priečinky…",
    "toc.filter_label": "Filtrovať obsah",
    "toc.matches": "Vyhovuje {shown} z {total} poznámok",
    "toc.no_match": "Žiadna poznámka nevyhovuje.",
    "tags.count": ("{n} štítok", "{n} štítky", "{n} štítkov"),
    "tags.none": "Zatiaľ žiadna poznámka nemá štítky (v úvodnej hlavičke <code>tags: [a, b]</code>).",
    "tag.notes": ("{n} poznámka", "{n} poznámky", "{n} poznámok"),
    "tag.all": "všetky štítky",
    "tag.more": "+{n} ďalších",
    "broken.lead": "{links} {notes}. Každý je vyznačený na svojej stránke; číslo je riadok v súbore poznámky.",
    "broken.links": ("{n} nefunkčný odkaz", "{n} nefunkčné odkazy", "{n} nefunkčných odkazov"),
    "broken.notes": ("v {n} poznámke", "v {n} poznámkach", "v {n} poznámkach"),
    "broken.line": "riadok {n}",
    "broken.none": "Žiadne nefunkčné odkazy: každý odkaz každej poznámky vedie na poznámku, súbor alebo webovú "
                   "stránku.",
    "broken.outside": "{raw} mieri mimo zdroja",
    "broken.missing": "{raw}: taká poznámka ani súbor neexistuje",
    "broken.unpublished": "{raw}: nie je zverejnená poznámka",
    "broken.svg": "{raw}: SVG obsahuje skripty, obsluhu udalostí alebo odkazy na skripty, preto nie je zverejnené",
    "broken.wiki": "[[{raw}]]: žiadna poznámka s týmto menom ani názvom",
    "broken.title": "Nefunkčný odkaz: {reason}",
    "broken.image_title": "Nefunkčný obrázok: {reason}",
    "404.title": "Stránka sa nenašla",
    "404.text": "Táto stránka neexistuje (už). Poznámka mohla byť premenovaná, skrytá alebo zmazaná.",
    "404.all_tags": "Všetky štítky",
    "search.words": "Slová, mená, čísla…",
    "search.intro": "Hľadanie hľadá presné slová (aj s českými a slovenskými koncovkami) a zároveň podobný "
                    "význam; pri každom výsledku je uvedené, ktorý z oboch spôsobov ho našiel.",
    "search.as_typed": "Hľadať „{query}“ presne, ako je napísané",
    "search.nothing": "Na „{query}“ nič nezodpovedá.",
    "search.weak": "týmto slovám vo vašich poznámkach nič nezodpovedá; najbližšie podľa významu:",
    "search.top": "začiatok poznámky",
    "search.same_text": "rovnaký text: ",
    "search.also": "aj: ",
    "search.all": "Všetky výsledky pre „{query}“",
    "search.results": "Výsledky",
    "search.by_words": "slová #{n}",
    "search.by_meaning": "význam #{n}",
    "search.needs_key": "Hľadanie potrebuje kľúč portálu: ",
    "search.sign_in": "prihlásiť sa",
    "search.failed": "Hľadanie zlyhalo: ",
    "said.no_words": "dopyt neobsahuje žiadne slová na hľadanie",
    "said.common": "len bežné slová ({words}): pridajte slovo, ktoré hovorí, čo hľadať",
    "said.translated": "anglické slová hľadané aj po česky a po slovensky: {pairs}",
    "said.forms": "žiadna poznámka neobsahuje {word}: hľadané tvary, ktoré poznámky obsahujú ({forms})",
    "said.corrected": "žiadna poznámka neobsahuje {words}: zobrazené výsledky pre {corrected}",
    "said.unknown": "žiadna poznámka nespomína {words}",
    "said.no_vectors": "hľadanie podľa významu je nedostupné ({why}): výsledky len podľa slov",
    "said.disabled": "hľadanie podľa významu je vypnuté (provider: none): výsledky len podľa slov",
    "said.waiting": "hľadanie podľa významu sa ešte pripravuje: vektory má {ready} z {total} oddielov; "
                    "ostatné sa hľadajú len podľa slov",
    "said.empty": "index je prázdny: spustite `notes-portal build`",
    "ask.button": "Opýtať sa",
    "ask.action": "Opýtať sa poznámok: „{query}“",
    "ask.notice": "Otázka a úryvky, ktoré ukazuje, sa pošlú na {host} ({provider}).",
    "ask.pending": "Pýtam sa… (odpoveď sa pred zobrazením overí voči vašim poznámkam)",
    "ask.failed": "Otázka zlyhala: ",
    "ask.not_in_notes": "Vaše poznámky to nehovoria: nič v nich na toto neodpovedá.",
    "ask.refused": "Bez odpovede: odpoveď modelu neprešla kontrolou voči vašim poznámkam, preto sa nezobrazí.",
    "ask.unavailable": "Bez odpovede: poskytovateľ odpovedí je nedostupný. Výsledky hľadania fungujú ďalej.",
    "ask.busy": "Teraz bez odpovede: portál odpovedá na iné otázky. Skúste to o chvíľu; výsledky hľadania "
                "fungujú ďalej.",
    "ask.sentence": "veta {n}:",
    "auth.title": "Prihlásenie na hľadanie",
    "auth.key": "Kľúč",
    "auth.button": "Prihlásiť sa",
    "auth.where": "Kľúč je <code>server.api_key</code> v konfigurácii portálu. Prehliadač si pamätá prihlasovací "
                  "cookie (nie kľúč) 90 dní.",
    "auth.ask": "Hľadanie v tomto portáli potrebuje jeho kľúč.",
    "auth.too_large": "Formulár bol príliš veľký.",
    "auth.wrong": "To nie je kľúč tohto portálu.",
}

CATALOGUES: dict[str, dict[str, Text]] = {"cs": CS, "sk": SK, "en": EN}

# What the scripts say (search.js, nav.js, toc.js, mermaid-init.js): the JSON block of every page.
SCRIPT_KEYS = ("nav.close", "nav.contents", "nav.graph", "nav.loading", "nav.more", "toc.matches", "toc.no_match",
               "note.diagram_failed", "search.as_typed", "search.nothing", "search.weak", "search.top",
               "search.same_text", "search.also", "search.all", "search.results", "search.by_words",
               "search.by_meaning", "search.needs_key", "search.sign_in", "search.failed",
               *(k for k in EN if k.startswith("said.")),
               "ask.action", "ask.pending", "ask.failed", "ask.not_in_notes", "ask.refused", "ask.unavailable",
               "ask.busy", "ask.sentence")

_MONTHS_EN = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_PLACE = re.compile(r"\{(\w+)\}")


def form(language: str, n: int) -> int:
    """Which of a count's forms ``n`` takes: 0 one, 1 two to four (Czech and Slovak), 2 the rest."""
    if n == 1:
        return 0
    return 1 if language in ("cs", "sk") and 2 <= n <= 4 else 2


def number(language: str, n: int) -> str:
    """``1,200`` in English, ``1 200`` (a no-break space between thousands) in Czech and Slovak."""
    text = f"{n:,}"
    return text.replace(",", "\u00a0") if language in ("cs", "sk") else text


def text(language: str, key: str, **values: Any) -> str:
    """The words of ``key`` in ``language`` with ``values`` put in (a count's form chosen by ``n``; numbers
    written the language's way)."""
    entry = CATALOGUES[language][key]
    if isinstance(entry, str) and not values and "{" not in entry:  # most of a page's words: nothing to put in
        return entry
    if isinstance(entry, tuple):
        entry = entry[form(language, int(values["n"]))]
    shown = {k: number(language, v) if isinstance(v, int) and not isinstance(v, bool) else v
             for k, v in values.items()}
    return _PLACE.sub(lambda m: str(shown[m[1]]), entry)


def day(language: str, value: str) -> str:
    """``YYYY-MM-DD`` (the start of an ISO date or time) as the language writes a day: ``6. 12. 2026``
    (Czech, Slovak), ``6 Dec 2026`` (English); the time after it, when ``value`` has one (``14:05``).
    Anything that is not such a date is returned as it is."""
    try:
        when = date.fromisoformat(value[:10])
    except ValueError:
        return value
    shown = (f"{when.day}. {when.month}. {when.year}" if language in ("cs", "sk")
             else f"{when.day} {_MONTHS_EN[when.month - 1]} {when.year}")
    rest = value[10:].lstrip("T ")[:5]
    return f"{shown} {rest}" if re.fullmatch(r"\d\d:\d\d", rest) else shown


_REASONS = ("broken.outside", "broken.missing", "broken.unpublished", "broken.svg", "broken.wiki")


def reason(language: str, english: str) -> str:
    """Why a link is broken (``builder.render.links`` says it in English: the log and ``status`` show it so), in
    ``language``; a reason of another shape is shown as it is."""
    if language == "en":
        return english
    for key in _REASONS:
        pattern = re.escape(str(EN[key])).replace(re.escape("{raw}"), "(?P<raw>.*)")
        found = re.fullmatch(pattern, english, re.S)
        if found:
            return text(language, key, raw=found["raw"])
    return english


def script_messages(language: str, asking: bool = False) -> str:
    """The JSON the scripts read their words from (every page's ``<script type="application/json">``):
    each key of :data:`SCRIPT_KEYS` with its text, a count's forms as a list; the Ask panel's words only where
    the portal asks (``asking``: without ``answer:``, no page says a word of Ask)."""
    catalogue = CATALOGUES[language]
    data = {key: list(catalogue[key]) if isinstance(catalogue[key], tuple) else catalogue[key] for key in SCRIPT_KEYS
            if asking or not key.startswith("ask.")}
    return json.dumps(data, ensure_ascii=False, sort_keys=True).replace("<", "\\u003c")
