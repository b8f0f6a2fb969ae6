"""Which of the portal's languages a text is written in: Czech, Slovak or English (or None: too little to
tell). ``notes-portal init`` guesses the site's language from the notes with it, and a note page marks its
text's language (``lang``) when it is not the site's, so that a screen reader reads a Slovak note in a Czech
portal with Slovak pronunciation.

Counted, not modelled: each language's letters that the others lack (``ř ů ě`` Czech, ``ä ô ľ ĺ ŕ`` Slovak)
and its commonest short words that the others do not share. A text decides only with a clear lead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_LETTERS_RUN = re.compile(r"[^\W\d_]+")
_WORDS = {
    "cs": frozenset("je jsou jsem jak ale pro který která které když také nebo už bych jako co tak jen při"
                    " není jeho její jsme své svůj mezi podle protože jestli až aby pak tady tam byl byla".split()),
    "sk": frozenset("sú som ako ale pre ktorý ktorá ktoré keď tiež alebo už by čo tak len pri nie je jeho jej"
                    " sme svoje medzi podľa pretože aj až aby potom tu tam bol bola".split()),
    "en": frozenset("the and of to is in that for with it on as are this be by from or an not you have was at"
                    " which can if will when there what your how but all".split()),
}
_LANGUAGES_OF = {word: tuple(lang for lang, words in _WORDS.items() if word in words)
                 for word in frozenset().union(*_WORDS.values())}
# a word holding one of the language's own letters, which the others lack: a match from its first such letter to
# the word's end, so one match a word however many it holds
_OWN_LETTERS = {"cs": "řůě", "sk": "äôľĺŕ"}
_OWN_LETTER_WORD = {language: re.compile(rf"[{letters}][^\W\d_]*") for language, letters in _OWN_LETTERS.items()}
SAMPLE = 20_000  # characters read of a long text: its start says its language
_MARKDOWN_CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|`[^`\n]*`|^---\n.*?\n---$", re.S | re.M)
_HTML_CODE = re.compile(r"<(pre|code|math|svg)\b.*?</\1>", re.S)
_ANY_TAG = re.compile(r"<[^>]*>")


def prose_of_markdown(text: str) -> str:
    """A note's text without its front matter and code (code is in no human language, and would tip a Czech
    note with a YAML file in it towards English)."""
    return _MARKDOWN_CODE.sub(" ", text[:SAMPLE * 2])


def prose_of_html(html: str) -> str:
    """A rendered body's text without code, formulas, pictures and tags."""
    return _ANY_TAG.sub(" ", _HTML_CODE.sub(" ", html[:SAMPLE * 3]))


def detect(text: str) -> str | None:
    """``cs``, ``sk`` or ``en``, or None when ``text`` does not say clearly (fewer than three telling words)."""
    sample = text[:SAMPLE].lower()
    scores: Counter[str] = Counter()
    for word in filter(_LANGUAGES_OF.__contains__, _LETTERS_RUN.findall(sample)):
        scores.update(_LANGUAGES_OF[word])
    for language, pattern in _OWN_LETTER_WORD.items():
        scores[language] += 2 * len(pattern.findall(sample))
    if sum(scores.values()) < 3:
        return None
    (best, top), *rest = scores.most_common(2) + [("", 0)]
    return best if top >= 1.5 * rest[0][1] else None


def majority(texts: Iterable[str]) -> str | None:
    """The language most of ``texts`` are written in (those that say one), or None."""
    found = Counter(language for text in texts if (language := detect(text)))
    return found.most_common(1)[0][0] if found else None
