"""The words the answer check treats apart from the rest, in Czech, Slovak and English (all folded: lower
case, no diacritics, as :func:`builder.core.slug.fold` makes them).

- **Free words** carry no fact a passage must hold: articles, pronouns, the common prepositions and
  conjunctions, the copula and the auxiliaries, modal verbs, question words, and the words an answer uses
  to point at its source ("podle poznámek", "the note says"). Every other word of a claim is a content
  word and must be found in the passage that is cited for it.
- **Negators** make a clause negative (``not``, ``never``, ``ne``, ``nie``, ``není``, ``bez``, ``without``…);
  a negated claim needs a negated source and the other way round. The Czech and Slovak prefix ``ne-``
  of a content word (``neschválila``) is not listed: the word itself must match, and a match only through
  its ``ne-`` (``schválila`` ↔ ``neschválila``) is a change of polarity.
- **Number words** stand for their values (``pět`` = 5, ``dvě stě`` = 200, ``twenty-five`` = 25).
- **Yes and no** open an answer to a yes/no question; they claim nothing the check could find, so a
  sentence of nothing else is refused.

Words whose meaning a claim hangs on stay content words even where search treats them as function words:
quantifiers and limits (``all``, ``only``, ``jen``, ``každý``), order in time and place (``before``,
``after``, ``před``, ``nad``, ``pod``), comparison (``more``, ``less``, ``víc``). docs/ANSWERS.md has the
rules and the measurements behind them.
"""

from __future__ import annotations

import re
import unicodedata

# --- free words ---------------------------------------------------------------------------------------

_FREE_CS_SK = """
a aby aj ak ako ale alebo asi az by co ci coz do ho i ja jak jaky jaka jake jakeho jakou jakym jakych jako jeho
jej jeji jemu jenz ji jim jimi k kam kde kdy kdyz ked keby kto kdo ktery ktera ktere kteri ktereho kteremu
kterem kterym kterou kterych kterymi ktory ktora ktore ktori ktoreho ktoremu ktorom ktorym ktoru ktorych
ktorymi ku lebo ma mi mu my na nam nas o od on ona oni ono ony pre pri pro s se si so ta tak take takze tam
te teda tedy ten ti tie to toho tom tomu tu ty u uz v vo vy z za zo ze ze teto tato tento toto tyto tieto
tuto tohto tomto tymto tej tou tim tym tech tych jej jejich ich svuj svoje svou sveho svym svych svoj svojho
svojou svojim mne mnou me moj muj moje moji meho mojho nas nase nasi naseho vase vas vasi
je jsou jsem jsi jsme jste byl byla bylo byli byly byt bude budou budu budes budeme budete bol bola bolo boli
som si sme ste su byt bych bys bychom byste bysme
ma mam mas mame mate maji mit mal mala malo mali mat maju
lze da sa muze muzes muzeme muzete muzou mohou mohl mohla mohli moze mozes mozeme mozete mozu mohol
musi musis musime musite museji musia musel musela museli mus smi smis smime smite smeji smie
chce chces chceme chcete chteji chcu chcem chceli
tez take tiez rovnez jeste este teprve potom pak nasledne
treba potreba potrebne nutne nutno mozne mozno
cely cela cele celou celeho celkem prave proste zhruba priblizne
proc preco kolik kolko
podle podla dle vcetne spolu
ve ke ze zo so vo ku nim ni nimi nou neho nemu nich nej nu ju je jimi jej ich im vam vas vami
cca asi zhruba priblizne priblizne okolo kolem about approximately around roughly circa approx
protoze pretoze proto preto takze because therefore hence diky vdaka thanks
nejprve najprv nejdriv najskor first firstly nakonec nakoniec finally lastly next dale dalej navic navyse
moreover furthermore additionally
bud either
znamena znamenaji znamenat means mean meaning
jehoz jejiz jejichz ktoreho ktorej ktorych moznost moznosti moznostou
""".split()

_FREE_EN = """
a an the this that these those there here it its it's they them their theirs he him his she her hers we us our
ours you your yours i me my mine one's oneself itself themselves himself herself ourselves yourself yourselves
is are was were be been being am has have had having do does did doing done will would shall should can could
may might must need needs ought
of in on at to for from by with into onto about as via per through within upon off out up down
and or but so if then also too either whether while because since though although yet thus hence therefore
what which who whom whose where when how why
some any such own same other another
just really actually simply basically
get gets got make makes made take takes took taken go goes went put puts keep keeps kept give gives gave let lets
use uses used using very quite rather
""".split()

# The words an answer points at its source with: they add no fact (the nouns among them only beside a cue).
_FRAME_PREFIXES = ("poznam", "pasaz", "zdroj", "autor", "passag", "source", "author", "recept", "pokyn", "lekc",
                   "navod")
_FREE_PREFIXES = ("potreb",)  # potřebuješ, potrebujete: "need" (free in English too)
_FRAME = """
uvadi uvadza uvedeno uvedene pise pisu psano napsano napisane rika hovori zminuje spomina tvrdi stoji
according says say said states stated mentions mention mentioned writes wrote
viz vid pozri pozrite see also
tells told explains explained describes described adds added reads recommends recommended
suggests suggested warns warned admits admitted quotes quoted
upozornuje upozornuji
vysvetluje popisuje dodava pridava radi zni znie doporucuje odporuca pripousti pripusta varuje upozornuje
pravidlo pravidla pravidlach pravidel myslenka myslienka duvod dovod materialy materialu
materialoch glossary cheatsheet tahak tip tipy
rule rules idea point reason
""".split()
_FRAME_NOUNS = frozenset("""
note notes page pages lesson lessons recipe recipes guide instructions wiki cheatsheet glossary material materials
rada rady
materialy materialu materialoch tahak text textu slide slides slajd slajde slajdu slajdoch lecture book
prednaska prednasky prednaske
""".split())

# Meaning-bearing words search ignores but a claim hangs on: they stay content words.
LIMITS = frozenset("""
jen len pouze iba only just all every each always vsechny vsechno vsichni vse kazdy kazda kazde kazdou vsetky
vsetko vzdy before after above below over under between except instead more less most least than
pred po nad pod mezi medzi krome okrem misto namiesto vic vice viac mene menej nejvic najviac
""".split()) - {"po"}  # "po" is as often "along", "for" (po dobu) as "after"

FREE = (frozenset(_FREE_CS_SK) | frozenset(_FREE_EN) | frozenset(_FRAME)) - LIMITS


# What makes a word naming a source a frame ("podle poznámek", "the note says") rather than a fact ("vlastné
# poznámky" are an allowed aid).
FRAME_CUES = frozenset("""
podle podla dle according in v ve z zo from of na says say said states mentions writes wrote tells explains
describes adds reads quotes quoted uvadi uvadza pise hovori rika zminuje spomina tvrdi stoji zni znie vysvetluje
popisuje dodava doporucuje odporuca pripousti varuje upozornuje upozornuji
""".split())


# Free words whose folded form a content word shares: být "to be" and byt "flat", Slovak mala "had" and
# malá "small", mají "have" and máji "May", radí "advises" and řádí "rages". Not tím "by that" and Slovak
# tím "team": spelled alike, no spelling tells them apart. In a text written with diacritics only these spellings are
# free; typed without them, the word stays free (it may be either).
FREE_SPELLINGS = {
    "byt": frozenset({"být", "byť"}), "byli": frozenset({"byli"}), "boli": frozenset({"boli"}),
    "mala": frozenset({"mala"}), "malo": frozenset({"malo"}), "mali": frozenset({"mali"}),
    "prave": frozenset({"právě", "práve"}), "proste": frozenset({"prostě"}), "cela": frozenset({"celá"}),
    "cele": frozenset({"celé"}), "mate": frozenset({"máte"}), "maji": frozenset({"mají"}),
    "mame": frozenset({"máme"}), "muze": frozenset({"může"}), "tech": frozenset({"těch"}),
    "radi": frozenset({"radí", "rádi", "radi"}),
}


def free_as_written(folded: str, written: str) -> bool:
    """Is ``written`` (a word of a text with diacritics) spelled as the free word its folded form names, not
    as a content word that folds alike (``byt``, ``malá``)?"""
    spellings = FREE_SPELLINGS.get(folded)
    return spellings is None or unicodedata.normalize("NFC", written.lower()) in spellings


# Prepositions of direction, where from and where to: a word a claim says with one and the passage only with
# the other is the way turned round ("went to Brno" from "odjel z Brna"). "na", "v", "on", "in" say either.
FROM = frozenset("z ze zo od ode from since".split())
TO = frozenset("do k ke ku to into onto towards toward until till".split())


def is_free(folded: str) -> bool:
    """Is the folded word one that carries no fact (a function word, a word pointing at the source)? A noun
    naming the source (:func:`is_frame_noun`) is free only beside a cue, which :mod:`server.claims` checks."""
    return folded in FREE or folded.startswith(_FREE_PREFIXES) or len(folded) == 1 and folded.isalpha()


def is_frame_noun(folded: str) -> bool:
    """Does the folded word name the source an answer quotes (poznámka, recept, lekce, note, passage…)?"""
    return folded.startswith(_FRAME_PREFIXES) or folded in _FRAME_NOUNS


# Words a claim may write for one another: the limits of a quantity ("at most" and "at least" are read as
# "max" and "min" by server.claims).
_SAME_GROUPS = (
    "max maximum maximalne maximalni maximalny maximalna nanejvys najviac nejvyse nejvic",
    "min minimum minimalne minimalni minimalny minimalna aspon alespon najmenej nejmene nejmin",
    # units written out and abbreviated
    "min minuta minuty minut minutu minute minutes minuta minuty minut minutach",
    "h hod hodina hodiny hodin hodinu hour hours hodin hodine",
    "s sek sekunda sekundy sekund second seconds",
    "ms milisekunda milisekundy milisekund millisecond milliseconds",
    "g gram gramy gramu gramu gramov grams",
    "kg kilogram kilogramy kilogramu kilogramov kilograms kila kilo",
    "l litr litry litru litrov liter litre liters litres",
    "ml mililitr mililitry mililitru mililitrov milliliter millilitre milliliters millilitres",
    "km kilometr kilometry kilometru kilometrov kilometer kilometre kilometers kilometres",
    "cm centimetr centimetry centimetru centimetrov centimeter centimetre centimeters centimetres",
    "m metr metry metru metrov meter metre meters metres",
    "b bod body bodu bodov bodu bodov point points",
    # abbreviations written out
    "napr napriklad napriklad",
    "tzv takzvany takzvana takzvane takzvaneho",
    "tj tedy teda",
    "atd atd etc",
)
SAME: dict[str, frozenset[int]] = {}
for _index, _group in enumerate(_SAME_GROUPS):
    for _word in _group.split():
        SAME[_word] = SAME.get(_word, frozenset()) | {_index}


# --- negation -------------------------------------------------------------------------------------------

NEGATORS_CS_SK = frozenset("""
ne nie neni nejsou nejsem nejsi nejste nejsme nebyl nebyla nebylo nebyli nebyly nebude nebudou nebudu
nema nemaji nemam nemas nemate nemame nelze nesmi nesmeji nesmie nemusi nemusite nemusime nemuze nemuzes
nemuzou nemohou nemohl nemohla nemozu nemoze nemozes nemohol neda nejde nebol nebola nebolo neboli nebudu
nikdy nikdo nikto nic nic nikde nijak zadny zadna zadne zadneho zadnou zadnym zadnych zadnem ziadny ziadna
ziadne ziadneho ziadnu ziadnym ziadnych ziadnom bez ani
""".split())
NEGATORS_EN = frozenset("""
not no never none nobody nothing nowhere neither nor without cannot cant dont doesnt didnt isnt arent wasnt
werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt
""".split())
# "no" is a Czech and Slovak filler ("no, …"; Slovak "but"): a negator only in English text.
NEGATORS = NEGATORS_CS_SK | NEGATORS_EN


# Czech and Slovak words that begin with "ne" and negate nothing (nechat, nějaký, někdo, nebo, neděle…).
_NOT_NEGATED = ("nej", "nech", "nebo", "nebe", "nez", "neja", "nek", "neco", "nedel", "nemoc", "nerez", "nerv",
                "neutr", "neuron", "net", "new", "nest", "nesl", "nesou", "neses", "nesen", "nehet", "necas")


def looks_negated(folded: str) -> bool:
    """Does a Czech or Slovak word look like another word with the ne- of negation (nepoužívej, nemusíš)?"""
    return folded.startswith("ne") and len(folded) >= 6 and not folded.startswith(_NOT_NEGATED)


def is_negator(folded: str, english: bool) -> bool:
    """Does the folded word negate its clause, in a text that is (``english``) or is not English?"""
    if folded == "no":
        return english
    return folded in NEGATORS


# --- yes and no -------------------------------------------------------------------------------------------

YES_NO = frozenset("ano ano ne yes no nie jo".split())
YES_NO_OPENING = re.compile(r"^\s*(?:ano|áno|ne|nie|yes|no)\b\s*[,.:;!–—-]\s*", re.IGNORECASE)


# --- number words -----------------------------------------------------------------------------------------

_UNITS = {
    0: "nula nula zero",
    1: "jeden jedna jedno jednoho jedne jednomu jednom jednim jednou jednu jednym jednej jednych one",
    2: "dva dve dvou dvema dvoch dvom dvoma two",
    3: "tri trech trem tremi troch trom tromi three",
    4: "ctyri ctyr ctyrech ctyrem ctyrmi styri styroch styrom styrmi four",
    5: "pet peti pat piatich piatim piatimi five",
    6: "sest sesti siestich siestim six",
    7: "sedm sedmi sedem siedmich siedmim seven",
    8: "osm osmi osem osmich osmim eight",
    9: "devet devitu devat deviatich nine",
    10: "deset deseti desat desiatich ten",
    11: "jedenact jedenast eleven",
    12: "dvanact dvanast twelve",
    13: "trinact trinast thirteen",
    14: "ctrnact strnast fourteen",
    15: "patnact patnast fifteen",
    16: "sestnact sestnast sixteen",
    17: "sedmnact sedemnast seventeen",
    18: "osmnact osemnast eighteen",
    19: "devatenact devatnast nineteen",
    20: "dvacet dvadsat twenty",
    30: "tricet tridsat thirty",
    40: "ctyricet styridsat forty",
    50: "padesat patdesiat fifty",
    60: "sedesat sestdesiat sixty",
    70: "sedmdesat sedemdesiat seventy",
    80: "osmdesat osemdesiat eighty",
    90: "devadesat devatdesiat ninety",
    100: "sto sta ste set hundred",
    1000: "tisic tisice tisicu thousand",
    0.5: "pul pol half",
}
NUMBER_WORDS: dict[str, float] = {word: value for value, words in _UNITS.items() for word in words.split()}
MULTIPLIERS = {"sto": 100, "sta": 100, "ste": 100, "set": 100, "hundred": 100,
               "tisic": 1000, "tisice": 1000, "tisicu": 1000, "thousand": 1000}
# Words that are numbers in one language and something else in another: "ten" is Czech "that", "to" is no
# number anywhere, "jedno"/"jednou" (once) stay numbers. English-only readings apply to English text.
ENGLISH_ONLY_NUMBERS = frozenset({"ten", "one"})


def number_value(folded: str, english: bool) -> float | None:
    """The value of a number word (``pět`` → 5), or None; ``ten`` is ten only in English text."""
    if folded in ENGLISH_ONLY_NUMBERS and not english:
        return None
    if folded == "one" and english:
        return 1
    if folded.endswith("krat") and folded[:-4] in NUMBER_WORDS:  # pětkrát
        return NUMBER_WORDS[folded[:-4]]
    return NUMBER_WORDS.get(folded, _TIMES.get(folded))


_TIMES = {"twice": 2, "thrice": 3, "dvakrat": 2, "trikrat": 3, "styrikrat": 4,
          # collective numerals: pairs and sets (dvoje rukavice: two pairs of gloves)
          "jedny": 1, "dvoje": 2, "dvoji": 2, "troje": 3, "ctvery": 4, "patery": 5}


# --- English word forms -----------------------------------------------------------------------------------

IRREGULAR = {
    "was": "be", "were": "be", "been": "be", "had": "have", "did": "do", "done": "do", "made": "make",
    "took": "take", "taken": "take", "got": "get", "gotten": "get", "went": "go", "gone": "go", "found": "find",
    "left": "leave", "kept": "keep", "brought": "bring", "bought": "buy", "thought": "think", "told": "tell",
    "said": "say", "gave": "give", "given": "give", "came": "come", "ran": "run", "drank": "drink",
    "drunk": "drink", "ate": "eat", "eaten": "eat", "wrote": "write", "written": "write", "began": "begin",
    "begun": "begin", "chose": "choose", "chosen": "choose", "broke": "break", "broken": "break",
    "built": "build", "sent": "send", "spent": "spend", "held": "hold", "stood": "stand", "meant": "mean",
    "paid": "pay", "sold": "sell", "fell": "fall", "fallen": "fall", "felt": "feel", "grew": "grow",
    "grown": "grow", "knew": "know", "known": "know", "shown": "show", "saw": "see", "seen": "see",
    "lost": "lose", "met": "meet", "led": "lead", "read": "read", "ridden": "ride", "rode": "ride",
    "rose": "rise", "risen": "rise", "shook": "shake", "slept": "sleep", "spoke": "speak", "spoken": "speak",
    "stole": "steal", "stolen": "steal", "struck": "strike", "swam": "swim", "taught": "teach", "threw": "throw",
    "thrown": "throw", "understood": "understand", "woke": "wake", "wore": "wear", "worn": "wear", "won": "win",
    "children": "child", "people": "person", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth",
    "better": "good", "best": "good", "worse": "bad", "worst": "bad", "further": "far", "leaves": "leaf",
    "knives": "knife", "lives": "life", "halves": "half", "mice": "mouse", "data": "datum",
}


def english_lemmas(word: str) -> tuple[str, ...]:
    """Headwords an inflected English word may come from (``pulled`` → pull; ``cups`` → cup; ``stronger``
    → strong), the word itself first: what the dictionary is asked for."""
    found = [word]
    if word in IRREGULAR:
        found.append(IRREGULAR[word])
    rules = (("ies", "y"), ("ied", "y"), ("ves", "f"), ("sses", "ss"), ("es", ""), ("es", "e"), ("s", ""),
             ("ed", ""), ("ed", "e"), ("d", ""), ("ing", ""), ("ing", "e"), ("ier", "y"), ("iest", "y"),
             ("er", ""), ("er", "e"), ("est", ""), ("est", "e"), ("ily", "y"), ("ly", ""), ("ally", ""))
    for suffix, replacement in rules:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[:-len(suffix)] + replacement
            found.append(stem)
            if suffix in ("ed", "ing", "er", "est") and len(stem) >= 4 and stem[-1] == stem[-2]:
                found.append(stem[:-1])  # stopped → stop, bigger → big
    return tuple(dict.fromkeys(found))
